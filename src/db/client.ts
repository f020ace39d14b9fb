/**
 * The database client: Prisma 7 (`prisma-client` generator, `@prisma/adapter-pg`) over a pg pool
 * that the few hot paths which need plain SQL (authentication, on every request) share.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../generated/prisma/client.ts';

export type Db = PrismaClient;
export { Prisma } from '../generated/prisma/client.ts';

const pools = new WeakMap<Db, pg.Pool>();

/** How long a statement may wait for a pool connection (pg's connectionTimeoutMillis), in ms. */
const CONNECTION_WAIT_MS = 5_000;

/**
 * Interactive transactions (`db.$transaction(async (tx) => …)`) without options of their own:
 * they wait for a connection as long as a single statement does (Prisma's default is 2 s), and
 * may run 15 s (default 5 s) before Prisma rolls them back. On a busy machine the defaults turned
 * slowness into failed requests (P2028, "Transaction already closed") that a client then retried,
 * adding load; a transaction here is a few statements, so the longer limit bounds a stuck one only.
 */
const TRANSACTION_OPTIONS = { maxWait: CONNECTION_WAIT_MS, timeout: 15_000 };

/**
 * Creates a Prisma client over a new pg pool; `db.$disconnect()` also ends the pool.
 * @param connectionString postgresql:// URL
 * @param options.poolSize connections in the pool (default 10)
 * @param options.onQuery called with each SQL statement, Prisma's and plain (tests count queries with it)
 */
export function createDb(
  connectionString: string,
  options: { poolSize?: number; onQuery?: (sql: string) => void } = {},
): Db {
  const pool = new pg.Pool({
    connectionString,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: CONNECTION_WAIT_MS,
  });
  // An idle connection dropped by the server is replaced on next use; it must not crash the process.
  pool.on('error', () => undefined);
  const adapter = new PrismaPg(pool, { disposeExternalPool: true });
  const onQuery = options.onQuery;
  if (!onQuery) {
    const client = new PrismaClient({ adapter, transactionOptions: TRANSACTION_OPTIONS });
    pools.set(client, pool);
    return client;
  }
  const client = new PrismaClient({
    adapter,
    transactionOptions: TRANSACTION_OPTIONS,
    log: [{ emit: 'event', level: 'query' }],
  });
  client.$on('query', (event) => onQuery(event.query));
  // Our own plain SQL runs as named statements; Prisma reports its statements through the event
  // above (the adapter runs them through this pool too, so they must not be counted twice).
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as { query: unknown }).query = (config: unknown, ...rest: unknown[]) => {
    const named = config as { name?: string; text?: string };
    if (typeof named === 'object' && named?.name && named.text) onQuery(named.text);
    return query(config, ...rest);
  };
  pools.set(client, pool);
  return client;
}

/**
 * The pg pool under a client made by createDb, for hot paths that run plain SQL.
 * @throws Error for a client not made by createDb
 */
export function sqlPool(db: Db): pg.Pool {
  const pool = pools.get(db);
  if (!pool) throw new Error('sqlPool: this Prisma client was not made by createDb');
  return pool;
}

/**
 * The postgresql:// URL a client made by createDb connects to (for a connection of its own beside
 * the pool: src/db/listener.ts).
 * @throws Error for a client not made by createDb
 */
export function connectionStringOf(db: Db): string {
  const url = sqlPool(db).options.connectionString;
  if (!url) throw new Error('connectionStringOf: the pool was made without a connection string');
  return url;
}

/** Connections of a pool: open, idle, and requests waiting for one. */
export interface PoolUsage {
  total: number;
  idle: number;
  waiting: number;
}

/** The usage of the pg pool under a client made by createDb (the metrics' `service` pool). */
export function poolUsage(db: Db): PoolUsage {
  const pool = sqlPool(db);
  return { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount };
}
