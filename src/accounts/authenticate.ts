/**
 * Resolving an API key to the caller (user + account). DocuSeal reads `X-Auth-Token`
 * (reference/docuseal-behaviour.md §2); we also accept `Authorization: Bearer <key>`.
 */
import type { Db } from '../db/client.ts';
import { findApiKeyByHash, touchApiKey } from '../db/queries/api-keys.ts';
import type { Account, User } from '../generated/prisma/client.ts';
import { hashApiKey } from './api-keys.ts';
import type { ApiKeyScope, KeyFolders } from './key-scopes.ts';

export interface Viewer {
  user: User;
  account: Account;
  apiKeyId: number;
  /** The key's scopes (src/accounts/key-scopes.ts): `read`, or `read` and `write`. */
  scopes: readonly ApiKeyScope[];
  /** The template folders the key is limited to, their subfolders included; null: every folder. */
  folders: KeyFolders | null;
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
  const row = await findApiKeyByHash(db, hashApiKey(token));
  if (!row) return null;
  const now = Date.now();
  const lastUsedAt: Date | null = row.key_last_used_at;
  if (!lastUsedAt || now - lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    // Fire and forget: bookkeeping must not slow or fail the request.
    touchApiKey(db, row.key_id);
  }
  return {
    ...accountAndUserFromRow(row),
    apiKeyId: row.key_id,
    scopes: row.key_scopes,
    folders: row.key_folder_tree === null ? null : { rootIds: row.key_folder_ids, ids: row.key_folder_tree },
  };
}

/**
 * The account and user of a row that selects them as `a_*` and `u_*` columns (id, uuid, name,
 * timezone, locale, testing, preferences, created_at, updated_at, submission_list_epoch of the account; id, uuid,
 * email, first_name, last_name, role, created_at, updated_at of the user), neither archived: the shape
 * AUTHENTICATE (src/db/queries/api-keys.ts) reads, shared with the webhooks' per-account viewer
 * (src/webhooks/payloads.ts).
 */
export function accountAndUserFromRow(row: Record<string, any>): { account: Account; user: User } {
  const account: Account = {
    id: row.a_id,
    uuid: row.a_uuid,
    name: row.a_name,
    timezone: row.a_timezone,
    locale: row.a_locale,
    testing: row.a_testing,
    preferences: row.a_preferences,
    createdAt: row.a_created_at,
    updatedAt: row.a_updated_at,
    archivedAt: null,
    submissionListEpoch: BigInt(row.a_submission_list_epoch),
  };
  const user: User = {
    id: row.u_id,
    uuid: row.u_uuid,
    accountId: row.a_id,
    email: row.u_email,
    firstName: row.u_first_name,
    lastName: row.u_last_name,
    role: row.u_role,
    createdAt: row.u_created_at,
    updatedAt: row.u_updated_at,
    archivedAt: null,
  };
  return { account, user };
}
