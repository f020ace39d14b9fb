/**
 * The transactional outbox's SQL (docs/security.md, "Side effects"): the jobs a change causes are
 * written by the change's own transaction into `outbox`, and moved from there into Agenda's table
 * by the job queue (src/jobs/job-queue.ts).
 *
 * Rows are given as a JSON array of OutboxRow (src/jobs/outbox.ts): `{name, data, uniqueKey?,
 * runAt, ifWebhook?}`. `ifWebhook: {accountId, eventType}` keeps a row only when an enabled webhook
 * endpoint of that account subscribes to that event type at the time of the change: the webhook
 * dispatch of a domain event is a job only for accounts that would receive it (issue 4: most
 * accounts have no endpoint, and an event must not cost them a job).
 */

import type pg from 'pg';
import { withPoolClient } from '../pool-client.ts';
import type { Prisma } from '../../generated/prisma/client.ts';

/**
 * The rows of `json` (an SQL expression of a jsonb array of OutboxRow) that are to be written,
 * as a SELECT of the outbox's columns (name, data, unique_key, run_at). Shared by INSERT_OUTBOX
 * and the statements that write their outbox rows in a CTE of their own (the create statement of
 * src/submissions/create-submissions.ts).
 */
export const selectOutboxRows = (json: string) => `
  SELECT o->>'name', o->'data', o->>'uniqueKey', (o->>'runAt')::timestamptz AT TIME ZONE 'UTC'
    FROM jsonb_array_elements(${json}) AS o
   WHERE NOT (o ? 'ifWebhook') OR EXISTS (
           SELECT 1 FROM webhook_endpoints e
            WHERE e.account_id = (o->'ifWebhook'->>'accountId')::int AND e.disabled_at IS NULL
              AND o->'ifWebhook'->>'eventType' = ANY(e.events))`;

/** $1: the rows (JSON array of OutboxRow). Writes them in the caller's transaction. */
export const INSERT_OUTBOX = {
  name: 'signet_outbox_insert',
  text: `INSERT INTO outbox (name, data, unique_key, run_at) ${selectOutboxRows('$1::jsonb')}`,
};

/**
 * Writes outbox rows (OutboxRow of src/jobs/outbox.ts, already checked) through `tx`, a Prisma
 * transaction (or client: then the statement is its own transaction), in one statement.
 */
export async function insertOutboxRows(
  tx: Pick<Prisma.TransactionClient, '$executeRawUnsafe'>,
  rows: readonly unknown[],
): Promise<void> {
  await tx.$executeRawUnsafe(INSERT_OUTBOX.text, JSON.stringify(rows));
}

/**
 * Moves up to $1 outbox rows (oldest first) into Agenda's table, in one statement: deleted from the
 * outbox and inserted as jobs together, so a row is never lost nor moved twice, whatever runs at
 * the same time (rows another mover holds are skipped). Columns as Agenda's own insert of a new
 * job (PostgresJobRepository.saveJob: type normal, priority 0, not disabled, not forked); `data` is
 * `{payload, uniqueKey?}` as src/jobs/job-queue.ts stores it, and a stored (name, uniqueKey)
 * inserts nothing (the job store's unique index). Announces the inserted jobs on Agenda's channel,
 * once per name (its earliest job), with the payload Agenda's PostgresNotificationChannel
 * publishes, so listening instances take them at once (the NOTIFY is sent at commit).
 * $2: this instance's name (last_modified_by, the notification's source), $3: Agenda's channel.
 * Returns how many rows were moved and how many names announced.
 * @param tables Agenda's table and the outbox, schema-qualified and quoted
 */
export const relayOutbox = (tables: OutboxTables) => ({
  name: `signet_outbox_relay:${tables.jobs}:${tables.outbox}`,
  text: `
    WITH moved AS (
      DELETE FROM ${tables.outbox}
       WHERE id IN (SELECT id FROM ${tables.outbox} ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
      RETURNING name, data, unique_key, run_at
    ), input AS (
      SELECT gen_random_uuid() AS id, name, run_at AT TIME ZONE 'UTC' AS next_run_at,
             CASE WHEN unique_key IS NULL THEN jsonb_build_object('payload', data)
                  ELSE jsonb_build_object('payload', data, 'uniqueKey', unique_key) END AS data
        FROM moved
    ), inserted AS (
      INSERT INTO ${tables.jobs} (id, name, priority, next_run_at, type, data, disabled, fork, last_modified_by)
      SELECT id, name, 0, next_run_at, 'normal', data, FALSE, FALSE, $2 FROM input
      ON CONFLICT (name, (data->>'uniqueKey')) WHERE data ? 'uniqueKey' DO NOTHING
      RETURNING id, name, next_run_at
    ), notified AS (
      SELECT pg_notify($3, json_build_object('jobId', first.id, 'jobName', first.name, 'nextRunAt', first.next_run_at,
                                            'priority', 0, 'timestamp', now(), 'source', $2)::text)
        FROM (SELECT DISTINCT ON (name) id, name, next_run_at FROM inserted ORDER BY name, next_run_at) first
    )
    SELECT (SELECT count(*) FROM moved)::int AS moved, (SELECT count(*) FROM notified)::int AS announced`,
});

/**
 * For a job store outside PostgreSQL (MongoDB): $1 rows at most, oldest first, locked for the
 * caller's transaction (which stores their jobs, then runs DELETE_OUTBOX_ROWS and commits).
 */
export const lockOutboxRows = (outbox: string) => ({
  name: `signet_outbox_lock_rows:${outbox}`,
  text: `SELECT id::text AS id, name, data, unique_key AS "uniqueKey", run_at AT TIME ZONE 'UTC' AS "runAt"
           FROM ${outbox} ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
});

/** $1: outbox ids (text): deleted once their jobs are stored. */
export const deleteOutboxRows = (outbox: string) => ({
  name: `signet_outbox_delete_rows:${outbox}`,
  text: `DELETE FROM ${outbox} WHERE id = ANY($1::bigint[])`,
});

/** Rows waiting to be moved (waitForIdle counts them as pending jobs). */
export const countOutbox = (outbox: string) => ({
  name: `signet_outbox_count:${outbox}`,
  text: `SELECT count(*)::int AS n FROM ${outbox}`,
});

/**
 * Runs relayOutbox on `pool`: moves up to `limit` rows into Agenda's table and announces them on
 * `channel` (see relayOutbox).
 * @param source this instance's name
 * @returns the rows moved
 */
export async function relayOutboxRows(
  pool: pg.Pool,
  tables: OutboxTables,
  options: { limit: number; source: string; channel: string },
): Promise<number> {
  const { rows } = await pool.query<{ moved: number }>({
    ...relayOutbox(tables),
    values: [options.limit, options.source, options.channel],
  });
  return rows[0]?.moved ?? 0;
}

/** The rows waiting in `outbox` (schema-qualified, quoted) to be moved. */
export async function countOutboxRows(pool: pg.Pool, outbox: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(countOutbox(outbox));
  return rows[0]!.n;
}

/** An outbox row as moveOutboxRowsThrough hands it over. */
export interface LockedOutboxRow {
  id: string;
  name: string;
  data: unknown;
  uniqueKey: string | null;
  runAt: Date;
}

/**
 * The outbox relay for a job store outside PostgreSQL (MongoDB): in one transaction on `pool`,
 * locks up to `limit` rows of `outbox` (oldest first, rows another mover holds skipped), hands
 * each to `store` (which stores its job idempotently), deletes them and commits. A failure rolls
 * back: the rows stay for the next move.
 * @returns the rows moved
 */
export async function moveOutboxRowsThrough(
  pool: pg.Pool,
  outbox: string,
  limit: number,
  store: (row: LockedOutboxRow) => Promise<unknown>,
): Promise<number> {
  return withPoolClient(pool, async (client, discard) => {
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<LockedOutboxRow>(lockOutboxRows(outbox), [limit]);
      for (const row of rows) await store(row);
      if (rows.length > 0) await client.query(deleteOutboxRows(outbox), [rows.map((r) => r.id)]);
      await client.query('COMMIT');
      return rows.length;
    } catch (error) {
      // Closed rather than rolled back (the close ends the transaction): a ROLLBACK into a
      // connection that stopped answering would wait out its query timeout.
      discard();
      throw error;
    }
  });
}

/** Where the relay reads and writes: Agenda's table and the outbox, each schema-qualified and quoted. */
export interface OutboxTables {
  /** e.g. "agenda"."jobs" */
  jobs: string;
  /** e.g. "public"."outbox" (the schema of the service's tables: the URL's `?schema=`, as Prisma reads it) */
  outbox: string;
}
