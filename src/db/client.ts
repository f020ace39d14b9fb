/**
 * The Prisma client (Prisma 7, `prisma-client` generator, `@prisma/adapter-pg` driver adapter).
 */
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.ts';

export type Db = PrismaClient;
export { Prisma } from '../generated/prisma/client.ts';

/**
 * Creates a Prisma client over a pg pool.
 * @param connectionString postgresql:// URL
 * @param options.poolSize connections in the pool (default 10)
 * @param options.onQuery called with each SQL statement (tests count queries with it)
 */
export function createDb(connectionString: string, options: { poolSize?: number; onQuery?: (sql: string) => void } = {}): Db {
  const adapter = new PrismaPg({ connectionString, max: options.poolSize ?? 10, connectionTimeoutMillis: 5000 });
  if (!options.onQuery) return new PrismaClient({ adapter });
  const client = new PrismaClient({ adapter, log: [{ emit: 'event', level: 'query' }] });
  const onQuery = options.onQuery;
  client.$on('query', (event) => onQuery(event.query));
  return client;
}
