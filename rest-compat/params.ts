/**
 * Reading DocuSeal request parameters: query strings, path ids, booleans as Rails reads them.
 */
import type { z } from 'zod';
import { AppError } from '../src/errors.ts';
import { type InputShape, inputShape } from '../src/input-shape.ts';
import type { RestRequest } from './gateway.ts';

/** A query parameter as one string (the first when repeated). */
export function queryString(request: RestRequest, name: string): string | undefined {
  const value = request.query[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Rails' truthy strings ("true", "1", "yes", "on", case-insensitive). */
export function isTruthy(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return value === 1;
  return typeof value === 'string' && /^(true|1|yes|on|t)$/i.test(value.trim());
}

/**
 * DocuSeal's `permanently` of DELETE /templates/{id} and /submissions/{id}: only `true` or
 * "true" (`params[:permanently].in?(['true', true])`, app/controllers/api/templates_controller.rb
 * and submissions_controller.rb), from a JSON body or the query string, the body's winning as in
 * Rails' params. Anything else ("1", "yes") archives.
 */
export function permanentlyParam(request: RestRequest): boolean {
  const body = request.body;
  const value =
    typeof body === 'object' && body !== null && !Array.isArray(body) && 'permanently' in body
      ? (body as Record<string, unknown>).permanently
      : queryString(request, 'permanently');
  return value === true || value === 'true';
}

/**
 * A path id as an integer; anything else is an unknown record (DocuSeal answers 404).
 * @param model the record's name in the message ("Template")
 */
export function pathId(request: RestRequest, model: string, name = 'id'): number {
  const raw = request.params[name] ?? '';
  if (!/^\d{1,10}$/.test(raw) || Number(raw) > 2_147_483_647)
    throw new AppError('NOT_FOUND', `${model} ${raw} not found`);
  return Number(raw);
}

/**
 * An optional integer query parameter (limit, after, before).
 * @throws AppError VALIDATION naming the parameter
 */
export function queryInt(request: RestRequest, name: string): number | undefined {
  const raw = queryString(request, name);
  if (raw === undefined || raw === '') return undefined;
  if (!/^-?\d{1,10}$/.test(raw.trim())) throw new AppError('VALIDATION', `${name} must be an integer.`);
  return Number(raw.trim());
}

/** The JSON body as an object ({} when absent); 422 for arrays or scalars. */
export function bodyObject(request: RestRequest): Record<string, unknown> {
  const body = request.body ?? {};
  if (typeof body !== 'object' || Array.isArray(body))
    throw new AppError('VALIDATION', 'The request body must be a JSON object.');
  return body as Record<string, unknown>;
}

/**
 * An optional array of strings (`roles`); undefined when absent.
 * @throws AppError VALIDATION "<name> must be an array of strings."
 */
export function optionalStringList(value: unknown, name: string): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string'))
    throw new AppError('VALIDATION', `${name} must be an array of strings.`);
  return value as string[];
}

/**
 * DocuSeal's other names for keys (the earlier shape, interface spec "Versioning"; DocuSeal's
 * params): read when the key itself is absent.
 */
const LEGACY_KEYS: Readonly<Record<string, string>> = {
  external_id: 'application_key',
  default_value: 'value',
  order: 'submitters_order',
};

/**
 * A DocuSeal body read against an input's one definition (a zod object in DocuSeal's keys,
 * src/input-shape.ts): the GraphQL variables of its derived input type, keys in camelCase. Only
 * the keys the input has are read (LEGACY_KEYS as well); nulls are absent. Values are coerced as
 * Rails reads params: a number is a String, "true"/"1"/"yes"/"on" are true, an Integer may be a
 * numeric string; a date without an offset is UTC; an empty object is absent. Rules about the
 * contents are the service's.
 * @param options.where where the object is, for messages ("submitters[0]"); none at the top
 * @param options.omit keys the route reads itself; options.only: the keys to read; options.keys:
 *   'graphql' (default: camelCase variables) or 'docuseal' (the definition's keys, for a service call)
 * @throws AppError VALIDATION with DocuSeal's type messages: "email must be a String in
 *   `submitters[0]`." ("… must be a String" at the top), "… must be a Object", "… must be a Array",
 *   "… must be a Integer", "0 must be a Object in `submitters`.", "expire_at is invalid"
 */
export function restInput(
  schema: z.ZodObject,
  body: Record<string, unknown>,
  options: { where?: string; omit?: readonly string[]; only?: readonly string[]; keys?: KeyForm } = {},
): Record<string, unknown> {
  const shape = inputShape(schema);
  if (shape.kind !== 'object') throw new Error('restInput: not an object schema');
  return readObject(shape, body, options.where, options.keys ?? 'graphql', options);
}

/**
 * One value of a DocuSeal body read against its definition (as restInput), e.g. a list of
 * submitters.
 * @param key its key, for messages; where: the object it is in, if not the top
 */
export function restValue(
  schema: z.ZodType,
  value: unknown,
  key: string,
  where?: string,
  keys: KeyForm = 'graphql',
): unknown {
  return readValue(inputShape(schema), value, key, where, keys);
}

/**
 * The keys restInput answers with: GraphQL's camelCase (variables of the derived input type) or
 * the definition's own DocuSeal keys (for a route that calls the service directly).
 */
export type KeyForm = 'graphql' | 'docuseal';

type ObjectShape = Extract<InputShape, { kind: 'object' }>;

function readObject(
  shape: ObjectShape,
  raw: Record<string, unknown>,
  where: string | undefined,
  keys: KeyForm,
  options: { omit?: readonly string[]; only?: readonly string[] } = {},
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of shape.fields) {
    if (options.omit?.includes(field.key) || (options.only && !options.only.includes(field.key))) continue;
    let value = raw[field.key];
    const legacy = LEGACY_KEYS[field.key];
    if ((value === undefined || value === null) && legacy !== undefined) value = raw[legacy];
    const read = readValue(field.shape, value, field.key, where, keys);
    if (read !== undefined) out[keys === 'graphql' ? field.camelKey : field.key] = read;
  }
  return out;
}

function readValue(shape: InputShape, value: unknown, key: string, where: string | undefined, keys: KeyForm): unknown {
  if (value === undefined || value === null) return undefined;
  const at = where === undefined ? '' : ` in \`${where}\`.`;
  const path = where === undefined ? key : `${where}.${key}`;
  switch (shape.kind) {
    case 'string':
      if (typeof value === 'number') return String(value);
      if (typeof value !== 'string') throw new AppError('VALIDATION', `${key} must be a String${at}`);
      return value;
    case 'boolean':
      return isTruthy(value);
    case 'int':
    case 'float': {
      const number = Number(value);
      if (typeof value === 'object' || (shape.kind === 'int' ? !Number.isInteger(number) : Number.isNaN(number)))
        throw new AppError('VALIDATION', `${key} must be a ${shape.kind === 'int' ? 'Integer' : 'Float'}${at}`);
      return number;
    }
    case 'date':
      return restDateTime(value, key);
    case 'json':
      if (!isPlainObject(value)) throw new AppError('VALIDATION', `${key} must be a Object${at}`);
      return value;
    case 'unknown':
      return value;
    case 'object': {
      if (!isPlainObject(value)) throw new AppError('VALIDATION', `${key} must be a Object${at}`);
      const read = readObject(shape, value, path, keys);
      return Object.keys(read).length === 0 ? undefined : read;
    }
    case 'list':
      if (!Array.isArray(value)) throw new AppError('VALIDATION', `${key} must be a Array${at}`);
      return value.map((item, i) => {
        if (shape.item.kind === 'object') {
          if (!isPlainObject(item)) throw new AppError('VALIDATION', `${i} must be a Object in \`${path}\`.`);
          return readObject(shape.item, item, `${path}[${i}]`, keys);
        }
        return readValue(shape.item, item, String(i), path, keys);
      });
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A DocuSeal date-time as ISO 8601: any parseable form, no offset = UTC (reference §7.5); a
 * trailing zone name `UTC` (the OpenAPI examples' "2024-09-01 12:00:00 UTC", which Rails' parser
 * reads) is UTC too; "" is absent.
 * @throws AppError VALIDATION "<key> is invalid"
 */
export function restDateTime(value: unknown, key: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const raw = String(value)
    .trim()
    .replace(/\s*UTC$/i, '');
  const date = new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(raw) || /^\d+$/.test(raw) ? raw : `${raw.replace(' ', 'T')}Z`);
  if (Number.isNaN(date.getTime())) throw new AppError('VALIDATION', `${key} is invalid`);
  return date.toISOString();
}
