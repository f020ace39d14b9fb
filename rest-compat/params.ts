/**
 * Reading DocuSeal request parameters: query strings, path ids, booleans as Rails reads them.
 */
import { AppError } from '../src/errors.ts';
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
