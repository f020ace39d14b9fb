/**
 * Resolving an API key to the caller (user + account). DocuSeal reads `X-Auth-Token`
 * (reference/docuseal-behaviour.md §2); we also accept `Authorization: Bearer <key>`.
 */
import type DataLoader from 'dataloader';
import type pg from 'pg';
import { sqlPool, type Db } from '../db/client.ts';
import { perClient, turnBatch } from '../db/turn-batch.ts';
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
 * The keys ($1, token hashes), each with its user and account, in one round trip: the look-ups
 * of the requests that arrive in the same turn of the event loop share it (src/db/turn-batch.ts;
 * under load a statement per request was a large part of a request's cost, bench/README.md
 * issue 4). Row `n` answers the n-th hash. Plain SQL (a named, server-prepared statement) rather
 * than Prisma: it runs on every request, and Prisma's per-query overhead was most of the REST
 * gateway's CPU time (bench/README.md). Timestamps are `timestamp(3)` holding
 * UTC, so they are read `AT TIME ZONE 'UTC'` to come back as exact instants whatever the
 * process time zone.
 */
const AUTHENTICATE = {
  name: 'signet_authenticate_batch',
  text: `
    SELECT i.n, k.id AS key_id, k.last_used_at AT TIME ZONE 'UTC' AS key_last_used_at,
           u.id AS u_id, u.uuid AS u_uuid, u.email AS u_email,
           u.first_name AS u_first_name, u.last_name AS u_last_name, u.role AS u_role,
           u.created_at AT TIME ZONE 'UTC' AS u_created_at, u.updated_at AT TIME ZONE 'UTC' AS u_updated_at,
           a.id AS a_id, a.uuid AS a_uuid, a.name AS a_name, a.timezone AS a_timezone, a.locale AS a_locale,
           a.testing AS a_testing, a.preferences AS a_preferences,
           a.created_at AT TIME ZONE 'UTC' AS a_created_at, a.updated_at AT TIME ZONE 'UTC' AS a_updated_at, a.submission_list_epoch AS a_submission_list_epoch
      FROM unnest($1::text[]) WITH ORDINALITY AS i(token_hash, n)
      JOIN api_keys k ON k.token_hash = i.token_hash
      JOIN users u ON u.id = k.user_id
      JOIN accounts a ON a.id = u.account_id
     WHERE k.revoked_at IS NULL
       AND u.archived_at IS NULL
       AND a.archived_at IS NULL`,
};

const TOUCH_KEY = {
  name: 'signet_touch_api_key',
  text: `UPDATE api_keys SET last_used_at = now() AT TIME ZONE 'UTC' WHERE id = $1`,
};

type KeyRow = Record<string, any>;
/**
 * The pool's batched key look-up: token hash → its row, or null. Batched, never cached (turnBatch
 * keeps no results): a key revoked, or whose user or account is archived, fails on its very next
 * request on every instance (docs/security.md "A revoked key ends at once, everywhere").
 */
const keyLookups = perClient(
  (pool: pg.Pool): DataLoader<string, KeyRow | null> =>
    turnBatch<string, KeyRow | null>(async (hashes) => {
      const { rows } = await pool.query({ ...AUTHENTICATE, values: [hashes] });
      const byIndex = new Map(rows.map((row) => [Number(row.n), row]));
      return hashes.map((_hash, index) => byIndex.get(index + 1) ?? null);
    }),
);

/**
 * Looks up the caller of an API key.
 * @returns the viewer, or null when the key is unknown, revoked, or its user or account is archived
 */
export async function authenticate(db: Db, token: string | undefined): Promise<Viewer | null> {
  if (!token || token.length > 512) return null;
  const pool = sqlPool(db);
  const row = await keyLookups(pool).load(hashApiKey(token));
  if (!row) return null;
  const now = Date.now();
  const lastUsedAt: Date | null = row.key_last_used_at;
  if (!lastUsedAt || now - lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    // Fire and forget: bookkeeping must not slow or fail the request.
    pool.query({ ...TOUCH_KEY, values: [row.key_id] }).catch(() => undefined);
  }
  return { ...accountAndUserFromRow(row), apiKeyId: row.key_id };
}

/**
 * The account and user of a row that selects them as `a_*` and `u_*` columns (id, uuid, name,
 * timezone, locale, testing, preferences, created_at, updated_at, submission_list_epoch of the account; id, uuid, email,
 * first_name, last_name, role, created_at, updated_at of the user), neither archived: the shape
 * AUTHENTICATE reads, shared with the webhooks' per-account viewer (src/webhooks/payloads.ts).
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
