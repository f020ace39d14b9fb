/**
 * Where Agenda keeps the jobs: PostgreSQL (default, the service's own database, in a schema of
 * its own) or MongoDB (`JOBS_MONGODB_URL`). A store is opened and closed by src/jobs/job-queue.ts;
 * it hands Agenda a backend whose connection the store owns.
 */
import { randomUUID } from 'node:crypto';
import type { AgendaBackend, Job, JobParameters, JobRepository, NotificationChannel } from 'agenda';
import { PostgresBackend, PostgresJobRepository } from '@agendajs/postgres-backend';
import pg from 'pg';
import type { BaseLogger } from 'pino';
import { relayOutbox } from '../db/queries/outbox.ts';
import { logOutageOnce } from '../db/unavailable.ts';

/** The part of a pino logger (or Fastify's) the jobs use. */
export type JobLogger = Pick<BaseLogger, 'error' | 'warn' | 'info' | 'debug'>;

export interface JobStore {
  /** For `new Agenda({ backend })`: already connected; its connect() and disconnect() do nothing (see close()). */
  backend: AgendaBackend;
  repository: JobRepository;
  /**
   * Jobs running (locked) or due by now + `withinMs` milliseconds, on any instance, counted by
   * name (names with none are left out). Disabled jobs and jobs finished or failed for good are
   * not counted.
   */
  countPending(withinMs: number): Promise<Map<string, number>>;
  /**
   * PostgreSQL: stores new jobs in one statement and announces each on Agenda's channel (the
   * NOTIFY that makes a listening instance take it at once), without Agenda's look-up of the
   * key first. A job whose (name, uniqueKey) is already stored is not inserted; its stored id
   * is returned instead. MongoDB: absent (Agenda's own create and save are used).
   * @returns the job ids, in the order given
   */
  insertJobs?(jobs: NewJob[], source: string): Promise<string[]>;
  /**
   * PostgreSQL: insertJobs for one job, batched: the jobs enqueued in the same turn of the event
   * loop (e.g. a request's signature-request and event jobs) go in one statement.
   * @returns the job's id (the stored one when its key was already stored)
   */
  insertJob?(job: NewJob, source: string): Promise<string>;
  /**
   * PostgreSQL: asks Agenda to fill its queue of jobs named `name` (as a new-job notification
   * does, coalesced with them), e.g. when one of them finished and Agenda may lock another
   * (see job-queue.ts, lockLimit); only when more may be due (jobs locked ahead, or the last
   * lock statement full). Absent on MongoDB. Does nothing before Agenda subscribes.
   */
  refill?(name: string): void;
  /**
   * PostgreSQL: moves up to `limit` rows of the outbox table `outboxTable` (schema-qualified,
   * quoted) into the store and announces them, in one statement (src/db/queries/outbox.ts
   * relayOutbox). Absent on MongoDB (the queue moves them through Agenda, src/jobs/job-queue.ts).
   * @returns the rows moved
   */
  relayOutbox?(outboxTable: string, limit: number, source: string): Promise<number>;
  /** PostgreSQL: the pool, for the outbox statements of the queue (a count of the rows left). */
  pool?: pg.Pool;
  /** Renews the lock of a running job (locked_at = now); Agenda's Job.touch() otherwise. */
  renewLock(job: Job): Promise<void>;
  /**
   * Unlocks the jobs this store locked ahead for Agenda (see openPostgresJobStore) and has not
   * handed over yet; stop() calls it after Agenda stopped asking.
   */
  releaseLockedAhead(): Promise<void>;
  /** Closes the connection (pool or client). */
  close(): Promise<void>;
}

/** A job for JobStore.insertJobs: `data` as Agenda stores it ({payload, uniqueKey?}). */
export interface NewJob {
  name: string;
  data: { payload: unknown; uniqueKey?: string };
  nextRunAt: Date;
}

/** The PostgreSQL schema Agenda's table lives in: outside `public`, which Prisma's schema describes alone. */
export const DEFAULT_JOBS_SCHEMA = 'agenda';
/** Agenda's table inside that schema. */
const JOBS_TABLE = 'jobs';
/** Holds schema creation to one instance at a time (CREATE ... IF NOT EXISTS races otherwise). */
const SCHEMA_LOCK = 'signet.jobs.schema';

/** Stored job data is `{ payload, uniqueKey? }` (see job-queue.ts); this index makes a uniqueKey unique per job name. */
const UNIQUE_KEY_INDEX = `CREATE UNIQUE INDEX IF NOT EXISTS ${JOBS_TABLE}_unique_key_idx
  ON ${JOBS_TABLE} (name, (data->>'uniqueKey')) WHERE data ? 'uniqueKey'`;

/**
 * Opens Agenda's PostgreSQL store: a pg pool whose connections use `search_path = <schema>`,
 * so that the backend's unqualified table (`jobs`), its indexes and its trigger function land
 * in that schema (the backend quotes the table name, so `agenda.jobs` cannot be given as one).
 * Creates the schema, the table (the backend's own DDL) and the uniqueKey index if missing,
 * under an advisory lock.
 * @param options.schema a lower-case SQL identifier (default `agenda`)
 * @throws Error when PostgreSQL is unreachable or the role may not create the schema
 */
export async function openPostgresJobStore(options: {
  connectionString: string;
  schema?: string;
  logger: JobLogger;
  /** Pool size (default 10; one connection is held for LISTEN). */
  poolSize?: number;
}): Promise<JobStore> {
  const schema = options.schema ?? DEFAULT_JOBS_SCHEMA;
  if (!/^[a-z_][a-z0-9_]*$/.test(schema))
    throw new Error(`jobs schema: "${schema}" is not a lower-case SQL identifier`);
  const pool = new pg.Pool({
    ...withSearchPath(options.connectionString, schema),
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: 5000,
  });
  // An idle connection dropped by the server is replaced on next use; it must not crash the process.
  pool.on('error', (error) => options.logger.warn({ err: error }, 'jobs: idle PostgreSQL connection lost'));

  // ensureSchema false: the backend would also create a log table we do not use (Agenda's
  // `logging` stays off); a repository of its own creates the jobs table below, under the lock.
  const inner = new PostgresBackend({ pool, tableName: JOBS_TABLE, ensureSchema: false });
  // The LISTEN channel reconnects by itself; an 'error' event without a listener would throw.
  // It retries every 100 ms while the database is away: logged once per outage interval then.
  const logListenError = logOutageOnce((object, message) => options.logger.warn(object, message));
  inner.notificationChannel?.on('error', (error: Error) => logListenError(error, 'jobs: LISTEN connection error'));
  const listening = inner.notificationChannel && closableChannel(inner.notificationChannel);
  try {
    const client = await pool.connect();
    try {
      await client.query('SELECT pg_advisory_lock(hashtext($1))', [SCHEMA_LOCK]);
      try {
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${client.escapeIdentifier(schema)}`);
        // The backend's own DDL: table, columns added by later versions, indexes, updated_at trigger.
        await new PostgresJobRepository({ pool, tableName: JOBS_TABLE, ensureSchema: true }).connect();
        await client.query(UNIQUE_KEY_INDEX);
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtext($1))', [SCHEMA_LOCK]);
      }
    } finally {
      client.release();
    }
    await inner.connect();
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }

  // Agenda's channel name (its config is not in the NotificationChannel type).
  const channelName = (inner.notificationChannel as { config?: { channelName?: string } } | undefined)?.config
    ?.channelName;
  const repository = new LockAheadRepository(pool);
  // One batch per source (instance name): the statement stores it as last_modified_by.
  const insertBatches = new Map<string, (job: NewJob) => Promise<string>>();
  const channel = inner.notificationChannel && quietChannel(inner.notificationChannel);
  const jobsTable = `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(JOBS_TABLE)}`;
  return {
    backend: connectedBackend(inner, repository, channel?.channel),
    repository,
    pool,
    relayOutbox: async (outboxTable, limit, source) => {
      const { rows } = await pool.query<{ moved: number }>({
        ...relayOutbox({ jobs: jobsTable, outbox: outboxTable }),
        values: [limit, source, channelName ?? 'signet:jobs:unheard'],
      });
      return rows[0]?.moved ?? 0;
    },
    // Only when a fill could find more: otherwise a refill would be a lock statement for nothing.
    refill: (name) => {
      if (repository.mayHaveMore(name)) channel?.refill(name);
    },
    insertJobs: (jobs, source) => insertJobs(pool, jobs, source, channelName),
    insertJob: (job, source) => {
      let batch = insertBatches.get(source);
      if (!batch) {
        batch = batched((jobs: NewJob[]) => insertJobs(pool, jobs, source, channelName), {
          delayMs: 0,
          max: MAX_BATCH,
        });
        insertBatches.set(source, batch);
      }
      return batch(job);
    },
    renewLock: async (job) => {
      const lockedAt = new Date();
      job.attrs.lockedAt = lockedAt;
      await pool.query({
        name: 'signet_jobs_renew_lock',
        text: `UPDATE ${JOBS_TABLE} SET locked_at = $2 WHERE id = $1`,
        values: [String(job.attrs._id), lockedAt],
      });
    },
    releaseLockedAhead: () => repository.releaseLockedAhead(),
    async countPending(withinMs) {
      const result = await pool.query<{ name: string; n: number }>(
        `SELECT name, count(*)::int AS n FROM ${JOBS_TABLE}
          WHERE disabled = FALSE
            AND (locked_at IS NOT NULL OR next_run_at <= now() + $1 * interval '1 millisecond')
          GROUP BY name ORDER BY name`,
        [withinMs],
      );
      return new Map(result.rows.map((row) => [row.name, row.n]));
    },
    close: async () => {
      await repository.flushStateSaves();
      // Before the pool's end(), which waits for the LISTEN connection, however late it came.
      await listening?.close();
      await pool.end();
    },
  };
}

/** Most jobs (or job states) written by one batched statement. */
const MAX_BATCH = 200;

/**
 * Batches calls: the items passed while a batch is open are given to `run` together, once,
 * when it closes (after `delayMs` milliseconds from its first item; 0 = at the end of this turn
 * of the event loop, setImmediate) or when it holds `max` items. `run` answers one result per
 * item, in order; its failure fails every call of the batch.
 */
function batched<I, O>(
  run: (items: I[]) => Promise<O[]>,
  options: { delayMs: number; max: number },
): ((item: I) => Promise<O>) & { flush(): Promise<void> } {
  let open: { items: I[]; settle: { resolve(value: O): void; reject(error: unknown): void }[] } | undefined;
  let timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  const close = (): Promise<void> => {
    const batch = open;
    if (!batch) return Promise.resolve();
    open = undefined;
    if (timer) {
      if (options.delayMs > 0) clearTimeout(timer as NodeJS.Timeout);
      else clearImmediate(timer as NodeJS.Immediate);
      timer = undefined;
    }
    return run(batch.items).then(
      (results) =>
        batch.settle.forEach((s, i) => {
          s.resolve(results[i]!);
        }),
      (error: unknown) =>
        batch.settle.forEach((s) => {
          s.reject(error);
        }),
    );
  };
  const call = (item: I) =>
    new Promise<O>((resolve, reject) => {
      if (!open) {
        open = { items: [], settle: [] };
        timer =
          options.delayMs > 0 ? setTimeout(() => void close(), options.delayMs) : setImmediate(() => void close());
      }
      open.items.push(item);
      open.settle.push({ resolve, reject });
      if (open.items.length >= options.max) void close();
    });
  return Object.assign(call, { flush: close });
}

/**
 * Opens Agenda's MongoDB store (collection `agenda_jobs`) with a unique index on
 * (name, data.uniqueKey). MongoDB has no LISTEN/NOTIFY here: jobs are found by polling only.
 * @throws Error when MongoDB is unreachable
 */
export async function openMongoJobStore(options: { url: string }): Promise<JobStore> {
  // Loaded only when configured: the MongoDB driver is not needed otherwise.
  const { MongoBackend, MongoJobRepository } = await import('@agendajs/mongo-backend');
  const inner = new MongoBackend({ address: options.url, collection: 'agenda_jobs' });
  await inner.connect();
  const repository = inner.repository;
  try {
    if (repository instanceof MongoJobRepository) {
      await repository.collection.createIndex(
        { name: 1, 'data.uniqueKey': 1 },
        { name: 'signet_unique_key', unique: true, partialFilterExpression: { 'data.uniqueKey': { $exists: true } } },
      );
    }
  } catch (error) {
    await inner.disconnect().catch(() => undefined);
    throw error;
  }
  return {
    backend: connectedBackend(inner, repository, inner.notificationChannel),
    repository,
    renewLock: (job) => job.touch(),
    releaseLockedAhead: async () => undefined,
    async countPending(withinMs) {
      const horizon = Date.now() + withinMs;
      const { jobs } = await repository.queryJobs({ includeDisabled: false });
      const counts = new Map<string, number>();
      for (const job of jobs) {
        if (job.lockedAt || (job.nextRunAt && new Date(job.nextRunAt).getTime() <= horizon)) {
          counts.set(job.name, (counts.get(job.name) ?? 0) + 1);
        }
      }
      return counts;
    },
    close: () => inner.disconnect(),
  };
}

/**
 * The backend as Agenda sees it: already connected by the store. Agenda connects its backend
 * in its constructor without handling a failure (an unhandled rejection); connecting first,
 * where errors reach the caller, avoids that. The store closes the connection itself.
 */
function connectedBackend(
  inner: AgendaBackend,
  repository: JobRepository,
  notificationChannel: NotificationChannel | undefined,
): AgendaBackend {
  return {
    name: inner.name,
    repository,
    notificationChannel,
    logger: inner.logger,
    ownsConnection: false,
    connect: async () => undefined,
    disconnect: async () => undefined,
  };
}

/**
 * Makes the LISTEN channel closable for good. After a lost connection it reconnects by itself
 * (every 100 ms while the database is away, each attempt waiting up to the pool's connection
 * timeout); an attempt still under way when Agenda disconnects the channel at stop() would
 * complete afterwards and hold its connection forever, and the pool's end() would wait for it
 * forever: a stop() shortly after an outage never finished (test/database-outage.test.ts).
 * Once close() is called, no attempt starts, and one that completes lets its connection go.
 */
function closableChannel(channel: NotificationChannel): { close(): Promise<void> } {
  let closed = false;
  const connect = channel.connect.bind(channel);
  // The channel's reconnect timer calls this.connect(): this own property, not the prototype's.
  channel.connect = async () => {
    if (closed) return;
    await connect();
    if (closed) await channel.disconnect();
  };
  return {
    async close() {
      closed = true;
      await channel.disconnect();
    },
  };
}

/** pg pool settings for `connectionString` with `search_path` set to `schema` at connection start. */
function withSearchPath(connectionString: string, schema: string): pg.PoolConfig {
  const searchPath = `-c search_path=${schema}`;
  // pg lets the URL's own `options` parameter override the pool's: merge the two.
  let url: URL | undefined;
  try {
    url = new URL(connectionString);
  } catch {
    // key=value form: no options parameter to merge
  }
  const existing = url?.searchParams.get('options');
  if (!url || !existing) return { connectionString, options: searchPath };
  url.searchParams.delete('options');
  return { connectionString: url.toString(), options: `${existing} ${searchPath}` };
}

/**
 * $1: the jobs as JSON ([{id, name, nextRunAt, data, notification}]), $2: this instance's name,
 * $3: Agenda's channel. Columns as Agenda's own insert of a new job (PostgresJobRepository.saveJob:
 * type normal, priority 0, not disabled, not forked). The key's unique index (UNIQUE_KEY_INDEX)
 * is the conflict target, so a stored key inserts nothing and announces nothing.
 */
const INSERT_JOBS = `
  WITH input AS (
    SELECT (j->>'id')::uuid AS id, j->>'name' AS name, (j->>'nextRunAt')::timestamptz AS next_run_at, j->'data' AS data, j->>'notification' AS notification
      FROM jsonb_array_elements($1::jsonb) j
  ), inserted AS (
    INSERT INTO ${JOBS_TABLE} (id, name, priority, next_run_at, type, data, disabled, fork, last_modified_by)
    SELECT id, name, 0, next_run_at, 'normal', data, FALSE, FALSE, $2 FROM input
    ON CONFLICT (name, (data->>'uniqueKey')) WHERE data ? 'uniqueKey' DO NOTHING
    RETURNING id
  ), notified AS (
    -- One announcement per job name (its earliest job): a fill takes every due job of the name.
    SELECT pg_notify($3, first.notification) FROM (
      SELECT DISTINCT ON (input.name) input.notification FROM inserted JOIN input ON input.id = inserted.id ORDER BY input.name, input.next_run_at
    ) first
  )
  SELECT inserted.id::text AS id, (SELECT count(*) FROM notified) AS announced FROM inserted`;

/** $1: names, $2: unique keys (pairwise): the stored jobs holding those keys. */
const FIND_BY_KEY = `
  SELECT j.id::text AS id, j.name, j.data->>'uniqueKey' AS key
    FROM ${JOBS_TABLE} j JOIN unnest($1::text[], $2::text[]) AS k(name, key) ON j.name = k.name AND j.data->>'uniqueKey' = k.key
   WHERE j.data ? 'uniqueKey'`;

/**
 * JobStore.insertJobs on PostgreSQL: one statement inserts the jobs and NOTIFYs Agenda's channel
 * once per name of the jobs inserted (its earliest job), with the payload Agenda's own publish
 * sends (PostgresNotificationChannel.serializeNotification), so every listening instance fills
 * its queue of that name at once. Job ids are made here (random UUIDs, as the table's default)
 * so the notification can be written before the insert.
 */
async function insertJobs(
  pool: pg.Pool,
  jobs: NewJob[],
  source: string,
  channelName: string | undefined,
): Promise<string[]> {
  if (jobs.length === 0) return [];
  const timestamp = new Date().toISOString();
  const rows = jobs.map((job) => {
    const id = randomUUID();
    const nextRunAt = job.nextRunAt.toISOString();
    return {
      id,
      name: job.name,
      nextRunAt,
      data: job.data,
      notification: JSON.stringify({ jobId: id, jobName: job.name, nextRunAt, priority: 0, timestamp, source }),
    };
  });
  // With notifications off there is no channel: the scan finds the jobs (pg_notify to an unheard name is harmless).
  const { rows: inserted } = await pool.query<{ id: string }>({
    name: 'signet_jobs_insert',
    text: INSERT_JOBS,
    values: [JSON.stringify(rows), source, channelName ?? 'signet:jobs:unheard'],
  });
  const stored = new Set(inserted.map((r) => r.id));
  const ids = rows.map((r) => (stored.has(r.id) ? r.id : undefined));
  const missing = jobs.filter((_, i) => ids[i] === undefined);
  if (missing.length === 0) return ids as string[];
  // Keys already stored: their jobs' ids. A key whose job was inserted by a transaction that
  // committed after this statement began is read now, by a new statement.
  const { rows: existing } = await pool.query<{ id: string; name: string; key: string }>({
    name: 'signet_jobs_find_by_key',
    text: FIND_BY_KEY,
    values: [missing.map((j) => j.name), missing.map((j) => j.data.uniqueKey ?? null)],
  });
  const byKey = new Map(existing.map((r) => [`${r.name}\u0000${r.key}`, r.id]));
  return ids.map((id, i) => {
    if (id !== undefined) return id;
    const job = jobs[i]!;
    const found = job.data.uniqueKey === undefined ? undefined : byKey.get(`${job.name}\u0000${job.data.uniqueKey}`);
    if (!found) throw new Error(`jobs: job ${job.name} was neither inserted nor found by its key`);
    return found;
  });
}

/**
 * Milliseconds an end-of-run save waits for others to share its statement: a job's row stays
 * locked that much longer (no other instance takes it meanwhile; waitForIdle counts it).
 */
const STATE_SAVE_DELAY_MS = 3;

/** $1: the saves as JSON: the columns and values of PostgresJobRepository.saveJobState, per job. */
const SAVE_STATES = `
  UPDATE ${JOBS_TABLE} j
     SET locked_at = v.locked_at, next_run_at = v.next_run_at, last_run_at = v.last_run_at, progress = v.progress,
         fail_reason = v.fail_reason, fail_count = v.fail_count, failed_at = v.failed_at, last_finished_at = v.last_finished_at,
         last_modified_by = v.last_modified_by
    FROM jsonb_to_recordset($1::jsonb) AS v(id uuid, name text, locked_at timestamptz, next_run_at timestamptz, last_run_at timestamptz,
         progress real, fail_reason text, fail_count integer, failed_at timestamptz, last_finished_at timestamptz, last_modified_by text)
   WHERE j.id = v.id AND j.name = v.name
  RETURNING j.id::text AS id`;

/** Jobs locked per statement when Agenda asks for the next one (see LockAheadRepository). */
const LOCK_AHEAD = 20;

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

/**
 * Agenda's PostgreSQL repository with fewer statements per job (bench/submissions.ts, issue 4):
 *
 * - Agenda fills its queue by asking for the next job of a name, one locking UPDATE per job, until
 *   one finds none (or its lockLimit is reached). Here one UPDATE locks up to LOCK_AHEAD due jobs
 *   (same condition and order); the first is returned and the others handed over on the next
 *   asks, and when fewer than LOCK_AHEAD came back the ask after the last one, in the same fill,
 *   answers "none" without a statement (no job committed meanwhile is missed: the next fill, from
 *   its NOTIFY, a refill or the scan, looks). Jobs held ahead longer than a quarter of the lock
 *   lifetime are unlocked rather than handed over; those still held when Agenda stops are
 *   unlocked by releaseLockedAhead().
 * - Agenda saves a job's state when a run starts (the lock, last_run_at) and when it ends. The
 *   start save is skipped: the row keeps its lock (taken by the UPDATE above), and the end save
 *   writes every column the start save would have. Agenda saves with a lock held only at the
 *   start of a run and from Job.touch(), which Signet does not call (JobStore.renewLock renews).
 *   What changes: while a job runs, last_run_at and next_run_at show the previous run's values.
 * - End saves made within STATE_SAVE_DELAY_MS of each other are one UPDATE.
 */
class LockAheadRepository extends PostgresJobRepository {
  readonly #pool: pg.Pool;
  /**
   * Per job name: jobs locked and not handed over yet (locked at `lockedAt`, ms), and whether the
   * ask right after them (in the same fill: before the next turn of the event loop) gets none.
   */
  readonly #ahead = new Map<string, { jobs: JobParameters[]; lockedAt: number; noneNext: boolean }>();
  /** Job names whose last lock statement locked as many as it could (more may be due). */
  readonly #lastBatchFull = new Set<string>();

  constructor(pool: pg.Pool) {
    super({ pool, tableName: JOBS_TABLE, ensureSchema: false });
    this.#pool = pool;
  }

  override async getNextJobToRun(
    jobName: string,
    nextScanAt: Date,
    lockDeadline: Date,
    now?: Date,
    options?: { lastModifiedBy?: string },
  ): Promise<JobParameters | undefined> {
    const ahead = this.#ahead.get(jobName);
    if (ahead) {
      // Held a quarter of the lock lifetime already: give them back rather than hand over an old lock.
      const lifetime = Date.now() - lockDeadline.getTime();
      if (ahead.jobs.length > 0 && Date.now() - ahead.lockedAt > lifetime / 4) {
        this.#ahead.delete(jobName);
        await this.unlockJobs(ahead.jobs.map((j) => j._id!));
      } else {
        const next = ahead.jobs.shift();
        if (ahead.jobs.length === 0 && (!next || !ahead.noneNext)) this.#ahead.delete(jobName);
        if (next) return next;
        if (ahead.noneNext) return undefined; // the batch before was all there was
      }
    }
    const lockTime = now ?? new Date();
    const { rows } = await this.#pool.query({
      name: 'signet_jobs_lock',
      text: LOCK_JOBS,
      values: [lockTime, jobName, nextScanAt, lockDeadline, options?.lastModifiedBy ?? null, LOCK_AHEAD],
    });
    // rowToJob is private in the type, public in the class: Agenda's own row mapping.
    const toJob = (row: unknown) => (this as unknown as { rowToJob(row: unknown): JobParameters }).rowToJob(row);
    const jobs = rows.map(toJob).sort(byRunOrder);
    if (jobs.length < LOCK_AHEAD) this.#lastBatchFull.delete(jobName);
    else this.#lastBatchFull.add(jobName);
    const [first, ...rest] = jobs;
    if (!first) return undefined;
    const pending = this.#ahead.get(jobName);
    if (pending) {
      // Another fill locked a batch meanwhile: one reservoir, and no "none" (it is not known).
      pending.jobs.push(...rest);
      pending.noneNext = false;
      return first;
    }
    const entry = { jobs: rest, lockedAt: lockTime.getTime(), noneNext: jobs.length < LOCK_AHEAD };
    if (entry.jobs.length > 0 || entry.noneNext) this.#ahead.set(jobName, entry);
    if (entry.noneNext) {
      // Only for this fill: a later one (a notification, the scan, a refill) looks again.
      setImmediate(() => {
        entry.noneNext = false;
        if (entry.jobs.length === 0 && this.#ahead.get(jobName) === entry) this.#ahead.delete(jobName);
      });
    }
    return first;
  }

  /**
   * Whether due jobs of `name` may be waiting for Agenda's next fill: some are locked ahead, or
   * the last lock statement was full. When neither, every job due at the last look was handed
   * over, and a job stored since is announced by its own notification.
   */
  mayHaveMore(name: string): boolean {
    return (this.#ahead.get(name)?.jobs.length ?? 0) > 0 || this.#lastBatchFull.has(name);
  }

  /** End-of-run saves, written together (see the class comment). */
  readonly #saves = batched(
    (saves: { job: JobParameters; lastModifiedBy: string | null }[]) => this.#saveStates(saves),
    { delayMs: STATE_SAVE_DELAY_MS, max: MAX_BATCH },
  );

  override async saveJobState(job: JobParameters, options?: { lastModifiedBy?: string }): Promise<void> {
    if (job.lockedAt) return; // the start of a run (see the class comment)
    if (!job._id) throw new Error('Cannot save job state without job ID');
    const saved = await this.#saves({ job: { ...job }, lastModifiedBy: options?.lastModifiedBy ?? null });
    if (!saved)
      throw new Error(
        `job ${String(job._id)} (name: ${job.name}) cannot be updated in the database, maybe it does not exist anymore?`,
      );
  }

  /** Writes the end-of-run saves waiting for their batch now (before the pool closes). */
  flushStateSaves(): Promise<void> {
    return this.#saves.flush();
  }

  /** PostgresJobRepository.saveJobState's UPDATE for several jobs: whether each row was there. */
  async #saveStates(saves: { job: JobParameters; lastModifiedBy: string | null }[]): Promise<boolean[]> {
    // One row per job: a job saved twice in a batch (not expected) keeps its last save.
    const last = new Map(saves.map((s) => [String(s.job._id), s]));
    const rows = [...last.values()].map(({ job, lastModifiedBy }) => ({
      id: String(job._id),
      name: job.name,
      locked_at: job.lockedAt || null,
      next_run_at: job.nextRunAt || null,
      last_run_at: job.lastRunAt || null,
      progress: job.progress ?? null,
      fail_reason: job.failReason ?? null,
      fail_count: job.failCount ?? null,
      failed_at: job.failedAt || null,
      last_finished_at: job.lastFinishedAt || null,
      last_modified_by: lastModifiedBy,
    }));
    const { rows: updated } = await this.#pool.query<{ id: string }>({
      name: 'signet_jobs_save_states',
      text: SAVE_STATES,
      values: [JSON.stringify(rows)],
    });
    const found = new Set(updated.map((r) => r.id));
    return saves.map((s) => found.has(String(s.job._id)));
  }

  /** Unlocks the jobs locked ahead and not handed over (as Agenda unlocks its own at stop). */
  async releaseLockedAhead(): Promise<void> {
    const ids = [...this.#ahead.values()].flatMap((a) => a.jobs.map((j) => j._id!));
    this.#ahead.clear();
    if (ids.length > 0) await this.unlockJobs(ids);
  }
}

/** Agenda's order of due jobs: next_run_at ascending (none last), then priority descending. */
function byRunOrder(a: JobParameters, b: JobParameters): number {
  const at = (j: JobParameters) => (j.nextRunAt ? new Date(j.nextRunAt).getTime() : Number.POSITIVE_INFINITY);
  return at(a) - at(b) || (b.priority ?? 0) - (a.priority ?? 0);
}

/** Milliseconds between the first notification of a burst and the fill it starts. */
const FILL_DELAY_MS = 2;

/**
 * Agenda's notification channel with fewer statements and fills:
 * - no job state notifications (a NOTIFY per start, success and completion of every job):
 *   they re-emit Agenda's job events in other instances, and Signet listens to none;
 * - new-job notifications of one name are coalesced: a fill starts FILL_DELAY_MS after the first
 *   one, and while Agenda fills its queue for a name, those arriving for it wait and one fill
 *   follows (with the earliest run time among them), instead of one fill each, all racing for
 *   the same rows.
 */
function quietChannel(channel: NotificationChannel): { channel: NotificationChannel; refill(name: string): void } {
  type Notification = Parameters<Parameters<NotificationChannel['subscribe']>[0]>[0];
  // Agenda's subscription, coalesced; refill() goes through it too.
  let subscribed: ((notification: Notification) => Promise<void>) | undefined;
  const subscribe: NotificationChannel['subscribe'] = (handler) => {
    const waiting = new Map<string, Notification | null>();
    const coalesced = async (notification: Notification) => {
      const name = notification.jobName;
      if (waiting.has(name)) {
        const queued = waiting.get(name);
        const earlier = (n: Notification | null | undefined) =>
          n?.nextRunAt ? new Date(n.nextRunAt).getTime() : Number.NEGATIVE_INFINITY;
        if (!queued || earlier(notification) < earlier(queued)) waiting.set(name, notification);
        return;
      }
      waiting.set(name, notification);
      try {
        // A short wait first, so that jobs enqueued in a burst are locked by one statement.
        await new Promise((resolve) => setTimeout(resolve, FILL_DELAY_MS));
        for (let next = waiting.get(name); next; next = waiting.get(name)) {
          waiting.set(name, null);
          await handler(next);
        }
      } finally {
        waiting.delete(name);
      }
    };
    subscribed = coalesced;
    const unsubscribe = channel.subscribe(coalesced);
    return () => {
      if (subscribed === coalesced) subscribed = undefined;
      unsubscribe();
    };
  };
  // Methods bound once (Agenda reads them, and `state`, for every job).
  const bound = new Map<PropertyKey, { from: unknown; method: unknown }>();
  const proxy = new Proxy(channel, {
    get(target, property) {
      if (property === 'publishState' || property === 'subscribeState') return undefined;
      if (property === 'subscribe') return subscribe;
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      const known = bound.get(property);
      if (known?.from === value) return known.method;
      const method = (value as (...args: unknown[]) => unknown).bind(target);
      bound.set(property, { from: value, method });
      return method;
    },
  });
  const refill = (name: string) => {
    void subscribed?.({ jobId: '' as never, jobName: name, nextRunAt: null, priority: 0, timestamp: new Date() }).catch(
      () => undefined,
    );
  };
  return { channel: proxy, refill };
}
