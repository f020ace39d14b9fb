/**
 * Cursor pagination for every list (DESIGN.md "list order and cursors"): ascending by id;
 * `after=X` → ids > X, `before=X` → ids < X; `limit` default 10, at most 100;
 * `pagination = {count: items on this page, next: last id on the page (null when empty), prev: first id}`.
 * (DocuSeal itself lists newest first with the cursors inverted: docs/compatibility.md.)
 */
import { z } from 'zod';

export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;

/** `limit`, `after`, `before` as the REST query gives them (strings) or GraphQL (numbers). */
export const PageArgs = z.object({
  limit: z.coerce.number().int('limit must be an integer').min(1, 'limit must be at least 1').optional(),
  after: z.coerce.number().int('after must be an integer').optional(),
  before: z.coerce.number().int('before must be an integer').optional(),
});
export type PageArgs = z.infer<typeof PageArgs>;

export interface Pagination {
  count: number;
  next: number | null;
  prev: number | null;
}

/** The effective page size: default 10, capped at 100 (as DocuSeal). */
export function pageSize(args: Pick<PageArgs, 'limit'>): number {
  return Math.min(args.limit ?? DEFAULT_LIMIT, MAX_LIMIT);
}

/** The Prisma `where` on `id` for the cursors, or undefined when there are none. */
export function idCursorWhere(args: Pick<PageArgs, 'after' | 'before'>): { gt?: number; lt?: number } | undefined {
  if (args.after === undefined && args.before === undefined) return undefined;
  return {
    ...(args.after !== undefined ? { gt: args.after } : {}),
    ...(args.before !== undefined ? { lt: args.before } : {}),
  };
}

/** The pagination object of a page of items sorted by ascending id. */
export function paginationOf(items: { id: number }[]): Pagination {
  return { count: items.length, next: items.at(-1)?.id ?? null, prev: items[0]?.id ?? null };
}
