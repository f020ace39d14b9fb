/**
 * API keys (DESIGN.md "Security model"): random tokens shown once, stored as the hex SHA-256 of
 * the token (as DocuSeal's access tokens, reference/docuseal-behaviour.md §2), with a short
 * visible prefix for listings.
 */
import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Db } from '../db/client.ts';
import { AppError } from '../errors.ts';
import { formatPath, limitMessage, MAX_ITEMS, MAX_LENGTH } from '../limits.ts';
import { API_KEY_SCOPES, type ApiKeyScope, type KeyFolders, keyScopes, keyWithin } from './key-scopes.ts';

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
  /** `read`, or `read` and `write` (src/accounts/key-scopes.ts). */
  scopes: string[];
  /** The template folders the key is limited to (their subfolders too), in the order given; [] for every folder. */
  folderIds: number[];
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
  scopes: true,
  folderIds: true,
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

/**
 * `scopes` of a create request: `read` and/or `write` (src/accounts/key-scopes.ts); absent means
 * both, an empty list is refused (it would not say which).
 */
export const ApiKeyScopes = z
  .array(z.enum(API_KEY_SCOPES, { error: `scopes must be ${API_KEY_SCOPES.join(' or ')}` }))
  .min(1, { error: `scopes must name ${API_KEY_SCOPES.join(' and/or ')}` })
  .max(API_KEY_SCOPES.length * 2);

export const CreateApiKeyInput = z.object({
  userId: z.number().int().positive(),
  name: z.string().trim().min(1).max(MAX_LENGTH.name).default('default'),
  scopes: ApiKeyScopes.optional(),
  /** Ids of the account's folders (src/templates/key-folders.ts finds them by name); none: every folder. */
  folderIds: z.array(z.number().int().positive()).max(MAX_ITEMS.apiKeyFolders).optional(),
});

/**
 * Creates an API key for a user (of any account: callers authorise first), with its scopes (both
 * when none is given; `write` brings `read`) and the folders it is limited to (none: every folder).
 * @param db Prisma client or transaction client
 * @param options.within the creating key: the new key may reach no further (keyWithin); without
 *   it (the CLI, account creation) any key may be made
 * @returns the summary and the token, which is never shown again
 * @throws AppError NOT_FOUND when the user does not exist or is archived; VALIDATION on bad input;
 *   FORBIDDEN naming the scope (or `folders`) the creating key lacks
 */
export async function createApiKey(
  db: Pick<Db, 'user' | 'apiKey'>,
  input: z.input<typeof CreateApiKeyInput>,
  options: { within?: { scopes: readonly string[]; folders: KeyFolders | null } } = {},
): Promise<{ apiKey: ApiKeySummary; token: string }> {
  const { userId, name, ...limits } = parseInput(CreateApiKeyInput, input);
  const scopes = keyScopes(limits.scopes);
  const folderIds = [...new Set(limits.folderIds ?? [])];
  if (options.within) checkWithin({ scopes, folderIds }, options.within);
  const user = await db.user.findUnique({
    where: { id: userId },
    select: { id: true, accountId: true, archivedAt: true },
  });
  if (!user || user.archivedAt) throw new AppError('NOT_FOUND', `User ${userId} not found`);
  const { token, tokenHash, prefix } = generateApiKey();
  const apiKey = await db.apiKey.create({
    data: { accountId: user.accountId, userId: user.id, name, prefix, tokenHash, scopes, folderIds },
    select: summarySelect,
  });
  return { apiKey, token };
}

/**
 * Refuses a key that would reach further than `caller` (keyWithin).
 * @throws AppError FORBIDDEN naming the scope the caller lacks, or `folders`
 */
function checkWithin(
  key: { scopes: readonly ApiKeyScope[]; folderIds: readonly number[] },
  caller: { scopes: readonly string[]; folders: KeyFolders | null },
): void {
  if (keyWithin(key, caller)) return;
  const scope = key.scopes.find((s) => !caller.scopes.includes(s));
  if (scope)
    throw new AppError('FORBIDDEN', `Not authorized: this API key lacks the "${scope}" scope it would give`, {
      details: { scope },
    });
  throw new AppError(
    'FORBIDDEN',
    'Not authorized: this API key is limited to template folders; a key it makes or revokes must be limited to ' +
      'folders within them',
    { details: { scope: 'folders' } },
  );
}

/**
 * Revokes a key; later requests with it get 401 (on every instance: key look-ups are not cached),
 * and every WebSocket and SSE stream opened with it closes on every instance within a second (the
 * database announces the commit: src/accounts/credential-sessions.ts). Revoking twice keeps the
 * first revocation time.
 * @param options.accountId when given, the key must belong to that account (else FORBIDDEN, as
 *   every record of another account: docs/security.md "Credentials, CORS and file URLs")
 * @param options.within the revoking key: a key limited to folders revokes only keys within it (keyWithin)
 * @throws AppError NOT_FOUND ("API key <id> not found") when no such key; FORBIDDEN
 */
export async function revokeApiKey(
  db: Pick<Db, 'apiKey'>,
  options: {
    keyId: number;
    accountId?: number;
    within?: { scopes: readonly string[]; folders: KeyFolders | null };
  },
): Promise<ApiKeySummary> {
  const key = await db.apiKey.findUnique({ where: { id: options.keyId }, select: summarySelect });
  if (!key) throw new AppError('NOT_FOUND', `API key ${options.keyId} not found`);
  if (options.accountId !== undefined && key.accountId !== options.accountId) throw new AppError('FORBIDDEN');
  if (options.within) checkWithin({ scopes: [], folderIds: key.folderIds }, options.within);
  const revoked = key.revokedAt
    ? key
    : await db.apiKey.update({ where: { id: key.id }, data: { revokedAt: new Date() }, select: summarySelect });
  return revoked;
}

/** Every key of an account, oldest first, revoked ones included. */
export function listApiKeys(db: Pick<Db, 'apiKey'>, options: { accountId: number }): Promise<ApiKeySummary[]> {
  return db.apiKey.findMany({ where: { accountId: options.accountId }, orderBy: { id: 'asc' }, select: summarySelect });
}

/**
 * Parses input with a zod schema; failures become AppError VALIDATION naming the first bad path
 * in DocuSeal's wording ("<message> in `<path>`."), or for a limit (src/limits.ts) "<path> is too
 * long (maximum is N characters)." with `details: {path, maximum}`.
 * @param options.at where the input sits in the request ("fields[2]", "submitters"): paths start there
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown, options: { at?: string } = {}): z.output<S> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const path = formatPath(issue.path, options.at);
  const limit = limitMessage(issue, path || 'input');
  if (limit) throw new AppError('VALIDATION', limit.message, { details: { path, maximum: limit.maximum } });
  const where = path ? ` in \`${path}\`` : '';
  throw new AppError('VALIDATION', `${issue.message}${where}.`, { details: { path } });
}
