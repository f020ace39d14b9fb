/**
 * The Pothos schema builder: plugins and scalars only. Types live in src/graphql/schema/*.ts.
 */
import SchemaBuilder from '@pothos/core';
import PrismaPlugin from '@pothos/plugin-prisma';
import { GraphQLError, Kind, valueFromASTUntyped } from 'graphql';
import type PrismaTypes from '../generated/pothos-prisma-types.ts';
import { getDatamodel } from '../generated/pothos-prisma-types.ts';
import type { GraphQLContext } from './context.ts';

export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  PrismaTypes: PrismaTypes;
  DefaultFieldNullability: false;
  Scalars: {
    DateTime: { Input: Date; Output: Date };
    JSON: { Input: unknown; Output: unknown };
  };
}>({
  plugins: [PrismaPlugin],
  defaultFieldNullability: false,
  prisma: {
    // One schema serves many databases (tests, instances): the client comes from the context.
    client: (ctx) => ctx.db,
    dmmf: getDatamodel(),
    exposeDescriptions: false,
    filterConnectionTotalCount: true,
    onUnusedQuery: process.env.NODE_ENV === 'production' ? null : 'warn',
  },
});

/** ISO 8601 in UTC with milliseconds and `Z` (DESIGN.md "timestamps"). */
builder.scalarType('DateTime', {
  description: 'A timestamp: ISO 8601 in UTC with milliseconds, e.g. 2026-11-21T15:54:27.000Z',
  serialize: (value) => (value instanceof Date ? value : new Date(value as string)).toISOString(),
  parseValue: (value) => parseDate(value),
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.STRING) throw new GraphQLError('DateTime must be a string');
    return parseDate(ast.value);
  },
});

function parseDate(value: unknown): Date {
  const date = typeof value === 'string' ? new Date(value) : new Date(Number.NaN);
  if (Number.isNaN(date.getTime())) throw new GraphQLError('DateTime must be an ISO 8601 string');
  return date;
}

/** Free-form JSON (preferences, metadata, values). */
builder.scalarType('JSON', {
  description: 'Any JSON value.',
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: (ast) => valueFromASTUntyped(ast),
});

builder.queryType({});
builder.mutationType({});
