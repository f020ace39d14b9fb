/**
 * The development account of a first start, on real `node dist/main.mjs` processes and fresh
 * databases (src/config.ts devAccountByDefault; the embedded-database quick start is
 * test/embedded-start.test.ts):
 * - in production on an external DATABASE_URL (as docker-compose.yml) no account is created and
 *   no key is printed, unless CREATE_DEV_ACCOUNT=true asks for it;
 * - a restart names the development user and the exact command that replaces a lost key, and
 *   that command, run as printed, makes a key that works.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createDb } from '../src/db/client.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { runSignet, startService, type ServiceProcess } from './helpers/processes.ts';

const KEY_LINE = /^\s+(sgt_[A-Za-z0-9_-]{43})$/m;
const databases: TestDatabase[] = [];
let service: ServiceProcess | undefined;

async function freshDatabase(): Promise<TestDatabase> {
  const database = await createTestDatabase({ migrate: false });
  databases.push(database);
  return database;
}

async function accountCount(url: string): Promise<number> {
  const db = createDb(url, { poolSize: 1 });
  try {
    return await db.account.count();
  } finally {
    await db.$disconnect();
  }
}

afterEach(async () => {
  await service?.stop();
  service = undefined;
});
afterAll(async () => {
  for (const database of databases) await database.drop();
});

describe('first start in production on DATABASE_URL', { timeout: 120_000 }, () => {
  it('creates no development account and prints no key', async () => {
    const database = await freshDatabase();
    service = await startService({ NODE_ENV: 'production', DATABASE_URL: database.url });
    expect(service.output()).toContain('Signet is running');
    expect(service.output()).not.toMatch(/sgt_|development account/);
    expect(await accountCount(database.url)).toBe(0);
  });

  it('creates it when CREATE_DEV_ACCOUNT=true asks for it', async () => {
    const database = await freshDatabase();
    service = await startService({ NODE_ENV: 'production', DATABASE_URL: database.url, CREATE_DEV_ACCOUNT: 'true' });
    const key = KEY_LINE.exec(service.output())?.[1];
    expect(key, service.output()).toBeDefined();
    const response = await fetch(`${service.url}/api/user`, { headers: { 'X-Auth-Token': key! } });
    expect(await response.json()).toMatchObject({ email: 'dev@signet.local' });
  });
});

describe('a restart with the development account', { timeout: 120_000 }, () => {
  it('says how to replace a lost key, with a command that works as printed', async () => {
    const database = await freshDatabase();
    const env = { NODE_ENV: 'development', DATABASE_URL: database.url };
    service = await startService(env);
    expect(service.output()).toMatch(KEY_LINE);
    await service.stop();

    service = await startService(env);
    const output = service.output();
    expect(output).not.toMatch(/sgt_/);
    const userId = (await runSignet(['user', 'list'], env).then((r) => JSON.parse(r.stdout)))[0].id as number;
    expect(output).toContain(`The development account (dev@signet.local, user ${userId}) exists`);
    const command = /^\s+(npx signet api-key create --user-id \d+)$/m.exec(output)?.[1];
    expect(command, output).toBe(`npx signet api-key create --user-id ${userId}`);

    // Run as printed (`npx signet` is bin/signet.mjs).
    const created = await runSignet(command!.split(' ').slice(2), env);
    expect(created.code, created.stderr).toBe(0);
    const { apiKey } = JSON.parse(created.stdout);
    const response = await fetch(`${service.url}/api/user`, { headers: { 'X-Auth-Token': apiKey } });
    expect(await response.json()).toMatchObject({ id: userId, email: 'dev@signet.local' });
  });

  it('says nothing of it when the database has other accounts only', async () => {
    const database = await freshDatabase();
    const env = { NODE_ENV: 'development', DATABASE_URL: database.url };
    expect((await runSignet(['account', 'create', '--name', 'Acme', '--email', 'owner@acme.test'], env)).code).toBe(0);
    service = await startService(env);
    expect(service.output()).not.toMatch(/sgt_|development account/);
  });
});
