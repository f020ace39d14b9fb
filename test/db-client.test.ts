/**
 * The database client's waiting rules (src/db/client.ts): an interactive transaction waits for a
 * pool connection as long as a single statement does (5 s) and may run up to 15 s, so that a busy
 * moment slows requests instead of failing them (Prisma's defaults, 2 s and 5 s, failed a signing
 * form's decline on a loaded CI machine). Real PostgreSQL, a pool of one connection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../src/db/client.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';

let database: TestDatabase;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase({ migrate: false });
  db = createDb(database.url, { poolSize: 1 });
}, 60_000);
afterAll(async () => {
  await db?.$disconnect();
  await database?.drop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('interactive transactions', { timeout: 30_000 }, () => {
  it('wait for the one connection longer than 2 s (Prisma’s default) and then run', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = db.$transaction(async (tx) => {
      await tx.$queryRawUnsafe('SELECT 1');
      await held;
      return 'first';
    });
    await sleep(100);
    const startedAt = Date.now();
    const second = db.$transaction(async (tx) => (await tx.$queryRawUnsafe<{ n: number }[]>('SELECT 2 AS n'))[0]!.n);
    await sleep(3_000);
    release();
    expect(await first).toBe('first');
    expect(await second).toBe(2);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(2_900);
  });

  it('may run longer than 5 s (Prisma’s default)', async () => {
    const result = await db.$transaction(async (tx) => {
      await tx.$queryRawUnsafe('SELECT pg_sleep(5.5)::text');
      return (await tx.$queryRawUnsafe<{ n: number }[]>('SELECT 3 AS n'))[0]!.n;
    });
    expect(result).toBe(3);
  });
});
