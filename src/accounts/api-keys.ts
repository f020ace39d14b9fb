/**
 * API keys (DESIGN.md "Security model"): random tokens shown once, stored as the hex SHA-256 of
 * the token (as DocuSeal's access tokens, reference/docuseal-behaviour.md §2), with a short
 * visible prefix for listings.
 */
import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Db } from '../db/client.ts';
import { AppError } from '../errors.ts';

/** Tokens look like `sgt_` + 43 base64url characters (256 random bits). */
const TOKEN_PREFIX = 'sgt_';
/** Characters of the token kept in clear for listings ("sgt_Ab3dE"). */
const VISIBLE_CHARS = 9;

export interface ApiKeySummary {
  id: number;
  accountId: number;
  userId: number;
  name: string;
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

const summarySelect = {
  id: true,
  accountId: true,
  userId: true,
  name: true,
  prefix: true,
  createdAt: true,
  lastUsedAt: true,
  revokedAt: true,
} as const;

/** Lower-case hex SHA-256 of a token, the only form in which tokens are stored. */
export function hashApiKey(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A new random token with its stored hash and visible prefix. */
export function generateApiKey(): { token: string; tokenHash: string; prefix: string } {
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  return { token, tokenHash: hashApiKey(token), prefix: token.slice(0, VISIBLE_CHARS) };
}

export const CreateApiKeyInput = z.object({
  userId: z.number().int().positive(),
  name: z.string().trim().min(1).max(100).default('default'),
});

/**
 * Creates an API key for a user (of any account: callers authorise first).
 * @param db Prisma client or transaction client
 * @returns the summary and the token, which is never shown again
 * @throws AppError NOT_FOUND when the user does not exist or is archived; VALIDATION on bad input
 */
export async function createApiKey(
  db: Pick<Db, 'user' | 'apiKey'>,
  input: z.input<typeof CreateApiKeyInput>,
): Promise<{ apiKey: ApiKeySummary; token: string }> {
  const { userId, name } = parseInput(CreateApiKeyInput, input);
  const user = await db.user.findUnique({ where: { id: userId }, select: { id: true, accountId: true, archivedAt: true } });
  if (!user || user.archivedAt) throw new AppError('NOT_FOUND', `User ${userId} not found`);
  const { token, tokenHash, prefix } = generateApiKey();
  const apiKey = await db.apiKey.create({
    data: { accountId: user.accountId, userId: user.id, name, prefix, tokenHash },
    select: summarySelect,
  });
  return { apiKey, token };
}

/**
 * Revokes a key; later requests with it get 401. Revoking twice keeps the first revocation time.
 * @param options.accountId when given, the key must belong to that account (else NOT_FOUND)
 * @throws AppError NOT_FOUND when no such key
 */
export async function revokeApiKey(db: Pick<Db, 'apiKey'>, options: { keyId: number; accountId?: number }): Promise<ApiKeySummary> {
  const key = await db.apiKey.findFirst({
    where: { id: options.keyId, ...(options.accountId !== undefined ? { accountId: options.accountId } : {}) },
    select: summarySelect,
  });
  if (!key) throw new AppError('NOT_FOUND', `API key ${options.keyId} not found`);
  if (key.revokedAt) return key;
  return db.apiKey.update({ where: { id: key.id }, data: { revokedAt: new Date() }, select: summarySelect });
}

/** Every key of an account, oldest first, revoked ones included. */
export function listApiKeys(db: Pick<Db, 'apiKey'>, options: { accountId: number }): Promise<ApiKeySummary[]> {
  return db.apiKey.findMany({ where: { accountId: options.accountId }, orderBy: { id: 'asc' }, select: summarySelect });
}

/**
 * Parses input with a zod schema; failures become AppError VALIDATION naming the first bad path
 * in DocuSeal's wording ("<message> in `<path>`.").
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const where = issue.path.length ? ` in \`${issue.path.join('.')}\`` : '';
  throw new AppError('VALIDATION', `${issue.message}${where}.`, { details: { path: issue.path } });
}
