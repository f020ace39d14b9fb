/**
 * The SQL of webhook attempts (src/webhooks/deliver-webhook.ts: one deliver-webhook job per
 * attempt): claiming an attempt of a delivery and recording its outcome.
 */
import type DataLoader from 'dataloader';
import type { WebhookEndpoint } from '../../generated/prisma/client.ts';
import { sqlPool, type Db } from '../client.ts';
import { perClient, turnBatch } from '../turn-batch.ts';

/** A delivery whose attempt this run has claimed, with what sending it needs. */
export interface ClaimedDelivery {
  id: number;
  accountId: number;
  endpointId: number;
  eventType: string;
  recordId: number;
  createdAt: Date;
  payload: unknown;
  /** When attempt 0 started, when it has been recorded. */
  firstSentAt: Date | null;
  endpoint: Pick<
    WebhookEndpoint,
    | 'url'
    | 'events'
    | 'secret'
    | 'previousSecret'
    | 'previousSecretExpiresAt'
    | 'headerName'
    | 'headerValue'
    | 'disabledAt'
  >;
}

/*
 * The hot path (claim, record) is plain SQL on the client's pool: one statement each instead of
 * Prisma's five round trips, for every attempt of every delivery. And the claims (and the
 * records) asked for in the same turn of the event loop go in one statement (src/db/turn-batch.ts), so
 * that under load many attempts share a statement and its commit; alone, an attempt waits for
 * nothing. Each row is still conditional on its own delivery: one attempt's outcome never depends
 * on another's. Timestamps are timestamp(3) holding UTC, read and written `AT TIME ZONE 'UTC'` (as
 * ./api-keys.ts).
 */

/**
 * $1 delivery ids, $2 attempt numbers k (same order), $3 whether to return the stored payload:
 * claims attempt k of each delivery that is pending with attempt_count = k (→ k + 1), and
 * returns the claimed ones with their endpoint.
 */
const CLAIM = {
  name: 'signet_webhook_claim_batch',
  text: `
    UPDATE webhook_deliveries d
       SET attempt_count = d.attempt_count + 1, next_attempt_at = NULL, updated_at = now() AT TIME ZONE 'UTC'
      FROM webhook_endpoints e, unnest($1::int[], $2::int[], $3::bool[]) AS i(id, k, with_payload)
     WHERE d.id = i.id AND d.attempt_count = i.k AND d.status = 'pending' AND e.id = d.endpoint_id
    RETURNING d.id, i.k, d.account_id, d.endpoint_id, d.event_type, d.record_id,
              d.created_at AT TIME ZONE 'UTC' AS created_at,
              CASE WHEN i.with_payload THEN d.payload END AS payload,
              (SELECT a.created_at AT TIME ZONE 'UTC' FROM webhook_attempts a
                WHERE a.delivery_id = d.id AND a.attempt = 0) AS first_sent_at,
              e.url, e.events, e.secret, e.previous_secret,
              e.previous_secret_expires_at AT TIME ZONE 'UTC' AS previous_secret_expires_at,
              e.header_name, e.header_value, e.disabled_at AT TIME ZONE 'UTC' AS disabled_at`,
};

/**
 * Per attempt (arrays in the same order): $1 delivery, $2 attempt, $3 status code, $4 duration ms,
 * $5 error, $6 response body, $7 start, $8 the delivery's new status, $9 its next attempt time,
 * $10 the payload sent when rebuilt (else null: unchanged). Inserts each attempt (once per
 * delivery and number) and, only for those that were new, sets the delivery's state; returns
 * the (delivery, attempt) pairs recorded.
 */
const RECORD = {
  name: 'signet_webhook_record_batch',
  text: `
    WITH input AS (
      SELECT * FROM unnest($1::int[], $2::int[], $3::int[], $4::int[], $5::text[], $6::text[], $7::timestamptz[],
                           $8::text[], $9::timestamptz[], $10::jsonb[])
        AS i(delivery_id, attempt, status_code, duration_ms, error, response_body, started_at, status,
             next_attempt_at, payload)),
    attempt AS (
      INSERT INTO webhook_attempts (delivery_id, attempt, status_code, duration_ms, error, response_body, created_at)
      SELECT delivery_id, attempt, status_code, duration_ms, error, response_body, started_at AT TIME ZONE 'UTC'
        FROM input
      ON CONFLICT (delivery_id, attempt) DO NOTHING
      RETURNING delivery_id, attempt)
    UPDATE webhook_deliveries d
       SET status = i.status, next_attempt_at = i.next_attempt_at AT TIME ZONE 'UTC',
           payload = COALESCE(i.payload, d.payload), updated_at = now() AT TIME ZONE 'UTC'
      FROM attempt a JOIN input i ON i.delivery_id = a.delivery_id AND i.attempt = a.attempt
     WHERE d.id = a.delivery_id
    RETURNING d.id, i.attempt`,
};

interface ClaimRequest {
  deliveryId: number;
  k: number;
  /** Return the stored payload (a later attempt rebuilds from it; attempt 0 has its body). */
  withPayload: boolean;
}

/** One attempt's outcome, for recordAttempt. */
export interface RecordRequest {
  deliveryId: number;
  attempt: number;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseBody: string | null;
  startedAt: Date;
  status: 'succeeded' | 'failed' | 'pending';
  nextAttemptAt: Date | null;
  /** JSON text of the payload sent, when it was rebuilt. */
  payload: string | null;
}

interface AttemptStatements {
  claim: DataLoader<ClaimRequest, ClaimedDelivery | null>;
  /** Resolves true when the attempt was recorded now, false when it was recorded before. */
  record: DataLoader<RecordRequest, boolean>;
}

/** The batched claim and record statements of `db`'s pool (one pair per client). */
const attemptStatements = perClient((db: Db): AttemptStatements => {
  const pool = sqlPool(db);
  return {
    claim: turnBatch<ClaimRequest, ClaimedDelivery | null>(async (requests) => {
      const { rows } = await pool.query({
        ...CLAIM,
        values: [requests.map((r) => r.deliveryId), requests.map((r) => r.k), requests.map((r) => r.withPayload)],
      });
      const claimed = new Map(rows.map((row) => [`${row.id}:${row.k}`, row]));
      // The same attempt asked twice in one batch (two runs of one job): the first asker has it.
      return requests.map((r) => {
        const key = `${r.deliveryId}:${r.k}`;
        const row = claimed.get(key);
        claimed.delete(key);
        return row ? claimedDelivery(row) : null;
      });
    }),
    record: turnBatch<RecordRequest, boolean>(async (requests) => {
      const seen = new Set<string>();
      // One row per (delivery, attempt): a second one in the batch finds it recorded.
      const unique = requests.filter(
        (r) => !seen.has(`${r.deliveryId}:${r.attempt}`) && seen.add(`${r.deliveryId}:${r.attempt}`),
      );
      const { rows } = await pool.query({
        ...RECORD,
        values: [
          unique.map((r) => r.deliveryId),
          unique.map((r) => r.attempt),
          unique.map((r) => r.statusCode),
          unique.map((r) => r.durationMs),
          unique.map((r) => r.error),
          unique.map((r) => r.responseBody),
          unique.map((r) => r.startedAt.toISOString()),
          unique.map((r) => r.status),
          unique.map((r) => r.nextAttemptAt?.toISOString() ?? null),
          unique.map((r) => r.payload),
        ],
      });
      const recorded = new Set(rows.map((row) => `${row.id}:${row.attempt}`));
      return requests.map((r) => recorded.delete(`${r.deliveryId}:${r.attempt}`));
    }),
  };
});

/** A claimed row of CLAIM as a ClaimedDelivery. */
function claimedDelivery(row: Record<string, any>): ClaimedDelivery {
  return {
    id: row.id,
    accountId: row.account_id,
    endpointId: row.endpoint_id,
    eventType: row.event_type,
    recordId: row.record_id,
    createdAt: row.created_at,
    payload: row.payload,
    firstSentAt: row.first_sent_at,
    endpoint: {
      url: row.url,
      events: row.events,
      secret: row.secret,
      previousSecret: row.previous_secret,
      previousSecretExpiresAt: row.previous_secret_expires_at,
      headerName: row.header_name,
      headerValue: row.header_value,
      disabledAt: row.disabled_at,
    },
  };
}

/**
 * Claims attempt `k` of a pending delivery (attempt_count k → k+1); null when it is not there to
 * claim. With `withPayload`, the claimed delivery carries its stored payload (else null).
 */
export function claimAttempt(
  db: Db,
  deliveryId: number,
  k: number,
  withPayload: boolean,
): Promise<ClaimedDelivery | null> {
  return attemptStatements(db).claim.load({ deliveryId, k, withPayload });
}

/**
 * Records an attempt (once per delivery and attempt number) and, when it is new, the delivery's
 * new state; batched with the records of the same turn.
 * @returns true when recorded now, false when it had been recorded before
 */
export function recordAttemptOutcome(db: Db, request: RecordRequest): Promise<boolean> {
  return attemptStatements(db).record.load(request);
}
