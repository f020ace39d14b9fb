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
import {
  countPendingJobs,
  ensureJobsSchema,
  jobQueueStats,
  type JobNameStats,
  findJobsByKey,
  insertJobRows,
  JOBS_TABLE,
  type KeyLimit,
  lockDueJobs,
  lockDueJobsFairly,
  renewJobLock,
  saveJobStates,
  saveJobStatesHandingOn,
  type HandOn,
} from '../db/queries/jobs.ts';
import { relayOutboxRows } from '../db/queries/outbox.ts';
import { turnBatch, type TurnBatch } from '../db/turn-batch.ts';
import { logOutageOnce } from '../db/unavailable.ts';
import {
  closableChannel,
  JOBS_CHANNEL,
  newJobNotification,
  quietChannel,
  rowToJobParameters,
} from './agenda-adapter.ts';

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
  /** By name: jobs due and waiting, running, and the oldest due one's wait (for /metrics). */
  stats(): Promise<JobNameStats[]>;
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
  /**
   * PostgreSQL: from now on, jobs named `name` are claimed fairly: at most `max` locked at once per
   * value of each limit's payload key, over every instance (src/db/queries/jobs.ts
   * lockDueJobsFairly). Absent on MongoDB (not enforced there).
   */
  limitPerKey?(name: string, limits: readonly KeyLimit[]): void;
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

export type { KeyLimit };

/** A job for JobStore.insertJobs: `data` as Agenda stores it ({payload, uniqueKey?}). */
export interface NewJob {
  name: string;
  data: { payload: unknown; uniqueKey?: string };
  nextRunAt: Date;
}

/** The PostgreSQL schema Agenda's table lives in: outside `public`, which Prisma's schema describes alone. */
export const DEFAULT_JOBS_SCHEMA = 'agenda';

/** How long close() lets the job store's statements in flight answer before it cuts their connections, in ms. */
const CLOSE_GRACE_MS = 2000;

/** Longest a job-store statement may wait for its answer, in milliseconds (the pool's `query_timeout`). */
const JOB_STORE_QUERY_TIMEOUT_MS = 10_000;
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
  /** Pool size (default 10, DATABASE_POOL_SIZE; one connection is held for LISTEN). */
  poolSize?: number;
}): Promise<JobStore> {
  const schema = options.schema ?? DEFAULT_JOBS_SCHEMA;
  if (!/^[a-z_][a-z0-9_]*$/.test(schema))
    throw new Error(`jobs schema: "${schema}" is not a lower-case SQL identifier`);
  const pool = new pg.Pool({
    ...withSearchPath(options.connectionString, schema),
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: 5000,
    // The job store's statements are short (claims, saves, a page of due jobs); one that has no answer
    // for this long was sent into a dead or black-holed connection, and would otherwise hold its client
    // for ever: a stop then waits on pool.end() (test/database-outage.test.ts, the black hole).
    query_timeout: JOB_STORE_QUERY_TIMEOUT_MS,
  });
  // The connections lent out now, for close(): one that stopped answering is cut, not waited out.
  const lent = new Set<pg.PoolClient>();
  pool.on('acquire', (client) => lent.add(client));
  pool.on('release', (_error, client) => lent.delete(client));
  pool.on('remove', (client) => lent.delete(client as pg.PoolClient));
  // An idle connection dropped by the server is replaced on next use; it must not crash the process.
  pool.on('error', (error) => options.logger.warn({ err: error }, 'jobs: idle PostgreSQL connection lost'));

  // ensureSchema false: the backend would also create a log table we do not use (Agenda's
  // `logging` stays off); a repository of its own creates the jobs table below, under the lock.
  const inner = new PostgresBackend({ pool, tableName: JOBS_TABLE, channelName: JOBS_CHANNEL, ensureSchema: false });
  // The LISTEN channel reconnects by itself; an 'error' event without a listener would throw.
  // It retries every 100 ms while the database is away: logged once per outage interval then.
  const logListenError = logOutageOnce((object, message) => options.logger.warn(object, message));
  inner.notificationChannel?.on('error', (error: Error) => logListenError(error, 'jobs: LISTEN connection error'));
  const listening = inner.notificationChannel && closableChannel(inner.notificationChannel);
  try {
    // The backend's own DDL: table, columns added by later versions, indexes, updated_at trigger.
    await ensureJobsSchema(pool, schema, () =>
      new PostgresJobRepository({ pool, tableName: JOBS_TABLE, ensureSchema: true }).connect(),
    );
    await inner.connect();
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }

  // With notifications off there would be no channel: the scan
  // finds the jobs (pg_notify to an unheard name is harmless).
  const channelName = inner.notificationChannel ? JOBS_CHANNEL : 'signet:jobs:unheard';
  const repository = new LockAheadRepository(pool);
  // One batch per source (instance name): the statement stores it as last_modified_by.
  const insertBatches = new Map<string, TurnBatch<NewJob, string>>();
  const channel =
    inner.notificationChannel && quietChannel(inner.notificationChannel, (name) => repository.noteNew(name));
  // Fills asked for later (fairly claimed names: FAIR_REFILL_MS, FAIR_PROBE_MS), one timer per name.
  const later = new Map<string, { timer: NodeJS.Timeout; at: number }>();
  const refillIn = (name: string, ms: number) => {
    const at = Date.now() + ms;
    const pending = later.get(name);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      later.delete(name);
      channel?.refill(name);
    }, ms);
    timer.unref();
    later.set(name, { timer, at });
  };
  repository.onHeldBack = (name) => refillIn(name, FAIR_PROBE_MS);
  const jobsTable = `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(JOBS_TABLE)}`;
  return {
    backend: connectedBackend(inner, repository, channel?.channel),
    repository,
    pool,
    relayOutbox: (outboxTable, limit, source) =>
      relayOutboxRows(pool, { jobs: jobsTable, outbox: outboxTable }, { limit, source, channel: channelName }),
    // Only when a fill could find more: otherwise a refill would be a lock statement for nothing.
    refill: (name) => {
      if (!repository.mayHaveMore(name)) return;
      // A fairly claimed name's finished jobs handed their places on (held ahead): handed over now.
      if (repository.isFair(name) && !repository.holdsAhead(name)) {
        repository.freed(name);
        refillIn(name, FAIR_REFILL_MS);
      } else channel?.refill(name, repository.isFair(name));
    },
    insertJobs: (jobs, source) => insertJobs(pool, jobs, source, channelName),
    insertJob: (job, source) => {
      let batch = insertBatches.get(source);
      if (!batch) {
        batch = turnBatch((jobs: readonly NewJob[]) => insertJobs(pool, jobs, source, channelName), { max: MAX_BATCH });
        insertBatches.set(source, batch);
      }
      return batch.load(job);
    },
    renewLock: async (job) => {
      const lockedAt = new Date();
      job.attrs.lockedAt = lockedAt;
      await renewJobLock(pool, String(job.attrs._id), lockedAt);
    },
    releaseLockedAhead: () => repository.releaseLockedAhead(),
    limitPerKey: (name, limits) => repository.limitPerKey(name, limits),
    countPending: (withinMs) => countPendingJobs(pool, withinMs),
    stats: () => jobQueueStats(pool),
    close: async () => {
      for (const { timer } of later.values()) clearTimeout(timer);
      later.clear();
      await repository.flushStateSaves();
      // Before the pool's end(), which waits for the LISTEN connection, however late it came.
      await listening?.close();
      // The pool ends once its lent connections come back. Statements in flight get
      // CLOSE_GRACE_MS; a connection still out then stopped answering (a black hole, a half-open
      // socket): it is cut, as pg-pool cuts one that does not connect in time, so its statement
      // fails now instead of after its query_timeout (a stop after an outage waited 10 s for them).
      const ended = pool.end();
      const grace = setTimeout(() => {
        for (const client of lent)
          (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
      }, CLOSE_GRACE_MS);
      await ended.finally(() => clearTimeout(grace));
    },
  };
}

/** Most jobs (or job states) written by one batched statement. */
const MAX_BATCH = 200;

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
    // Agenda's query of every job, as countPending: MongoDB deployments are the small ones here
    // (no index of our own for this); the same rules as jobQueueStats.
    async stats() {
      const now = Date.now();
      const { jobs } = await repository.queryJobs({ includeDisabled: false });
      const byName = new Map<string, JobNameStats>();
      for (const job of jobs) {
        const nextRunAt = job.nextRunAt ? new Date(job.nextRunAt).getTime() : undefined;
        const due = !job.lockedAt && nextRunAt !== undefined && nextRunAt <= now;
        if (!job.lockedAt && !due) continue;
        const stats = byName.get(job.name) ?? { name: job.name, due: 0, running: 0, oldestDueSeconds: 0 };
        if (job.lockedAt) stats.running += 1;
        else {
          stats.due += 1;
          stats.oldestDueSeconds = Math.max(stats.oldestDueSeconds, (now - nextRunAt!) / 1000);
        }
        byName.set(job.name, stats);
      }
      return [...byName.values()];
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
 * JobStore.insertJobs on PostgreSQL: one statement inserts the jobs and NOTIFYs Agenda's channel
 * once per name of the jobs inserted (its earliest job), with the payload Agenda's own publish
 * sends (PostgresNotificationChannel.serializeNotification), so every listening instance fills
 * its queue of that name at once. Job ids are made here (random UUIDs, as the table's default)
 * so the notification can be written before the insert.
 */
async function insertJobs(
  pool: pg.Pool,
  jobs: readonly NewJob[],
  source: string,
  channelName: string,
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
      notification: newJobNotification({ id, name: job.name, nextRunAt, timestamp, source }),
    };
  });
  const stored = new Set(await insertJobRows(pool, rows, source, channelName));
  const ids = rows.map((r) => (stored.has(r.id) ? r.id : undefined));
  const missing = jobs.filter((_, i) => ids[i] === undefined);
  if (missing.length === 0) return ids as string[];
  // Keys already stored: their jobs' ids. A key whose job was inserted by a transaction that
  // committed after this statement began is read now, by a new statement.
  const existing = await findJobsByKey(
    pool,
    missing.map((j) => ({ name: j.name, uniqueKey: j.data.uniqueKey ?? null })),
  );
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

/** Jobs locked per statement when Agenda asks for the next one (see LockAheadRepository). */
const LOCK_AHEAD = 20;

/**
 * Milliseconds after a fair claim held jobs back for a limit before the next look, when nothing
 * else asks sooner. A claim looks at the due jobs in order: when the first ones are of a value
 * (an account) with room for only some of them, it takes those, and a job of another value behind
 * them is found by the next claim (the first value is at its limit then, so skipped). Jobs finishing
 * and new jobs ask for claims too; this bounds the wait when neither comes (one account's slow
 * receivers): another account's job starts within about this long. And when a claim found every due
 * job held back, the claims asked by notifications in the next half of it are skipped until a
 * place is freed (a job finishes without handing its place on) or the probe looks: a backlog of
 * values at their limits is not scanned again for every job stored meanwhile.
 */
const FAIR_PROBE_MS = 50;

/**
 * Milliseconds a fairly claimed name's fill waits after a job of it finished, so that the places
 * freed meanwhile are claimed by one statement and their jobs start together (their own statements
 * are then shared: src/db/turn-batch.ts). Without it, an account at its limit had one claim per
 * finished delivery, each starting one: bench:webhooks spent twice the statements per delivery.
 */
const FAIR_REFILL_MS = 3;

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
 * - Names given limits per payload key (limitPerKey: the job queue's `concurrencyPer`) are locked
 *   by lockDueJobsFairly instead, which skips the jobs of a value at its limit: such jobs stay due,
 *   unlocked. A fill asks again when a job of the name finishes while some are left (`due` above
 *   the rows), and FAIR_PROBE_MS after a claim that held jobs back (onHeldBack). And the end save
 *   of such a job hands its place on, in the same statement, to the next due job of its value of
 *   the finest key (an endpoint's next delivery: saveJobStatesHandingOn), held ahead here: an
 *   account at its limit goes on without a claim per finished job, and no limit is passed.
 *
 * It overrides only methods of Agenda's public JobRepository interface; what it assumes about
 * Agenda beyond that (the row mapping, the start and end saves) is assumptions 1, 4 and 5 of
 * src/jobs/agenda-adapter.ts, each checked by test/agenda-contract.test.ts.
 */
class LockAheadRepository extends PostgresJobRepository {
  readonly #pool: pg.Pool;
  /**
   * Per job name: jobs locked and not handed over yet (locked at `lockedAt`, ms), and whether the
   * ask right after them (in the same fill: before the next turn of the event loop) gets none.
   */
  readonly #ahead = new Map<
    string,
    { jobs: JobParameters[]; lockedAt: number; noneNext: boolean; handOns?: boolean }
  >();
  /** Job names whose last lock statement locked as many as it could (more may be due). */
  readonly #lastBatchFull = new Set<string>();
  /** Job names claimed fairly (limitPerKey), with their limits. */
  readonly #limits = new Map<string, readonly KeyLimit[]>();
  /** Fairly claimed names whose last claim found every due job held back, until when claims wait. */
  readonly #futileUntil = new Map<string, number>();
  /** Names with a job announced (NOTIFY) since their last claim. */
  readonly #news = new Set<string>();
  /** Set once the store stops (releaseLockedAhead): no more hand-ons. */
  #closing = false;
  /** Told when a fair claim held due jobs back for a limit (the store looks again soon). */
  onHeldBack?: (name: string) => void;

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
        // Hand-ons handed over: "none" for the rest of this fill only (as after a claim's last job).
        if (next && ahead.jobs.length === 0 && ahead.noneNext && ahead.handOns) {
          setImmediate(() => {
            if (this.#ahead.get(jobName) === ahead && ahead.jobs.length === 0) this.#ahead.delete(jobName);
          });
        }
        if (next) return next;
        // The batch before was all there was; after hand-ons, unless a job was announced since the last claim.
        if (ahead.noneNext && !(ahead.handOns && this.#news.has(jobName))) return undefined;
      }
    }
    const lockTime = now ?? new Date();
    const claim = {
      lockTime,
      name: jobName,
      nextScanAt,
      lockDeadline,
      lastModifiedBy: options?.lastModifiedBy ?? null,
      limit: LOCK_AHEAD,
    };
    const limits = this.#limits.get(jobName);
    // Everything due was held back for a limit a moment ago, and no place was freed since: the
    // probe looks again (FAIR_PROBE_MS), not every notification of a job of a value at its limit.
    if (limits && (this.#futileUntil.get(jobName) ?? 0) > Date.now()) return undefined;
    // This claim sees every job announced so far (announced once committed).
    this.#news.delete(jobName);
    const fair = limits ? await lockDueJobsFairly(this.#pool, { ...claim, limits }) : undefined;
    const rows = fair ? fair.rows : await lockDueJobs(this.#pool, claim);
    // Agenda's own row mapping (src/jobs/agenda-adapter.ts, assumption 1).
    const jobs = rows.map((row) => rowToJobParameters(this, row)).sort(byRunOrder);
    // Fairly claimed: due jobs left (held back for a limit) are asked for again when one finishes.
    const left = fair ? fair.due > jobs.length : jobs.length >= LOCK_AHEAD;
    if (left) this.#lastBatchFull.add(jobName);
    else this.#lastBatchFull.delete(jobName);
    if (fair && fair.candidates > jobs.length) this.onHeldBack?.(jobName);
    if (fair && jobs.length === 0 && fair.due > 0) {
      this.#futileUntil.set(jobName, Date.now() + FAIR_PROBE_MS / 2);
      this.onHeldBack?.(jobName);
    } else this.#futileUntil.delete(jobName);
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
  readonly #saves = turnBatch(
    (saves: readonly { job: JobParameters; lastModifiedBy: string | null }[]) => this.#saveStates(saves),
    { delayMs: STATE_SAVE_DELAY_MS, max: MAX_BATCH },
  );

  override async saveJobState(job: JobParameters, options?: { lastModifiedBy?: string }): Promise<void> {
    if (job.lockedAt) return; // the start of a run (see the class comment)
    if (!job._id) throw new Error('Cannot save job state without job ID');
    const saved = await this.#saves.load({ job: { ...job }, lastModifiedBy: options?.lastModifiedBy ?? null });
    if (!saved)
      throw new Error(
        `job ${String(job._id)} (name: ${job.name}) ` +
          `cannot be updated in the database, maybe it does not exist anymore?`,
      );
  }

  /** Whether jobs named `name` are claimed fairly (limitPerKey). */
  isFair(name: string): boolean {
    return this.#limits.has(name);
  }

  /** Claims jobs named `name` fairly from now on (JobStore.limitPerKey). */
  limitPerKey(name: string, limits: readonly KeyLimit[]): void {
    if (limits.length > 0) this.#limits.set(name, limits);
    else this.#limits.delete(name);
  }

  /** Writes the end-of-run saves waiting for their batch now (before the pool closes). */
  flushStateSaves(): Promise<void> {
    return this.#saves.flush();
  }

  /** PostgresJobRepository.saveJobState's UPDATE for several jobs: whether each row was there. */
  async #saveStates(saves: readonly { job: JobParameters; lastModifiedBy: string | null }[]): Promise<boolean[]> {
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
    const handOns = this.#closing ? [] : [...last.values()].flatMap(({ job }) => this.#handOnOf(job));
    if (handOns.length === 0) {
      const found = await saveJobStates(this.#pool, rows);
      return saves.map((s) => found.has(String(s.job._id)));
    }
    const lockTime = new Date();
    const { found, handed } = await saveJobStatesHandingOn(this.#pool, rows, handOns, {
      lockTime,
      lastModifiedBy: saves[0]!.lastModifiedBy,
    });
    this.#holdAhead(
      handed.map((row) => rowToJobParameters(this, row)),
      lockTime,
    );
    return saves.map((s) => found.has(String(s.job._id)));
  }

  /** The hand-on of a job that finished a run, when its name is claimed fairly and it has the finest key. */
  #handOnOf(job: JobParameters): HandOn[] {
    const limits = this.#limits.get(job.name);
    if (!limits || job.lockedAt) return [];
    const key = limits[0]!.key;
    const value = (job.data as { payload?: Record<string, unknown> } | undefined)?.payload?.[key];
    return value === undefined || value === null ? [] : [{ name: job.name, key, value: String(value) }];
  }

  /** Jobs locked for this instance outside a fill (hand-ons): held ahead, handed over at the next asks. */
  #holdAhead(jobs: JobParameters[], lockedAt: Date): void {
    for (const job of jobs) {
      const entry = this.#ahead.get(job.name);
      // The fill that hands them over asks no claim after them: the places they took are all that
      // finished (a job of another value is claimed by its own notification, a refill or a probe).
      if (entry) {
        entry.jobs.push(job);
        entry.jobs.sort(byRunOrder);
      } else this.#ahead.set(job.name, { jobs: [job], lockedAt: lockedAt.getTime(), noneNext: true, handOns: true });
    }
  }

  /** A job of `name` finished without handing its place on: a claim may find room again now. */
  freed(name: string): void {
    this.#futileUntil.delete(name);
  }

  /** A new job of `name` was announced: the next fill claims, even right after hand-ons. */
  noteNew(name: string): void {
    if (this.#limits.has(name)) this.#news.add(name);
  }

  /** Whether jobs of `name` are held ahead, ready to hand over without a statement. */
  holdsAhead(name: string): boolean {
    return (this.#ahead.get(name)?.jobs.length ?? 0) > 0;
  }

  /** Unlocks the jobs locked ahead and not handed over (as Agenda unlocks its own at stop). */
  async releaseLockedAhead(): Promise<void> {
    // Stopping: runs that end from now on hand no place on (nobody would run what they lock).
    this.#closing = true;
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
