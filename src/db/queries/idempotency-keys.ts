/**
 * The SQL of idempotency keys (src/accounts/idempotency-keys.ts, docs/idempotency.md): claiming a
 * key for a request, renewing the claim while the request runs, recording its answer or giving
 * the key back, and deleting expired keys. Plain named statements on the pool under the Prisma
 * client, as the other per-request paths (./api-keys.ts): a keyed request costs one statement
 * before it runs and one after. Times come from the caller's clock (ISO strings, `$n`), not
 * PostgreSQL's, so that tests drive them; columns are `timestamp(3)` holding UTC.
 *
 * The claim, its renewals and a key given back commit without waiting for the WAL flush
 * (ASYNC_COMMIT): a synchronous commit cost 1.5–3.5 ms here (0.3–0.7 ms without the wait), and
 * nothing is lost by it: a claim is flushed anyway with the change its request then commits (WAL
 * is flushed in order, and that commit waits), and a claim lost in a database crash belongs to a
 * request that changed nothing, which a retry may run again. The kept answer (FINISH) commits
 * synchronously: it is awaited before the client gets the answer, so an answer a client holds is
 * never lost, and a retry after a database crash never runs its request a second time
 * (docs/idempotency.md).
 */
import { sqlPool, type Db } from '../client.ts';

/**
 * A one-row FROM item that turns synchronous_commit off for the statement's own transaction
 * (`set_config(..., true)`: the setting ends with the transaction, so the pooled connection keeps
 * the server's default). Read at commit time, so its place in the statement does not matter.
 */
const ASYNC_COMMIT = `(SELECT set_config('synchronous_commit', 'off', true)) AS async_commit`;

/**
 * `$1` account id, `$2` key, `$3` request hash, `$4` lock token, `$5` now (ISO), `$6` locked until (ISO),
 * `$7` expires at (ISO).
 *
 * Inserts the key in flight, or takes over the row already there when it has expired or when its
 * holder's lock has passed for the same request (a request that died mid-flight), in one
 * statement: `claimed` is true then. Otherwise the row as it was (`claimed` null): the caller
 * decides between a replay, 409 and 422. The row is read in the statement's snapshot; when a
 * concurrent insert committed after that snapshot, ON CONFLICT sees it but the read does not, and
 * both columns come back null: the caller runs the statement again.
 */
const CLAIM = {
  name: 'signet_idempotency_claim',
  text: `
    WITH claimed AS (
      INSERT INTO idempotency_keys AS k
                  (account_id, key, request_hash, lock_token, locked_until, created_at, expires_at)
      VALUES ($1, $2, $3, $4::uuid, $6::timestamptz AT TIME ZONE 'UTC', $5::timestamptz AT TIME ZONE 'UTC',
              $7::timestamptz AT TIME ZONE 'UTC')
      ON CONFLICT (account_id, key) DO UPDATE
         SET request_hash = EXCLUDED.request_hash, lock_token = EXCLUDED.lock_token,
             locked_until = EXCLUDED.locked_until, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at,
             response_status = NULL, response_content_type = NULL, response_body = NULL
       WHERE k.expires_at <= EXCLUDED.created_at
          OR (k.response_status IS NULL AND k.locked_until <= EXCLUDED.created_at
              AND k.request_hash = EXCLUDED.request_hash)
      RETURNING true AS claimed
    )
    SELECT c.claimed, k.request_hash, k.response_status, k.response_content_type, k.response_body
      FROM ${ASYNC_COMMIT}
      LEFT JOIN claimed c ON true
      LEFT JOIN idempotency_keys k ON c.claimed IS NULL AND k.account_id = $1 AND k.key = $2`,
};

/** `$1` account id, `$2` key, `$3` lock token, `$4` locked until (ISO): the holder renews its claim. */
const RENEW = {
  name: 'signet_idempotency_renew',
  text: `
    UPDATE idempotency_keys SET locked_until = $4::timestamptz AT TIME ZONE 'UTC'
      FROM ${ASYNC_COMMIT}
     WHERE account_id = $1 AND key = $2 AND lock_token = $3::uuid`,
};

/**
 * `$1` account id, `$2` key, `$3` lock token, `$4` status, `$5` content type, `$6` body: the answer, kept.
 * A synchronous commit (module comment): the answer is durable before the client receives it.
 */
const FINISH = {
  name: 'signet_idempotency_finish',
  text: `
    UPDATE idempotency_keys
       SET response_status = $4, response_content_type = $5, response_body = $6, lock_token = NULL, locked_until = NULL
     WHERE account_id = $1 AND key = $2 AND lock_token = $3::uuid`,
};

/** `$1` account id, `$2` key, `$3` lock token: the key given back (the answer is not kept). */
const RELEASE = {
  name: 'signet_idempotency_release',
  text: `
    DELETE FROM idempotency_keys USING ${ASYNC_COMMIT}
     WHERE account_id = $1 AND key = $2 AND lock_token = $3::uuid`,
};

/**
 * `$1` now (ISO), `$2` most rows: deletes up to `$2` expired keys, skipping rows another statement
 * holds (a claim taking an expired row over).
 */
const DELETE_EXPIRED = {
  name: 'signet_idempotency_delete_expired',
  text: `
    DELETE FROM idempotency_keys
     WHERE (account_id, key) IN (
       SELECT account_id, key FROM idempotency_keys
        WHERE expires_at <= $1::timestamptz AT TIME ZONE 'UTC'
        LIMIT $2 FOR UPDATE SKIP LOCKED)`,
};

/** The row of a key that could not be claimed. */
export interface IdempotencyKeyRow {
  requestHash: string;
  /** Null while its request is in flight. */
  responseStatus: number | null;
  responseContentType: string | null;
  responseBody: string | null;
}

/** The claim's outcome: claimed (this request runs), or the row that holds the key. */
export type ClaimOutcome = { claimed: true } | { claimed: false; row: IdempotencyKeyRow };

/** Identifies one claim of one key. */
export interface IdempotencyClaimRef {
  accountId: number;
  key: string;
  lockToken: string;
}

/** Statements run before giving up on reading a row that a concurrent claim committed (see CLAIM). */
const CLAIM_ATTEMPTS = 5;

/**
 * Claims `key` for a request (CLAIM): inserts it, or takes over an expired row or one whose
 * holder's lock has passed (same request only).
 * @param times now, the end of the lock and the key's expiry
 * @returns claimed, or the row that holds the key
 * @throws Error when the row stays out of sight after CLAIM_ATTEMPTS statements (never seen; the
 *   caller answers it as an unexpected error); the database's errors
 */
export async function claimIdempotencyKey(
  db: Db,
  claim: IdempotencyClaimRef & { requestHash: string },
  times: { now: Date; lockedUntil: Date; expiresAt: Date },
): Promise<ClaimOutcome> {
  const values = [
    claim.accountId,
    claim.key,
    claim.requestHash,
    claim.lockToken,
    times.now.toISOString(),
    times.lockedUntil.toISOString(),
    times.expiresAt.toISOString(),
  ];
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt += 1) {
    const { rows } = await sqlPool(db).query({ ...CLAIM, values });
    const row = rows[0];
    if (row?.claimed) return { claimed: true };
    if (row?.request_hash != null) {
      return {
        claimed: false,
        row: {
          requestHash: row.request_hash,
          responseStatus: row.response_status,
          responseContentType: row.response_content_type,
          responseBody: row.response_body,
        },
      };
    }
  }
  throw new Error(`claimIdempotencyKey: the key's row stayed out of sight after ${CLAIM_ATTEMPTS} statements`);
}

/** Moves the claim's lock to `lockedUntil` (RENEW). @returns false when the claim is no longer held */
export async function renewIdempotencyKey(db: Db, claim: IdempotencyClaimRef, lockedUntil: Date): Promise<boolean> {
  const { rowCount } = await sqlPool(db).query({
    ...RENEW,
    values: [claim.accountId, claim.key, claim.lockToken, lockedUntil.toISOString()],
  });
  return rowCount === 1;
}

/** Records the claimed request's answer (FINISH). @returns false when the claim is no longer held */
export async function finishIdempotencyKey(
  db: Db,
  claim: IdempotencyClaimRef,
  answer: { status: number; contentType: string | null; body: string },
): Promise<boolean> {
  const { rowCount } = await sqlPool(db).query({
    ...FINISH,
    values: [claim.accountId, claim.key, claim.lockToken, answer.status, answer.contentType, answer.body],
  });
  return rowCount === 1;
}

/** Gives the claimed key back (RELEASE): the next request with it runs. */
export async function releaseIdempotencyKey(db: Db, claim: IdempotencyClaimRef): Promise<void> {
  await sqlPool(db).query({ ...RELEASE, values: [claim.accountId, claim.key, claim.lockToken] });
}

/** Deletes up to `limit` keys expired at `now` (DELETE_EXPIRED). @returns how many */
export async function deleteExpiredIdempotencyKeys(db: Db, now: Date, limit: number): Promise<number> {
  const { rowCount } = await sqlPool(db).query({ ...DELETE_EXPIRED, values: [now.toISOString(), limit] });
  return rowCount ?? 0;
}
