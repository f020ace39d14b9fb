/**
 * Background jobs: Agenda 6 on the service's PostgreSQL (schema `agenda`, table `jobs`), or on
 * MongoDB when JOBS_MONGODB_URL is set (../shared/DESIGN.md, "Components").
 *
 * Jobs are persisted, so a restart loses none; several instances may share the store and each
 * job runs on one of them at a time (Agenda locks it). Side effects leave the service through
 * jobs recorded in the transaction that causes them (the outbox, src/jobs/outbox.ts), which
 * relayOutbox() moves into the store once it has committed, and every scan moves what a crash
 * left behind. A job locked by an instance that died is taken back once its lock lifetime (30 s
 * by default; a running job renews its lock every third of it) has passed.
 *
 * Handlers must be idempotent. A job can run more than once: when an instance dies (or stop()
 * times out) while running it, another instance runs it again once the lock is released or has
 * expired; a retry after a failure runs the whole handler again. Record what was done (e.g. a
 * sent_at column, a delivery row) and check it first.
 *
 * A failure is permanent or transient (issue 12: "a job that cannot succeed stops, records why").
 * An AppError of a client-error code (VALIDATION, NOT_FOUND, … — bad data, which another run
 * would meet again) is permanent: the job stops at once. Anything else (the database or a
 * provider down, a timeout) is transient and retried per the definition's bounded policy. When a
 * job gives up, either way, the definition's `onGiveUp` records why where users can see it.
 *
 * On PostgreSQL the store keeps Agenda's statements few (src/jobs/job-store.ts): the jobs enqueued
 * in one turn of the event loop are one INSERT (with one NOTIFY per name), due jobs are locked up
 * to 20 per statement, end-of-run saves a few milliseconds apart share one UPDATE, and no job
 * state NOTIFYs are sent. Enqueue side by side (Promise.all) to share a statement.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { Agenda, type Job } from 'agenda';
import pg from 'pg';
import type { JobNameStats } from '../db/queries/jobs.ts';
import { countOutboxRows, moveOutboxRowsThrough } from '../db/queries/outbox.ts';
import { AppError } from '../errors.ts';
import { logOutageOnce } from '../db/unavailable.ts';
import { runningJobsOf } from './agenda-adapter.ts';
import { type KeyLimit, openMongoJobStore, openPostgresJobStore, type JobLogger, type JobStore } from './job-store.ts';
import { settleAgendaDebugColors } from './quiet-debug.ts';

export type { JobLogger, KeyLimit };

/** What a handler learns about the run besides the job's data. */
export interface JobRun {
  /** 0 on the first run, 1 on the first retry, ... */
  attempt: number;
  /** The job's id in the store (a UUID on PostgreSQL, an ObjectId string on MongoDB). */
  id: string;
}

/**
 * Runs one job. Must be idempotent (see the module comment). A thrown error fails the run: it
 * is retried per the definition's retry policy, and logged (error level on the final failure).
 * `data` is what was enqueued after a round trip through JSON (a Date arrives as a string).
 */
export type JobHandler<T> = (data: T, job: JobRun) => Promise<void>;

export interface RetryPolicy {
  /** Runs in all, the first included (1 = no retry). */
  maxAttempts: number;
  /**
   * Milliseconds to wait after failed run `attempt` (0-based) before the next run; null stops
   * retrying early. Example, the webhook rule (2^attempt minutes): `(a) => 2 ** a * 60_000`.
   */
  delayMs: (attempt: number) => number | null;
}

export interface DefineJobOptions<T = unknown> {
  /** Runs of this job at once per instance (default 5). */
  concurrency?: number;
  /**
   * Fairness between the values of payload keys (issue 23, webhook deliveries: per endpoint, then
   * per account): at most `max` jobs of this name locked (running, or locked to run next) at once
   * per value of the payload key `key`, counted over every instance, in the order given (each limit
   * is applied to the jobs the limits before it let through); a job whose payload lacks the key is
   * not limited by it. The claim itself skips the jobs of a value at its limit, so they hold no run
   * of `concurrency` while they wait, and jobs of other values behind them start at once.
   * PostgreSQL store only (src/db/queries/jobs.ts lockDueJobsFairly); on MongoDB not enforced.
   */
  concurrencyPer?: readonly KeyLimit[];
  /** Default: one run, no retry. Permanent failures (isPermanentJobError) are never retried. */
  retry?: RetryPolicy;
  /**
   * Called once when the job gives up: after a permanent failure, or a transient one on the last
   * attempt the retry policy allows. Records the reason where users see it (the completion job:
   * the submission's completion_error and a `fail_completion` event). Its own failure is logged,
   * not thrown: the job has failed either way.
   */
  onGiveUp?: (data: T, failure: JobFailure) => Promise<void>;
}

/** Why a job gave up. */
export interface JobFailure {
  error: unknown;
  /** The run that failed last, 0-based. */
  attempt: number;
  /** True for bad data (isPermanentJobError), false when the retries ran out. */
  permanent: boolean;
}

export interface EnqueueOptions {
  /** Run at or after this time (default: now). */
  at?: Date;
  /**
   * Idempotency key, unique per job name: enqueueing a name and key that already exist returns
   * the existing job (whatever its state) and changes nothing, so an "after commit" enqueue may
   * safely be repeated. Keys are kept as long as the job row is (cancel() frees them).
   */
  uniqueKey?: string;
}

export interface WaitForIdleOptions {
  /** Give up after this many milliseconds (default 10,000). */
  timeoutMs?: number;
  /** Also wait for jobs due within this many milliseconds from each check (default 0: due now). */
  withinMs?: number;
}

export interface JobQueue {
  /**
   * Registers the handler of jobs named `name` on this instance (before or after start()).
   * Every instance that should run such jobs defines it; one without it leaves them to others.
   */
  define<T>(name: string, handler: JobHandler<T>, options?: DefineJobOptions<T>): void;
  /**
   * Stores a job to run at `options.at` (default now) and resolves to its id. Works whether or
   * not this queue is started: any started instance that defined `name` runs it.
   * @param data JSON-serialisable
   * @throws TypeError for an invalid `at`; the store's error when it is unreachable
   */
  enqueue<T>(name: string, data: T, options?: EnqueueOptions): Promise<string>;
  /**
   * Removes the jobs named `name` whose data contains `filter` (JSON containment: `{submissionId: 7}`
   * matches `{submissionId: 7, at: ...}`), whatever their state; a run in progress finishes but
   * is not recorded. Frees their uniqueKeys. Resolves to the number removed.
   */
  cancel(name: string, filter: Record<string, unknown>): Promise<number>;
  /** Connects (creating the store's schema if missing) and starts running due jobs. Idempotent. */
  start(): Promise<void>;
  /**
   * Stops taking jobs and releases the ones locked but not started; waits for the runs in
   * progress up to `timeoutMs` (default: the queue's stopTimeoutMs), then releases those still
   * running so that another instance runs them again now (handlers are idempotent), and closes
   * the connection. A later start() reconnects.
   */
  stop(options?: { timeoutMs?: number }): Promise<void>;
  /**
   * Moves the jobs recorded in the outbox (src/jobs/outbox.ts) into the store now: call it once
   * the transaction that recorded them has committed. The calls of one turn of the event loop
   * share one statement; whatever this leaves (a failure is logged, not thrown) the next scan
   * moves. Any instance moves any row, so a row is moved once whoever calls.
   */
  relayOutbox(): void;
  /**
   * Resolves once no job is running or due (within `withinMs`) in the store, and the outbox is
   * empty, whatever its name and whichever instance runs it. For tests: enqueue, waitForIdle(),
   * then check the effects.
   * @throws Error after `timeoutMs`, naming the jobs still pending (and those of them this queue does not define)
   */
  waitForIdle(options?: WaitForIdleOptions): Promise<void>;
  /**
   * The queue as every instance sees it (the store is shared), for /metrics: by job name the jobs
   * due and waiting, running, and the oldest due one's wait; the outbox rows not moved yet; and
   * the job store's PostgreSQL pool (absent on MongoDB). Connects if not connected.
   */
  stats(): Promise<JobQueueStats>;
}

/** What JobQueue.stats() reports. */
export interface JobQueueStats {
  jobs: JobNameStats[];
  /** Outbox rows committed and not yet moved into the store. */
  outboxRows: number;
  /** The job store's pool (connections open, idle, and requests waiting for one); absent on MongoDB. */
  pool?: { total: number; idle: number; waiting: number };
}

export interface JobQueueOptions {
  /** postgresql:// URL of the service's database (used unless mongodbUrl is set). */
  connectionString: string;
  /** mongodb:// URL: keep the jobs in MongoDB instead (JOBS_MONGODB_URL). */
  mongodbUrl?: string | undefined;
  /** pino (or Fastify's) logger. */
  logger: JobLogger;
  /**
   * Milliseconds between scans for due jobs (default 1000). On PostgreSQL a job enqueued for
   * now starts at once (LISTEN/NOTIFY); the scan finds scheduled jobs and retries, which run
   * on time when their delay exceeds this interval and at the next scan otherwise. The outbox
   * is scanned as often (rows a crash left between a commit and its relayOutbox()).
   */
  processEvery?: number;
  /** This instance's name, stored on the jobs it locks (default: host:pid:random). */
  name?: string;
  /**
   * Milliseconds after which a lock is considered abandoned (default 30 s;
   * JOBS_LOCK_LIFETIME_SECONDS): a job locked by an instance that died runs elsewhere (or on the
   * restarted instance) after this long. While a handler runs, its instance renews the lock every
   * third of this, so a run may last longer than the lifetime without being cancelled or run twice.
   */
  lockLifetimeMs?: number;
  /** Default of stop()'s timeoutMs, in milliseconds (default 10,000). */
  stopTimeoutMs?: number;
  /** PostgreSQL schema of Agenda's table (default `agenda`). */
  schema?: string;
  /** Connections of the job store's pool (PostgreSQL; default 10, DATABASE_POOL_SIZE). */
  poolSize?: number;
}

/** Stored in Agenda's `data`: the caller's data and the idempotency key beside it. */
interface StoredData {
  payload: unknown;
  uniqueKey?: string;
}

interface Definition {
  handler: JobHandler<never>;
  options: DefineJobOptions<never>;
}

interface Connection {
  agenda: Agenda;
  store: JobStore;
  /** The pool the outbox statements run on: the store's (PostgreSQL), else one of the queue's own. */
  outboxPool: pg.Pool;
}

const DEFAULT_PROCESS_EVERY_MS = 1000;
const DEFAULT_STOP_TIMEOUT_MS = 10_000;
const IDLE_POLL_MS = 25;
/** Agenda's default concurrency per job name. */
const AGENDA_DEFAULT_CONCURRENCY = 5;
/**
 * Jobs running at once in an instance, all names together (Agenda's default is 20). Above the
 * sum of the per-name concurrencies (webhook deliveries WEBHOOK_CONCURRENCY: 60 by default, at most
 * 200; signature requests 10, dispatch 10, completion 2, the others 5 each), so that one busy kind
 * never holds the others back.
 */
const MAX_CONCURRENCY = 256;
/**
 * Default lock lifetime: work a dead instance held is taken back within this (issue 12: within a
 * minute of a restart), at the cost of one renewal per running job every 10 s.
 */
const DEFAULT_LOCK_LIFETIME_MS = 30_000;
/** Outbox rows moved per statement. */
const OUTBOX_BATCH = 500;

/**
 * Creates a job queue; nothing connects until start(), enqueue(), cancel() or waitForIdle().
 * See {@link JobQueue} for each operation and the module comment for the guarantees.
 */
export function createJobQueue(options: JobQueueOptions): JobQueue {
  settleAgendaDebugColors();
  const { logger } = options;
  const instanceName = options.name ?? `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const definitions = new Map<string, Definition>();
  // The lock renewal of each run in progress; stop() ends it before releasing the job.
  const keepAlives = new Map<Job, KeepAlive>();
  const lockLifetimeMs = options.lockLifetimeMs ?? DEFAULT_LOCK_LIFETIME_MS;
  const processEvery = options.processEvery ?? DEFAULT_PROCESS_EVERY_MS;
  const outboxTable = outboxTableOf(options.connectionString);
  let connection: Promise<Connection> | undefined;
  // start() and stop() run one after the other, in call order.
  let lifecycle: Promise<unknown> = Promise.resolve();
  const serially = <R>(step: () => Promise<R>): Promise<R> => {
    const next = lifecycle.then(step, step);
    lifecycle = next.catch(() => undefined);
    return next;
  };

  const connect = (): Promise<Connection> => {
    connection ??= (async () => {
      const store = options.mongodbUrl
        ? await openMongoJobStore({ url: options.mongodbUrl })
        : await openPostgresJobStore({
            connectionString: options.connectionString,
            schema: options.schema,
            logger,
            poolSize: options.poolSize,
          });
      const agenda = new Agenda({
        backend: store.backend,
        name: instanceName,
        processEvery,
        maxConcurrency: MAX_CONCURRENCY,
        defaultLockLifetime: lockLifetimeMs,
      });
      // Scans fail every processEvery while the database is away: logged once per outage interval then.
      const logQueueError = logOutageOnce((object, message) => logger.error(object, message));
      agenda.on('error', (error: Error) => logQueueError(error, 'jobs: queue error'));
      // With a lockLimit (see register), a finished job frees a place: Agenda is asked to fill it.
      if (store.refill) agenda.on('complete', (job: Job) => store.refill!(job.attrs.name));
      for (const [name, definition] of definitions) register(agenda, store, name, definition);
      await agenda.ready;
      const outboxPool = store.pool ?? ownOutboxPool(options.connectionString, logger);
      return { agenda, store, outboxPool };
    })();
    // A failed attempt is not kept: the next call tries again.
    connection.catch(() => {
      connection = undefined;
    });
    return connection;
  };

  const register = (agenda: Agenda, store: JobStore, name: string, { handler, options: defined }: Definition) => {
    const retry = defined.retry;
    store.limitPerKey?.(name, defined.concurrencyPer ?? []);
    agenda.define(
      name,
      async (job: Job<StoredData>) => {
        const attempt = job.attrs.failCount ?? 0;
        const id = String(job.attrs._id);
        const keepAlive = startKeepAlive(
          () => store.renewLock(job),
          lockLifetimeMs,
          (error) => logger.warn({ err: error, job: name, jobId: id }, 'jobs: could not renew a lock'),
        );
        keepAlives.set(job, keepAlive);
        try {
          await handler(job.attrs.data?.payload as never, { attempt, id });
        } catch (error) {
          const permanent = isPermanentJobError(error);
          const delay = permanent ? null : retryDelay(retry, attempt);
          const context = { err: error, job: name, jobId: id, attempt, permanent };
          if (delay === null) {
            logger.error(
              context,
              `job ${name} failed (attempt ${attempt + 1}${permanent ? ', permanently' : ''}); giving up`,
            );
            await defined
              .onGiveUp?.(job.attrs.data?.payload as never, { error, attempt, permanent })
              .catch((recordError: unknown) =>
                logger.error(
                  { err: recordError, job: name, jobId: id },
                  `job ${name}: could not record why it gave up`,
                ),
              );
          } else {
            logger.warn({ ...context, retryInMs: delay }, `job ${name} failed (attempt ${attempt + 1}); retrying`);
          }
          throw error;
        } finally {
          // Before Agenda records the outcome: a renewal landing after it would lock the job again.
          keepAlives.delete(job);
          await keepAlive.stop();
        }
      },
      {
        ...(defined.concurrency ? { concurrency: defined.concurrency } : {}),
        // Agenda locks every due job into its own queue, which it scans whole for each run
        // (quadratic in a backlog); at most twice the concurrency here, refilled as jobs finish.
        ...(store.refill ? { lockLimit: 2 * (defined.concurrency ?? AGENDA_DEFAULT_CONCURRENCY) } : {}),
        // Agenda counts failures from 1 (ctx.attempt = failures so far); our attempts count runs from 0.
        ...(retry
          ? {
              backoff: (ctx: { attempt: number; error: unknown }) =>
                isPermanentJobError(ctx.error) ? null : retryDelay(retry, ctx.attempt - 1),
            }
          : {}),
      },
    );
  };

  /** Moves the outbox into the store until a statement finds less than a full batch. */
  const moveOutbox = async (): Promise<void> => {
    const { store, outboxPool } = await connect();
    for (;;) {
      const moved = store.relayOutbox
        ? await store.relayOutbox(outboxTable, OUTBOX_BATCH, instanceName)
        : // MongoDB: Agenda's save; a row without a key gets `outbox:<id>`, so that rows stored
          // again after a failure before the commit make no second job.
          await moveOutboxRowsThrough(outboxPool, outboxTable, OUTBOX_BATCH, (row) =>
            queue.enqueue(row.name, row.data, { at: row.runAt, uniqueKey: row.uniqueKey ?? `outbox:${row.id}` }),
          );
      if (moved < OUTBOX_BATCH) return;
    }
  };
  // A relay fails at every scan while the database is away: logged once per outage interval then.
  const logRelayError = logOutageOnce((object, message) => logger.warn(object, message));
  // One relay at a time per instance; calls meanwhile ask for one more after it (which sees
  // every row committed before it starts), and the calls of one turn share a run.
  let relayRun: Promise<void> | undefined;
  let relayScheduled = false;
  let relayAgain = false;
  // Set by stop(): no relay starts after it, so a stop waits for the one in flight only (each
  // relay after a lost connection could wait its own connect timeout; the next start moves the rest).
  let relayStopped = false;
  const relay = (): void => {
    if (relayStopped) return;
    if (relayRun) {
      relayAgain = true;
      return;
    }
    if (relayScheduled) return;
    relayScheduled = true;
    setImmediate(() => {
      relayScheduled = false;
      if (relayStopped) return;
      relayRun = moveOutbox()
        .catch((error: unknown) =>
          logRelayError(error, 'jobs: could not move the outbox into the job store; the next scan will'),
        )
        .finally(() => {
          relayRun = undefined;
          if (relayAgain && !relayStopped) {
            relayAgain = false;
            relay();
          }
        });
    });
  };
  let sweep: NodeJS.Timeout | undefined;

  const queue: JobQueue = {
    relayOutbox: relay,

    define(name, handler, defineOptions = {}) {
      const retry = defineOptions.retry;
      if (retry && !(Number.isInteger(retry.maxAttempts) && retry.maxAttempts >= 1)) {
        throw new TypeError(`job ${name}: retry.maxAttempts must be an integer ≥ 1`);
      }
      const definition: Definition = {
        handler: handler as JobHandler<never>,
        options: defineOptions as DefineJobOptions<never>,
      };
      definitions.set(name, definition);
      // Already connected: register now too (a connection in progress registers every definition).
      void connection?.then(({ agenda, store }) => register(agenda, store, name, definition)).catch(() => undefined);
    },

    async enqueue(name, data, enqueueOptions = {}) {
      const at = enqueueOptions.at ?? new Date();
      if (!(at instanceof Date) || Number.isNaN(at.getTime()))
        throw new TypeError(`job ${name}: "at" is not a valid date`);
      const { agenda, store } = await connect();
      const { uniqueKey } = enqueueOptions;
      const stored: StoredData = uniqueKey === undefined ? { payload: data } : { payload: data, uniqueKey };
      // PostgreSQL: one statement for the jobs enqueued in this turn of the event loop (insert
      // unless the key is stored, and NOTIFY); MongoDB: Agenda's save.
      if (store.insertJob) return store.insertJob({ name, data: stored, nextRunAt: at }, instanceName);
      const job = agenda.create(name, stored).schedule(at);
      if (uniqueKey !== undefined) job.unique({ 'data.uniqueKey': uniqueKey }, { insertOnly: true });
      try {
        await job.save();
      } catch (error) {
        // Agenda looks for the key, then inserts: two concurrent enqueues of one key can both
        // insert, and the store's unique index refuses the second. The first one's job is the job.
        if (uniqueKey === undefined || !isDuplicateKeyError(error)) throw error;
        const { jobs } = await agenda.queryJobs({ name, data: { uniqueKey }, limit: 1 });
        if (!jobs[0]) throw error;
        return String(jobs[0]._id);
      }
      return String(job.attrs._id);
    },

    async cancel(name, filter) {
      const { agenda } = await connect();
      return agenda.cancel({ name, data: { payload: filter } });
    },

    start() {
      return serially(async () => {
        const { agenda } = await connect();
        relayStopped = false;
        await agenda.start();
        // The outbox rows a crash left (committed, never relayed): now, then at every scan.
        sweep ??= setInterval(relay, processEvery);
        sweep.unref();
        relay();
      });
    },

    stop(stopOptions = {}) {
      return serially(async () => {
        const current = connection;
        if (!current) return;
        const opened = await current.catch(() => undefined);
        if (!opened) return;
        const { agenda, store, outboxPool } = opened;
        clearInterval(sweep);
        sweep = undefined;
        const running = runningJobsOf(agenda);
        // Stops the scans and unlocks the jobs locked but not started; runs in progress go on.
        await agenda.stop(false);
        await store.releaseLockedAhead();
        const timeoutMs = stopOptions.timeoutMs ?? options.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS;
        const deadline = Date.now() + timeoutMs;
        while (running().length > 0 && Date.now() < deadline) await sleep(IDLE_POLL_MS);
        const left = running();
        if (left.length > 0) {
          logger.warn(
            { jobs: left.map((job) => ({ job: job.attrs.name, jobId: String(job.attrs._id) })), timeoutMs },
            'jobs: still running at stop; released for another instance to run again',
          );
          for (const job of left) {
            await keepAlives.get(job)?.stop();
            await store.repository
              .saveJobState(
                { ...job.attrs, lockedAt: undefined, nextRunAt: new Date() },
                { lastModifiedBy: instanceName },
              )
              .catch((error: unknown) =>
                logger.error({ err: error, jobId: String(job.attrs._id) }, 'jobs: could not release a job'),
              );
          }
        }
        connection = undefined;
        // A relay in flight ends before the pools close (what it leaves, the next start moves).
        relayStopped = true;
        relayAgain = false;
        while (relayRun || relayScheduled) await (relayRun ?? sleep(1));
        await store.close();
        if (outboxPool !== store.pool) await outboxPool.end();
      });
    },

    async stats() {
      const { store, outboxPool } = await connect();
      const [jobs, outboxRows] = await Promise.all([store.stats(), countOutboxRows(outboxPool, outboxTable)]);
      const pool = store.pool;
      return {
        jobs,
        outboxRows,
        ...(pool ? { pool: { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount } } : {}),
      };
    },

    async waitForIdle(waitOptions = {}) {
      const timeoutMs = waitOptions.timeoutMs ?? 10_000;
      const withinMs = waitOptions.withinMs ?? 0;
      const { store, outboxPool } = await connect();
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        // The outbox first: a row moved meanwhile is then counted as a job (a move is one statement).
        const waiting = await countOutboxRows(outboxPool, outboxTable);
        const pending = await store.countPending(withinMs);
        if (waiting > 0) {
          pending.set('outbox', waiting);
          relay();
        }
        if (pending.size === 0) return;
        if (Date.now() >= deadline) {
          const list = [...pending].map(
            ([name, n]) =>
              `${name} ×${n}${definitions.has(name) || name === 'outbox' ? '' : ' (not defined on this queue)'}`,
          );
          throw new Error(`waitForIdle: jobs still running or due after ${timeoutMs} ms: ${list.join(', ')}`);
        }
        await sleep(IDLE_POLL_MS);
      }
    },
  };
  return queue;
}

/**
 * The outbox table of the service's database, schema-qualified and quoted: in the schema Prisma
 * puts its tables in (the URL's `?schema=`, default public; src/db/migrate.ts reads it the same way).
 */
function outboxTableOf(connectionString: string): string {
  let schema = 'public';
  try {
    schema = new URL(connectionString).searchParams.get('schema') || 'public';
  } catch {
    // key=value form: the default schema
  }
  return `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier('outbox')}`;
}

/** A small pool for the outbox when the jobs live outside PostgreSQL (MongoDB). */
function ownOutboxPool(connectionString: string, logger: JobLogger): pg.Pool {
  const pool = new pg.Pool({ connectionString, max: 2, connectionTimeoutMillis: 5000, query_timeout: 10_000 });
  pool.on('error', (error) => logger.warn({ err: error }, 'jobs: idle PostgreSQL connection of the outbox lost'));
  return pool;
}

/**
 * Whether a job's error is permanent — bad data that another run would meet again — so the job
 * stops instead of retrying: an AppError whose code answers a client error (4xx: VALIDATION,
 * NOT_FOUND, FORBIDDEN, BAD_REQUEST, PAYLOAD_TOO_LARGE, UNAUTHENTICATED), except RATE_LIMITED.
 * Everything else — UNAVAILABLE, database and network errors, anything unexpected — is transient.
 */
export function isPermanentJobError(error: unknown): boolean {
  return error instanceof AppError && error.status >= 400 && error.status < 500 && error.code !== 'RATE_LIMITED';
}

/** Milliseconds before the run after failed run `attempt` (0-based), or null when that was the last. */
function retryDelay(retry: RetryPolicy | undefined, attempt: number): number | null {
  if (!retry || attempt + 1 >= retry.maxAttempts) return null;
  const delay = retry.delayMs(attempt);
  return delay === null ? null : Math.max(0, delay);
}

/** PostgreSQL unique_violation or MongoDB E11000. */
function isDuplicateKeyError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 11000;
}

interface KeepAlive {
  /** Stops renewing; resolves once a renewal in flight has landed. */
  stop(): Promise<void>;
}

/**
 * Renews a running job's lock (`renew`: JobStore.renewLock, locked_at = now) every third of the
 * lock lifetime, so that neither this instance (Agenda cancels a run whose lock expired) nor
 * another (which takes jobs whose lock expired) treats a long run as abandoned.
 */
function startKeepAlive(
  renew: () => Promise<void>,
  lockLifetimeMs: number,
  onError: (error: unknown) => void,
): KeepAlive {
  let inFlight: Promise<void> | undefined;
  const timer = setInterval(
    () => {
      inFlight ??= renew()
        .catch(onError)
        .finally(() => {
          inFlight = undefined;
        });
    },
    Math.max(50, Math.floor(lockLifetimeMs / 3)),
  );
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await inFlight;
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The queue with every run of the handlers defined on it observed: `begin(name)` is called as a
 * run starts and returns what is called once as it ends, with `error` when the handler threw
 * (whatever the retry policy then does) and `ok` otherwise (buildApp: the job-run metrics and
 * spans, src/observability/). Everything else is the queue's own.
 */
export function observeJobRuns(queue: JobQueue, begin: (name: string) => (outcome: 'ok' | 'error') => void): JobQueue {
  return {
    ...queue,
    define(name, handler, defineOptions) {
      queue.define(
        name,
        async (data, run) => {
          const end = begin(name);
          let outcome: 'ok' | 'error' = 'error';
          try {
            await handler(data, run);
            outcome = 'ok';
          } finally {
            end(outcome);
          }
        },
        defineOptions,
      );
    },
  };
}
