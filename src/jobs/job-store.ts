/**
 * Where Agenda keeps the jobs: PostgreSQL (default, the service's own database, in a schema of
 * its own) or MongoDB (`JOBS_MONGODB_URL`). A store is opened and closed by src/jobs/job-queue.ts;
 * it hands Agenda a backend whose connection the store owns.
 */
import type { AgendaBackend, JobRepository } from 'agenda';
import { PostgresBackend, PostgresJobRepository } from '@agendajs/postgres-backend';
import pg from 'pg';
import type { BaseLogger } from 'pino';

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
  /** Closes the connection (pool or client). */
  close(): Promise<void>;
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
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`jobs schema: "${schema}" is not a lower-case SQL identifier`);
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
  inner.notificationChannel?.on('error', (error: Error) => options.logger.warn({ err: error }, 'jobs: LISTEN connection error'));
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

  return {
    backend: connectedBackend(inner),
    repository: inner.repository,
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
    close: () => pool.end(),
  };
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
    backend: connectedBackend(inner),
    repository,
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
function connectedBackend(inner: AgendaBackend): AgendaBackend {
  return {
    name: inner.name,
    repository: inner.repository,
    notificationChannel: inner.notificationChannel,
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
