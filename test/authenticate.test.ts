/** authenticate(): the per-request key lookup in plain SQL must agree with Prisma's view of the rows. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate } from '../src/accounts/authenticate.ts';
import { createAccount } from '../src/accounts/create-account.ts';
import { createDb, type Db } from '../src/db/client.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';

let database: TestDatabase;
let db: Db;
beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { poolSize: 2 });
});
afterAll(async () => {
  await db?.$disconnect();
  await database?.drop();
});

describe('authenticate', () => {
  it(
    'returns the same user and account as Prisma reads, ' + 'with exact timestamps whatever the process time zone',
    async () => {
      const created = await createAccount(db, { name: 'Zone', email: 'zone@example.test', firstName: 'Z' });
      await db.account.update({ where: { id: created.accountId }, data: { preferences: { locale_note: 'kept' } } });
      const previousTz = process.env.TZ;
      process.env.TZ = 'America/New_York';
      try {
        const viewer = await authenticate(db, created.apiKey);
        const user = await db.user.findUniqueOrThrow({ where: { id: created.userId } });
        const account = await db.account.findUniqueOrThrow({ where: { id: created.accountId } });
        expect(viewer).toEqual({ user, account, apiKeyId: created.apiKeyId, scopes: ['read', 'write'], folders: null });
        expect(viewer!.user.createdAt.toISOString()).toBe(user.createdAt.toISOString());
      } finally {
        if (previousTz === undefined) delete process.env.TZ;
        else process.env.TZ = previousTz;
      }
    },
  );

  it('look-ups made in one turn share one statement; each caller gets its own viewer or null', async () => {
    const one = await createAccount(db, { name: 'One', email: 'one@example.test' });
    const two = await createAccount(db, { name: 'Two', email: 'two@example.test' });
    const statements: string[] = [];
    const counted = createDb(database.url, { poolSize: 1, onQuery: (sql) => statements.push(sql) });
    try {
      // Warm the keys' last use so that only look-ups are counted.
      await authenticate(counted, one.apiKey);
      await authenticate(counted, two.apiKey);
      await new Promise((r) => setTimeout(r, 100));
      statements.length = 0;
      const viewers = await Promise.all(
        [one.apiKey, two.apiKey, 'sgt_unknown', one.apiKey].map((key) => authenticate(counted, key)),
      );
      expect(viewers.map((v) => v?.account.name ?? null)).toEqual(['One', 'Two', null, 'One']);
      expect(viewers.map((v) => v?.apiKeyId ?? null)).toEqual([one.apiKeyId, two.apiKeyId, null, one.apiKeyId]);
      await new Promise((r) => setTimeout(r, 50));
      expect(statements).toHaveLength(1);
    } finally {
      await counted.$disconnect();
    }
  });

  it('records last use, at most once a minute', async () => {
    const created = await createAccount(db, { name: 'Used', email: 'used@example.test' });
    const before = Date.now();
    await authenticate(db, created.apiKey);
    // Written after the answer (fire and forget): wait for it, as long as a busy machine needs.
    let key = await db.apiKey.findUniqueOrThrow({ where: { id: created.apiKeyId } });
    for (const deadline = Date.now() + 10_000; !key.lastUsedAt && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 20));
      key = await db.apiKey.findUniqueOrThrow({ where: { id: created.apiKeyId } });
    }
    expect(key.lastUsedAt, 'last_used_at written within 10 s').not.toBeNull();
    expect(key.lastUsedAt!.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(key.lastUsedAt!.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    const first = key.lastUsedAt!.getTime();
    await authenticate(db, created.apiKey);
    await new Promise((r) => setTimeout(r, 100));
    expect((await db.apiKey.findUniqueOrThrow({ where: { id: created.apiKeyId } })).lastUsedAt!.getTime()).toBe(first);
  });

  it('refuses unknown, revoked, archived-user and archived-account keys', async () => {
    const a = await createAccount(db, { name: 'A', email: 'a@example.test' });
    const b = await createAccount(db, { name: 'B', email: 'b@example.test' });
    const c = await createAccount(db, { name: 'C', email: 'c@example.test' });
    expect(await authenticate(db, undefined)).toBeNull();
    expect(await authenticate(db, 'x'.repeat(600))).toBeNull();
    expect(await authenticate(db, `${a.apiKey}0`)).toBeNull();
    await db.apiKey.update({ where: { id: a.apiKeyId }, data: { revokedAt: new Date() } });
    await db.user.update({ where: { id: b.userId }, data: { archivedAt: new Date() } });
    await db.account.update({ where: { id: c.accountId }, data: { archivedAt: new Date() } });
    for (const key of [a.apiKey, b.apiKey, c.apiKey]) expect(await authenticate(db, key)).toBeNull();
  });
});
