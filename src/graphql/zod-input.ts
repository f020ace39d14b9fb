/**
 * GraphQL input types derived from the domain's zod input schemas (src/input-shape.ts): one
 * definition per input, in DocuSeal's keys; GraphQL shows the camelCase of each key, with the
 * description the schema gives it (`.meta({description})`). An optional key is a nullable input
 * field; a required one is non-null. Strings, booleans, integers and numbers are String, Boolean,
 * Int and Float; `z.date()` is DateTime; records and unknown values are JSON; nested objects are
 * the input types registered for them here (in the order they are needed: nested first).
 */
import type { InputObjectRef } from '@pothos/core';
import type { z } from 'zod';
import { fromCamelInput, type InputShape, inputShape } from '../input-shape.ts';
import { builder } from './builder.ts';

type AnyInputRef = InputObjectRef<any, any>;

const refs = new Map<z.ZodObject, AnyInputRef>();

const SCALARS = {
  string: 'String',
  boolean: 'Boolean',
  int: 'Int',
  float: 'Float',
  date: 'DateTime',
  json: 'JSON',
  unknown: 'JSON',
} as const;

/**
 * Registers the GraphQL input type `name` for a zod object schema.
 * @param options.description the type's description (else the schema's own meta description)
 * @throws Error at start when a nested object has no input type registered yet
 */
export function zodInputType(name: string, schema: z.ZodObject, options: { description?: string } = {}): AnyInputRef {
  const shape = inputShape(schema);
  if (shape.kind !== 'object') throw new Error(`zodInputType ${name}: not an object schema`);
  const description = options.description ?? shape.description;
  const ref = builder.inputType(name, {
    ...(description !== undefined ? { description } : {}),
    fields: (t) =>
      Object.fromEntries(
        shape.fields.map((field) => [
          field.camelKey,
          t.field({
            type: graphqlType(field.shape, `${name}.${field.camelKey}`) as never,
            required: field.required,
            ...(field.description !== undefined ? { description: field.description } : {}),
          }),
        ]),
      ),
  });
  refs.set(schema, ref);
  return ref;
}

function graphqlType(shape: InputShape, where: string): unknown {
  if (shape.kind === 'list') return [graphqlType(shape.item, where)];
  if (shape.kind === 'object') {
    const ref = refs.get(shape.schema);
    if (!ref) throw new Error(`zodInputType: ${where} is an object with no input type registered before it`);
    return ref;
  }
  return SCALARS[shape.kind];
}

/**
 * A GraphQL input value of a derived type in the schema's DocuSeal keys, nulls dropped, ready for
 * parseInput (src/accounts/api-keys.ts) with the same schema.
 */
export function fromGraphQLInput<S extends z.ZodType>(schema: S, value: unknown): z.input<S> {
  return fromCamelInput(schema, value) as z.input<S>;
}
