/**
 * The shape of an input defined once as a zod object in DocuSeal's (snake_case) keys, read by the
 * adapters that derive their forms from it (DESIGN.md "Each input is defined once"):
 * - src/graphql/zod-input.ts makes the Pothos input type (camelCase keys, descriptions from the
 *   schema's `.meta({description})`) and turns GraphQL's input back into DocuSeal keys;
 * - rest-compat/params.ts reads a DocuSeal REST body against it (Rails' coercions and DocuSeal's
 *   type messages) into the GraphQL variables.
 *
 * A key marked `.meta({ internal: true })` is accepted by the domain schema but is not part of the
 * request surface (neither GraphQL nor REST exposes it).
 */
import type { z } from 'zod';

/** One input node: a scalar, a JSON value, a list or an object of keyed fields. */
export type InputShape =
  | { kind: 'string' | 'boolean' | 'int' | 'float' | 'date' | 'json' | 'unknown' }
  | { kind: 'list'; item: InputShape }
  | { kind: 'object'; schema: z.ZodObject; description?: string; fields: InputShapeField[] };

/** A key of an object input: its DocuSeal (snake_case) key and its GraphQL (camelCase) key. */
export interface InputShapeField {
  key: string;
  camelKey: string;
  required: boolean;
  description?: string;
  shape: InputShape;
}

/** "external_id" → "externalId" (GraphQL's form of a DocuSeal key). */
export function camelKey(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_all, c: string) => c.toUpperCase());
}

/** "externalId" → "external_id" (DocuSeal's form of a GraphQL key); keys that are not camelCase words stay. */
export function snakeKey(key: string): string {
  return key.replace(
    /^([a-z]+)((?:[A-Z][a-z]+)+)$/,
    (_all, head: string, tail: string) => `${head}${tail.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`,
  );
}

const shapes = new WeakMap<z.ZodType, InputShape>();

/**
 * The shape of a zod input schema (cached per schema object). Wrappers (optional, nullable,
 * default, transforms) are looked through; a record is JSON.
 * @throws Error for a zod type no adapter can express (a union of objects, …) — at start, when the schema is derived
 */
export function inputShape(schema: z.ZodType): InputShape {
  const cached = shapes.get(schema);
  if (cached) return cached;
  const shape = readShape(schema);
  shapes.set(schema, shape);
  return shape;
}

/** The meta of a schema and of the wrappers around it (outermost wins). */
function metaOf(schema: z.ZodType): { description?: string; internal?: boolean } {
  const found: { description?: string; internal?: boolean } = {};
  let current: z.ZodType | undefined = schema;
  while (current) {
    const meta = current.meta() as { description?: string; internal?: boolean } | undefined;
    // The outermost meta that names a description wins (`description: undefined` removes the inner one).
    if (meta && 'description' in meta && !('description' in found)) found.description = meta.description;
    if (meta?.internal !== undefined && found.internal === undefined) found.internal = meta.internal;
    current = innerOf(current);
  }
  return found;
}

function innerOf(schema: z.ZodType): z.ZodType | undefined {
  const def = schema.def as { type: string; innerType?: z.ZodType; in?: z.ZodType };
  if (def.type === 'optional' || def.type === 'nullable' || def.type === 'default' || def.type === 'prefault')
    return def.innerType;
  if (def.type === 'pipe') return def.in;
  return undefined;
}

function isOptional(schema: z.ZodType): boolean {
  return schema.safeParse(undefined).success;
}

function readShape(schema: z.ZodType): InputShape {
  let core: z.ZodType = schema;
  for (let inner = innerOf(core); inner; inner = innerOf(core)) core = inner;
  switch (core.def.type) {
    case 'string':
    case 'enum':
      return { kind: 'string' };
    case 'boolean':
      return { kind: 'boolean' };
    case 'number':
      return { kind: (core as z.ZodNumber).isInt ? 'int' : 'float' };
    case 'date':
      return { kind: 'date' };
    case 'record':
      return { kind: 'json' };
    case 'union':
      // Strings or numbers (read as their text, e.g. a field's options): a string; any other mix is JSON.
      return (core as z.ZodUnion<z.ZodType[]>).options.every((o) =>
        ['string', 'int', 'float'].includes(readShape(o).kind),
      )
        ? { kind: 'string' }
        : { kind: 'unknown' };
    case 'unknown':
    case 'any':
      return { kind: 'unknown' };
    case 'array':
      return { kind: 'list', item: inputShape((core as z.ZodArray<z.ZodType>).element) };
    case 'object': {
      const object = core as z.ZodObject;
      const fields: InputShapeField[] = [];
      for (const [key, field] of Object.entries(object.shape as Record<string, z.ZodType>)) {
        const meta = metaOf(field);
        if (meta.internal) continue;
        fields.push({
          key,
          camelKey: camelKey(key),
          required: !isOptional(field),
          ...(meta.description !== undefined ? { description: meta.description } : {}),
          shape: inputShape(field),
        });
      }
      const description = metaOf(schema).description;
      return { kind: 'object', schema: object, ...(description !== undefined ? { description } : {}), fields };
    }
    default:
      throw new Error(`input-shape: zod type ${core.def.type} has no input form`);
  }
}

/**
 * A GraphQL input value (camelCase keys, nulls for absent) in the schema's DocuSeal keys, nulls
 * dropped; JSON values are left as they are. Not a validation: parse the result with the schema.
 */
export function fromCamelInput(schema: z.ZodType, value: unknown): unknown {
  return toSnake(inputShape(schema), value);
}

function toSnake(shape: InputShape, value: unknown): unknown {
  if (value === null || value === undefined) return undefined;
  if (shape.kind === 'list') return Array.isArray(value) ? value.map((v) => toSnake(shape.item, v)) : value;
  if (shape.kind !== 'object' || typeof value !== 'object' || Array.isArray(value)) return value;
  const source = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const field of shape.fields) {
    const v = source[field.camelKey];
    if (v !== null && v !== undefined) out[field.key] = toSnake(field.shape, v);
  }
  return out;
}
