/**
 * Resolving an API key to the caller (user + account). DocuSeal reads `X-Auth-Token`
 * (reference/docuseal-behaviour.md §2); we also accept `Authorization: Bearer <key>`.
 */
import type { Db } from '../db/client.ts';
import type { Account, User } from '../generated/prisma/client.ts';
import { hashApiKey } from './api-keys.ts';

export interface Viewer {
  user: User;
  account: Account;
  apiKeyId: number;
}

/** `last_used_at` is written at most this often per key (milliseconds), to keep reads read-only. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** The API key carried by a request's headers, or undefined. Header names are case-insensitive. */
export function apiKeyFromHeaders(get: (name: string) => string | null | undefined): string | undefined {
  const direct = get('x-auth-token')?.trim();
  if (direct) return direct;
  const authorization = get('authorization')?.trim();
  const match = authorization ? /^Bearer\s+(.+)$/i.exec(authorization) : null;
  return match?.[1]?.trim() || undefined;
}

/**
 * Looks up the caller of an API key.
 * @returns the viewer, or null when the key is unknown, revoked, or its user or account is archived
 */
export async function authenticate(db: Db, token: string | undefined): Promise<Viewer | null> {
  if (!token || token.length > 512) return null;
  const key = await db.apiKey.findUnique({
    // One round trip: key, user and account joined in SQL.
    relationLoadStrategy: 'join',
    where: { tokenHash: hashApiKey(token) },
    select: { id: true, revokedAt: true, lastUsedAt: true, user: { include: { account: true } } },
  });
  if (!key || key.revokedAt || key.user.archivedAt || key.user.account.archivedAt) return null;
  const now = Date.now();
  if (!key.lastUsedAt || now - key.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    // Fire and forget: bookkeeping must not slow or fail the request.
    db.apiKey.update({ where: { id: key.id }, data: { lastUsedAt: new Date(now) } }).catch(() => undefined);
  }
  const { account, ...user } = key.user;
  return { user, account, apiKeyId: key.id };
}
