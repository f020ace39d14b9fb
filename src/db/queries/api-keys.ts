/**
 * The SQL of API keys on every request (src/accounts/authenticate.ts): the batched look-up of
 * the keys presented in one turn of the event loop, and the last-used bookkeeping.
 */
import type DataLoader from 'dataloader';
import type pg from 'pg';
import { sqlPool, type Db } from '../client.ts';
import { perClient, turnBatch } from '../turn-batch.ts';

/**
 * The keys ($1, token hashes), each with its user and account, in one round trip: the look-ups
 * of the requests that arrive in the same turn of the event loop share it (src/db/turn-batch.ts;
 * under load a statement per request was a large part of a request's cost, bench/README.md
 * issue 4). Row `n` answers the n-th hash. Plain SQL (a named, server-prepared statement) rather
 * than Prisma: it runs on every request, and Prisma's per-query overhead was most of the REST
 * gateway's CPU time (bench/README.md). The key's scopes and folders come with it
 * (src/accounts/key-scopes.ts): `key_folder_tree` is its folders with all their subfolders, made
 * only for a key limited to folders (null otherwise) by the database function api_key_folder_tree
 * (migration 20261127120000_api_key_scopes: a recursive query inline here cost every request, limited
 * or not, ~15 µs of database time), so scoped keys cost no statement of their own and a subfolder
 * made later is in at once. Timestamps are `timestamp(3)` holding
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
           a.created_at AT TIME ZONE 'UTC' AS a_created_at, a.updated_at AT TIME ZONE 'UTC' AS a_updated_at,
           a.submission_list_epoch AS a_submission_list_epoch,
           k.scopes AS key_scopes, k.folder_ids AS key_folder_ids,
           CASE WHEN cardinality(k.folder_ids) > 0 THEN api_key_folder_tree(k.folder_ids, k.account_id)
           END AS key_folder_tree
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

/**
 * A row of AUTHENTICATE: the key (`key_*`: id, last_used_at, scopes, folder_ids, folder_tree), its
 * user (`u_*`) and account (`a_*`).
 */
export type ApiKeyRow = Record<string, any>;
/**
 * The pool's batched key look-up: token hash → its row, or null. Batched, never cached (turnBatch
 * keeps no results): a key revoked, or whose user or account is archived, fails on its very next
 * request on every instance (docs/security.md "A revoked key ends at once, everywhere").
 */
const keyLookups = perClient(
  (pool: pg.Pool): DataLoader<string, ApiKeyRow | null> =>
    turnBatch<string, ApiKeyRow | null>(async (hashes) => {
      const { rows } = await pool.query({ ...AUTHENTICATE, values: [hashes] });
      const byIndex = new Map(rows.map((row) => [Number(row.n), row]));
      return hashes.map((_hash, index) => byIndex.get(index + 1) ?? null);
    }),
);

/**
 * The key whose SHA-256 is `tokenHash` (hex), with its user and account, when none of the three
 * is revoked or archived; batched with the look-ups of the same turn (one statement), never cached.
 * @returns its row (ApiKeyRow), or null
 */
export function findApiKeyByHash(db: Db, tokenHash: string): Promise<ApiKeyRow | null> {
  return keyLookups(sqlPool(db)).load(tokenHash);
}

/** Sets the key's last_used_at to now, in the background: a failure is ignored (bookkeeping). */
export function touchApiKey(db: Db, keyId: number): void {
  sqlPool(db)
    .query({ ...TOUCH_KEY, values: [keyId] })
    .catch(() => undefined);
}
