/**
 * The SQL of the PostgreSQL job store (src/jobs/job-store.ts) on Agenda's table. The store's pool
 * sets `search_path` to the jobs schema (default `agenda`), so the table is named unqualified
 * (JOBS_TABLE) and one pool serves one schema; the outbox relay, which also reads the service's
 * schema, is in ./outbox.ts.
 *
 * Columns are those of @agendajs/postgres-backend's own table (its PostgresJobRepository DDL and
 * saveJob/saveJobState/getNextJobToRun statements); test/agenda-contract.test.ts checks that the
 * installed backend still creates every column written here.
 */
import type pg from 'pg';
import { withPoolClient } from '../pool-client.ts';

/** Agenda's table, unqualified: the store's pool's search_path names the schema. */
export const JOBS_TABLE = 'jobs';

/** The columns written here directly (contract-tested against the backend's DDL). */
export const JOBS_COLUMNS_WRITTEN = [
  'id',
  'name',
  'priority',
  'next_run_at',
  'type',
  'data',
  'disabled',
  'fork',
  'last_modified_by',
  'locked_at',
  'last_run_at',
  'progress',
  'fail_reason',
  'fail_count',
  'failed_at',
  'last_finished_at',
] as const;

/** Holds schema creation to one instance at a time (CREATE ... IF NOT EXISTS races otherwise). */
const SCHEMA_LOCK = 'signet.jobs.schema';

/**
 * Stored job data is `{ payload, uniqueKey? }` (src/jobs/job-queue.ts);
 * this index makes a uniqueKey unique per job name.
 */
const UNIQUE_KEY_INDEX = `CREATE UNIQUE INDEX IF NOT EXISTS ${JOBS_TABLE}_unique_key_idx
  ON ${JOBS_TABLE} (name, (data->>'uniqueKey')) WHERE data ? 'uniqueKey'`;

/**
 * Creates the jobs schema `schema` (a lower-case SQL identifier, checked by the caller), then runs
 * `createTable` (the backend's own DDL, on the same pool) and the uniqueKey index, all under a
 * session advisory lock so that instances starting together do not race.
 * @throws the database's error (unreachable, no right to create the schema)
 */
export async function ensureJobsSchema(pool: pg.Pool, schema: string, createTable: () => Promise<void>): Promise<void> {
  await withPoolClient(pool, async (client, discard) => {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [SCHEMA_LOCK]);
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${client.escapeIdentifier(schema)}`);
      await createTable();
      await client.query(UNIQUE_KEY_INDEX);
    } finally {
      // A failed unlock leaves the lock held: the connection is closed instead, which unlocks.
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [SCHEMA_LOCK]).catch((error: unknown) => {
        discard();
        throw error;
      });
    }
  });
}

/**
 * $1: the jobs as JSON ([{id, name, nextRunAt, data, notification}]), $2: this instance's name,
 * $3: Agenda's channel. Columns as Agenda's own insert of a new job (PostgresJobRepository.saveJob:
 * type normal, priority 0, not disabled, not forked). The key's unique index (UNIQUE_KEY_INDEX)
 * is the conflict target, so a stored key inserts nothing and announces nothing.
 */
const INSERT_JOBS = `
  WITH input AS (
    SELECT (j->>'id')::uuid AS id, j->>'name' AS name, (j->>'nextRunAt')::timestamptz AS next_run_at,
           j->'data' AS data, j->>'notification' AS notification
      FROM jsonb_array_elements($1::jsonb) j
  ), inserted AS (
    INSERT INTO ${JOBS_TABLE} (id, name, priority, next_run_at, type, data, disabled, fork, last_modified_by)
    SELECT id, name, 0, next_run_at, 'normal', data, FALSE, FALSE, $2 FROM input
    ON CONFLICT (name, (data->>'uniqueKey')) WHERE data ? 'uniqueKey' DO NOTHING
    RETURNING id
  ), notified AS (
    -- One announcement per job name (its earliest job): a fill takes every due job of the name.
    SELECT pg_notify($3, first.notification) FROM (
      SELECT DISTINCT ON (input.name) input.notification
        FROM inserted JOIN input ON input.id = inserted.id
       ORDER BY input.name, input.next_run_at
    ) first
  )
  SELECT inserted.id::text AS id, (SELECT count(*) FROM notified) AS announced FROM inserted`;

/** A new job row for insertJobRows: `data` as Agenda stores it, `notification` the NOTIFY payload. */
export interface JobRowInput {
  id: string;
  name: string;
  /** ISO 8601 */
  nextRunAt: string;
  data: unknown;
  /** JSON text, as Agenda's PostgresNotificationChannel publishes it */
  notification: string;
}

/**
 * Inserts `rows` unless their (name, uniqueKey) is stored, and NOTIFYs `channel` once per name
 * inserted (its earliest job), in one statement.
 * @param source this instance's name (last_modified_by)
 * @returns the ids inserted (those whose key was stored are missing)
 */
export async function insertJobRows(
  pool: pg.Pool,
  rows: JobRowInput[],
  source: string,
  channel: string,
): Promise<string[]> {
  const { rows: inserted } = await pool.query<{ id: string }>({
    name: 'signet_jobs_insert',
    text: INSERT_JOBS,
    values: [JSON.stringify(rows), source, channel],
  });
  return inserted.map((r) => r.id);
}

/** $1: names, $2: unique keys (pairwise): the stored jobs holding those keys. */
const FIND_BY_KEY = `
  SELECT j.id::text AS id, j.name, j.data->>'uniqueKey' AS key
    FROM ${JOBS_TABLE} j
    JOIN unnest($1::text[], $2::text[]) AS k(name, key) ON j.name = k.name AND j.data->>'uniqueKey' = k.key
   WHERE j.data ? 'uniqueKey'`;

/** The stored jobs holding these (name, uniqueKey) pairs: `{id, name, key}` each, in no order. */
export async function findJobsByKey(
  pool: pg.Pool,
  keys: { name: string; uniqueKey: string | null }[],
): Promise<{ id: string; name: string; key: string }[]> {
  const { rows } = await pool.query<{ id: string; name: string; key: string }>({
    name: 'signet_jobs_find_by_key',
    text: FIND_BY_KEY,
    values: [keys.map((k) => k.name), keys.map((k) => k.uniqueKey)],
  });
  return rows;
}

/** Renews a running job's lock: locked_at = `lockedAt`. */
export async function renewJobLock(pool: pg.Pool, id: string, lockedAt: Date): Promise<void> {
  await pool.query({
    name: 'signet_jobs_renew_lock',
    text: `UPDATE ${JOBS_TABLE} SET locked_at = $2 WHERE id = $1`,
    values: [id, lockedAt],
  });
}

/**
 * Jobs locked, or due within `withinMs` milliseconds, counted by name (names with none left out;
 * disabled jobs not counted).
 */
export async function countPendingJobs(pool: pg.Pool, withinMs: number): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ name: string; n: number }>(
    `SELECT name, count(*)::int AS n FROM ${JOBS_TABLE}
      WHERE disabled = FALSE
        AND (locked_at IS NOT NULL OR next_run_at <= now() + $1 * interval '1 millisecond')
      GROUP BY name ORDER BY name`,
    [withinMs],
  );
  return new Map(rows.map((row) => [row.name, row.n]));
}

/** Per job name: the jobs due and waiting for an instance, those running, and the oldest due one's wait. */
export interface JobNameStats {
  name: string;
  /** Unlocked jobs due by now (next_run_at ≤ now). */
  due: number;
  /** Locked jobs (running, or held by an instance that died until their lock lifetime passes). */
  running: number;
  /** Seconds since the oldest due job's next_run_at; 0 when none is due. */
  oldestDueSeconds: number;
}

/**
 * The queue's state for /metrics (src/observability/metrics.ts), by name (names with neither due
 * nor running jobs left out; disabled jobs not counted). One statement on the rows Agenda's
 * due-job scan reads.
 */
export async function jobQueueStats(pool: pg.Pool): Promise<JobNameStats[]> {
  const { rows } = await pool.query<JobNameStats>({
    name: 'signet_job_queue_stats',
    text: `SELECT name,
                  count(*) FILTER (WHERE locked_at IS NULL)::int AS due,
                  count(*) FILTER (WHERE locked_at IS NOT NULL)::int AS running,
                  coalesce(extract(epoch FROM now() - min(next_run_at) FILTER (WHERE locked_at IS NULL)), 0)::float8
                    AS "oldestDueSeconds"
             FROM ${JOBS_TABLE}
            WHERE disabled = FALSE AND (locked_at IS NOT NULL OR next_run_at <= now())
            GROUP BY name ORDER BY name`,
  });
  return rows;
}

/**
 * SAVE_STATES, and in the same statement each finished job of a fairly claimed name hands its place
 * on: $1 the saves as for SAVE_STATES, $2 the hand-ons as JSON ([{name, key, value}], one per finished
 * job: the payload key of the finest limit and the finished job's value of it), $3 the lock time, $4
 * this instance. For each (name, key, value), as many due, unlocked jobs of that value as finished
 * are locked, in Agenda's order (rows another transaction holds skipped). The value's count of
 * locked jobs is the same before and after the statement, and so is that of every coarser limit's
 * value (a finer value lies within one of each coarser key: an endpoint within its account), so no
 * limit is passed; and no claim is needed for them (src/jobs/job-store.ts). Answers the saved ids
 * (`signet_saved`, on every row) and the locked rows (job columns null when none).
 */
const SAVE_STATES_HANDING_ON = `
  WITH v AS (
    SELECT * FROM jsonb_to_recordset($1::jsonb)
         AS v(id uuid, name text, locked_at timestamptz, next_run_at timestamptz, last_run_at timestamptz,
              progress real, fail_reason text, fail_count integer, failed_at timestamptz, last_finished_at timestamptz,
              last_modified_by text)
  ), saved AS (
    UPDATE ${JOBS_TABLE} j
       SET locked_at = v.locked_at, next_run_at = v.next_run_at, last_run_at = v.last_run_at, progress = v.progress,
           fail_reason = v.fail_reason, fail_count = v.fail_count, failed_at = v.failed_at,
           last_finished_at = v.last_finished_at, last_modified_by = v.last_modified_by
      FROM v
     WHERE j.id = v.id AND j.name = v.name
    RETURNING j.id
  ), wanted AS (
    SELECT h->>'name' AS name, h->>'key' AS key, h->>'value' AS value, count(*)::int AS n
      FROM jsonb_array_elements($2::jsonb) h GROUP BY 1, 2, 3
  ), next AS (
    SELECT c.id FROM wanted w, LATERAL (
      SELECT c.id FROM ${JOBS_TABLE} c
       WHERE c.name = w.name AND c.disabled = FALSE AND c.locked_at IS NULL AND c.next_run_at <= $3
         AND c.data->'payload'->>w.key = w.value
         AND c.id NOT IN (SELECT id FROM v)
       ORDER BY c.next_run_at ASC NULLS LAST, c.priority DESC
       LIMIT w.n
       FOR UPDATE SKIP LOCKED) c
  ), handed AS (
    UPDATE ${JOBS_TABLE} j SET locked_at = $3, last_modified_by = $4 FROM next WHERE j.id = next.id
    RETURNING j.*
  )
  SELECT handed.*, (SELECT array_agg(id::text) FROM saved) AS signet_saved
    FROM (SELECT 1) one LEFT JOIN handed ON TRUE`;

/** A finished job of a fairly claimed name handing its place on (saveJobStatesHandingOn). */
export interface HandOn {
  name: string;
  /** The payload key of the name's finest limit. */
  key: string;
  /** The finished job's value of it. */
  value: string;
}

/**
 * saveJobStates, and each finished job in `handOns` hands its place to the next due job of its
 * value, in the same statement (SAVE_STATES_HANDING_ON).
 * @returns the ids of the rows found, and the rows locked for the hand-ons (whole, as lockDueJobs)
 */
export async function saveJobStatesHandingOn(
  pool: pg.Pool,
  rows: JobStateRow[],
  handOns: HandOn[],
  lock: { lockTime: Date; lastModifiedBy: string | null },
): Promise<{ found: Set<string>; handed: unknown[] }> {
  const { rows: answer } = await pool.query<Record<string, unknown>>({
    name: 'signet_jobs_save_states_handing_on',
    text: SAVE_STATES_HANDING_ON,
    values: [JSON.stringify(rows), JSON.stringify(handOns), lock.lockTime, lock.lastModifiedBy],
  });
  return {
    found: new Set((answer[0]?.signet_saved as string[] | null) ?? []),
    handed: answer.filter((row) => row.id !== null).map(({ signet_saved: _, ...row }) => row),
  };
}

/**
 * $1 lock time, $2 name, $3 next scan, $4 lock deadline, $5 this instance, $6 how many: the
 * condition and order of PostgresJobRepository.getNextJobToRun, for up to $6 jobs at once.
 */
const LOCK_JOBS = `
  UPDATE ${JOBS_TABLE} SET locked_at = $1, last_modified_by = $5
   WHERE id IN (
     SELECT id FROM ${JOBS_TABLE}
      WHERE name = $2 AND disabled = FALSE AND ((locked_at IS NULL AND next_run_at <= $3) OR locked_at <= $4)
      ORDER BY next_run_at ASC NULLS LAST, priority DESC
      LIMIT $6
      FOR UPDATE SKIP LOCKED)
  RETURNING *`;

/** The parameters $1–$6 of LOCK_JOBS and of the fair claim's statement, in their order. */
const lockValues = (options: Parameters<typeof lockDueJobs>[1]) => [
  options.lockTime,
  options.name,
  options.nextScanAt,
  options.lockDeadline,
  options.lastModifiedBy,
  options.limit,
];

/**
 * Locks up to `limit` due jobs of `name` (PostgresJobRepository.getNextJobToRun's condition and
 * order: not disabled, and unlocked and due by `nextScanAt` or locked before `lockDeadline`), rows
 * another transaction holds skipped.
 * @returns the locked rows, whole (`RETURNING *`: for the backend's own row mapping)
 */
export async function lockDueJobs(
  pool: pg.Pool,
  options: {
    lockTime: Date;
    name: string;
    nextScanAt: Date;
    lockDeadline: Date;
    lastModifiedBy: string | null;
    limit: number;
  },
): Promise<unknown[]> {
  const { rows } = await pool.query({
    name: 'signet_jobs_lock',
    text: LOCK_JOBS,
    values: lockValues(options),
  });
  return rows;
}

/** $1: the saves as JSON: the columns and values of PostgresJobRepository.saveJobState, per job. */
const SAVE_STATES = `
  UPDATE ${JOBS_TABLE} j
     SET locked_at = v.locked_at, next_run_at = v.next_run_at, last_run_at = v.last_run_at, progress = v.progress,
         fail_reason = v.fail_reason, fail_count = v.fail_count, failed_at = v.failed_at,
         last_finished_at = v.last_finished_at, last_modified_by = v.last_modified_by
    FROM jsonb_to_recordset($1::jsonb)
         AS v(id uuid, name text, locked_at timestamptz, next_run_at timestamptz, last_run_at timestamptz,
              progress real, fail_reason text, fail_count integer, failed_at timestamptz, last_finished_at timestamptz,
              last_modified_by text)
   WHERE j.id = v.id AND j.name = v.name
  RETURNING j.id::text AS id`;

/** One job's state, as PostgresJobRepository.saveJobState writes it (snake_case columns). */
export interface JobStateRow {
  id: string;
  name: string;
  locked_at: Date | null;
  next_run_at: Date | null;
  last_run_at: Date | null;
  progress: number | null;
  fail_reason: string | null;
  fail_count: number | null;
  failed_at: Date | null;
  last_finished_at: Date | null;
  last_modified_by: string | null;
}

/**
 * Writes the states of several jobs in one UPDATE (rows matched by id and name).
 * @returns the ids of the rows found
 */
export async function saveJobStates(pool: pg.Pool, rows: JobStateRow[]): Promise<Set<string>> {
  const { rows: updated } = await pool.query<{ id: string }>({
    name: 'signet_jobs_save_states',
    text: SAVE_STATES,
    values: [JSON.stringify(rows)],
  });
  return new Set(updated.map((r) => r.id));
}

/** A limit of the fair claim: at most `max` jobs locked at once per value of the payload key `key`. */
export interface KeyLimit {
  /** A key of the job's payload (`data.payload`), e.g. `accountId`: a letter, then letters, digits or `_`. */
  key: string;
  /** Jobs locked (running, or locked ahead) at once per value, on every instance together. */
  max: number;
}

/** The advisory lock space of fair claims (./advisory-locks.ts lists them); the second key: the job name's hash. */
const FAIR_CLAIM_LOCK_SPACE = 7_301_024;

/**
 * The claim of LOCK_JOBS with per-key limits (`limits`, in order). $1 lock time, $2 name, $3 next
 * scan, $4 lock deadline, $5 this instance, $6 how many:
 * - `live`: the jobs of the name locked now (lock younger than the deadline: a dead instance's
 *   expired locks are not counted, and their jobs are due again);
 * - `cand`: the due jobs in Agenda's order, minus those of a value at its limit already (`blocked_i`),
 *   at most 2 × $6, locked against other writers (SKIP LOCKED);
 * - `r_i`: of those let through by the limits before it, the ones whose rank among the candidates of
 *   their value, plus that value's live jobs, stays within limit i (a job without the key passes);
 * - the first $6 of what passes every limit are locked (`locked`);
 * - the answer: the locked rows, each with the number of candidates (`signet_candidates`: more than
 *   the rows locked means some were held back by a limit or by $6) and of the jobs due, counted up to
 *   $6 + 1 (`signet_due`: more than the rows locked means some are left); when none is locked, one
 *   row of those two counts with every job column null.
 * The keys are checked identifiers and the maxima integers, written into the text (one statement
 * per definition).
 */
function fairLockStatement(limits: readonly KeyLimit[]): string {
  const value = (alias: string, key: string) => `(${alias}.p->>'${key}')`;
  const blocked = limits
    .map(
      ({ key, max }, i) =>
        `blocked_${i} AS (SELECT ${value('l', key)} AS v FROM live l GROUP BY 1 HAVING count(*) >= ${max})`,
    )
    .join(',\n    ');
  const notBlocked = limits
    .map(({ key }, i) => `AND NOT EXISTS (SELECT 1 FROM blocked_${i} b WHERE b.v = j.data->'payload'->>'${key}')`)
    .join('\n         ');
  const ranks = limits
    .map(({ key, max }, i) => {
      const from = i === 0 ? 'cand c' : `r_${i - 1} c WHERE c.ok`;
      return `r_${i} AS (
      SELECT c.id, c.next_run_at, c.priority, c.p,
             ${value('c', key)} IS NULL
             OR row_number() OVER (PARTITION BY ${value('c', key)} ORDER BY c.next_run_at, c.priority DESC, c.id)
                + (SELECT count(*) FROM live l WHERE ${value('l', key)} = ${value('c', key)}) <= ${max} AS ok
        FROM ${from})`;
    })
    .join(',\n    ');
  return `
    WITH live AS (
      SELECT data->'payload' AS p FROM ${JOBS_TABLE} WHERE name = $2 AND disabled = FALSE AND locked_at > $4
    ),
    ${blocked},
    cand AS (
      SELECT j.id, j.next_run_at, j.priority, j.data->'payload' AS p FROM ${JOBS_TABLE} j
       WHERE j.name = $2 AND j.disabled = FALSE
         AND ((j.locked_at IS NULL AND j.next_run_at <= $3) OR j.locked_at <= $4)
         ${notBlocked}
       ORDER BY j.next_run_at ASC NULLS LAST, j.priority DESC
       LIMIT 2 * $6
       FOR UPDATE SKIP LOCKED
    ),
    ${ranks},
    chosen AS (
      SELECT id FROM r_${limits.length - 1} WHERE ok ORDER BY next_run_at ASC NULLS LAST, priority DESC LIMIT $6
    ),
    locked AS (
      UPDATE ${JOBS_TABLE} j SET locked_at = $1, last_modified_by = $5
        FROM chosen WHERE j.id = chosen.id
      RETURNING j.*
    ),
    counts AS (
      SELECT (SELECT count(*) FROM cand)::int AS signet_candidates,
             (SELECT count(*) FROM (
                SELECT 1 FROM ${JOBS_TABLE}
                 WHERE name = $2 AND disabled = FALSE AND ((locked_at IS NULL AND next_run_at <= $3) OR locked_at <= $4)
                 LIMIT $6 + 1) d)::int AS signet_due
    )
    SELECT locked.*, counts.* FROM counts LEFT JOIN locked ON TRUE`;
}

/** The fair claim's statement per set of limits (text and prepared-statement name). */
const fairStatements = new Map<string, { name: string; text: string }>();

function fairStatement(limits: readonly KeyLimit[]): { name: string; text: string } {
  const id = limits.map((l) => `${l.key}:${l.max}`).join(',');
  let statement = fairStatements.get(id);
  if (!statement) {
    if (limits.length === 0) throw new TypeError('fair claim: no limits');
    for (const { key, max } of limits) {
      if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(key)) throw new TypeError(`fair claim: "${key}" is not a payload key name`);
      if (!(Number.isInteger(max) && max >= 1))
        throw new TypeError(`fair claim: the limit of ${key} must be an integer ≥ 1`);
    }
    statement = { name: `signet_jobs_lock_fair_${fairStatements.size}`, text: fairLockStatement(limits) };
    fairStatements.set(id, statement);
  }
  return statement;
}

/**
 * lockDueJobs with per-key limits (src/jobs/job-queue.ts `concurrencyPer`): locks up to `limit`
 * due jobs of `name` in Agenda's order, skipping those that would put a value of a limited payload
 * key over its maximum of jobs locked at once, counted over every instance (the table is shared).
 * Exact across instances: claims of one name run one at a time (a transaction-scoped advisory lock
 * on the name, taken before the claim statement, which then reads the locks as committed).
 * @returns the locked rows (whole, as lockDueJobs), `candidates`: due jobs the claim looked at
 *   (more than the rows: some were held back by a limit or by `limit`), and `due`: jobs due at the
 *   start, counted up to `limit + 1` (more than the rows: some are left, waiting for a place)
 */
export async function lockDueJobsFairly(
  pool: pg.Pool,
  options: Parameters<typeof lockDueJobs>[1] & { limits: readonly KeyLimit[] },
): Promise<{ rows: unknown[]; candidates: number; due: number }> {
  const statement = fairStatement(options.limits);
  return withPoolClient(pool, async (client, discard) => {
    let failed = true;
    try {
      // One round trip: the transaction and its lock (simple protocol; the name is a job name, quoted).
      const name = client.escapeLiteral(options.name);
      await client.query(`BEGIN; SELECT pg_advisory_xact_lock(${FAIR_CLAIM_LOCK_SPACE}, hashtext(${name}))`);
      const { rows } = await client.query<Record<string, unknown>>({
        name: statement.name,
        text: statement.text,
        values: lockValues(options),
      });
      await client.query('COMMIT');
      failed = false;
      return {
        rows: rows.filter((row) => row.id !== null).map(({ signet_candidates: _c, signet_due: _d, ...row }) => row),
        candidates: Number(rows[0]?.signet_candidates ?? 0),
        due: Number(rows[0]?.signet_due ?? 0),
      };
    } finally {
      // Closed rather than rolled back: the close ends the transaction, and a ROLLBACK sent into a
      // connection that stopped answering would wait out its own query timeout (a stop after a
      // black hole waited 10 s more for it).
      if (failed) discard();
    }
  });
}
