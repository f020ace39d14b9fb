/**
 * Fair webhook delivery (issue 23 "Fair delivery"; docs/security.md "Fair delivery and atomic
 * caps"), against two real service processes on one database (requests go to the first; both
 * claim deliveries, each with 60 places of its own, so a limit that counted one instance's
 * deliveries only would let the second exceed it) and real receivers on loopback:
 * - a receiver that answers one byte per second (and never ends: the response timeout, 8 s here,
 *   ends each request) counts the requests it holds open, per path;
 * - one endpoint gets at most WEBHOOK_ENDPOINT_CONCURRENCY (8) deliveries at once: 12 events → 8
 *   open, not 12;
 * - account A with the most endpoints (MAX_ITEMS.webhookEndpoints, 20), all on the slow receiver,
 *   and two events (40 deliveries): A holds at most WEBHOOK_ACCOUNT_CONCURRENCY (30) requests
 *   open, and account B's webhook, raised while A's are stuck, arrives within 500 ms. Before,
 *   A's deliveries held all 20 of the instance's places and B's waited for their timeouts.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type CreatedAccount } from '../src/accounts/create-account.ts';
import { createDb, type Db } from '../src/db/client.ts';
import { MAX_ITEMS } from '../src/limits.ts';
import { graphql, rest } from './helpers/app.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { base64, drawPdf } from './helpers/pdfs.ts';
import { freePort, startService, testServiceEnv, type ServiceProcess } from './helpers/processes.ts';
import { startReceiver, type Receiver } from './helpers/webhook-receiver.ts';

let database: TestDatabase;
let db: Db;
let service: ServiceProcess;
let second: ServiceProcess;
let fast: Receiver;
let slow: SlowReceiver;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-fair-'));

interface SlowReceiver {
  url: string;
  /** Requests whose body has arrived and whose answer is still trickling, by path. */
  open: Map<string, number>;
  /** The most requests open at once whose path starts with `prefix`. */
  maxOpen(prefix: string): number;
  openNow(prefix: string): number;
  close(): Promise<void>;
}

/** A receiver that answers 200 and then one byte per second, never ending its answer. */
async function startSlowReceiver(): Promise<SlowReceiver> {
  const open = new Map<string, number>();
  const peaks = new Map<string, number>();
  const sockets = new Set<import('node:net').Socket>();
  const count = (prefix: string) => [...open].filter(([p]) => p.startsWith(prefix)).reduce((sum, [, n]) => sum + n, 0);
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const key = req.url ?? '';
      open.set(key, (open.get(key) ?? 0) + 1);
      for (const prefix of ['/a/', '/d/']) peaks.set(prefix, Math.max(peaks.get(prefix) ?? 0, count(prefix)));
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('.'), 1000);
      res.write('.');
      res.on('close', () => {
        clearInterval(timer);
        open.set(key, open.get(key)! - 1);
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    open,
    maxOpen: (prefix) => peaks.get(prefix) ?? 0,
    openNow: count,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { poolSize: 2 });
  fast = await startReceiver();
  slow = await startSlowReceiver();
  const secret = randomBytes(32).toString('hex');
  const start = async () => {
    const port = await freePort();
    return startService({
      ...testServiceEnv({ databaseUrl: database.url, dataDir: path.join(tmp, 'data'), port }),
      SECRET_KEY_BASE: secret,
      DATABASE_POOL_SIZE: '4',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RESPONSE_TIMEOUT_SECONDS: '8',
      // A failed attempt's retry comes an hour later: none during the test.
      WEBHOOK_RETRY_BASE_MS: '3600000',
    });
  };
  [service, second] = await Promise.all([start(), start()]);
}, 120_000);

afterAll(async () => {
  await Promise.all([service?.stop(), second?.stop()]);
  await slow?.close();
  await fast?.close();
  await db?.$disconnect();
  await database?.drop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

let accounts = 0;
/** A new account with a template, and `urls` as its endpoints (template.updated). */
async function accountWith(urls: string[]): Promise<{ account: CreatedAccount; templateId: number }> {
  accounts += 1;
  const account = await createAccount(db, { name: `Fair ${accounts}`, email: `owner${accounts}@fair.test` });
  const created = await rest(service.url, account.apiKey, 'POST', '/templates/pdf', {
    name: 'Form',
    documents: [{ name: 'form', file: base64(await drawPdf([{ texts: [{ text: 'Form', x: 72, y: 40 }] }])) }],
    fields: [{ name: 'Name', role: 'Signer', areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }] }],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  for (const url of urls) {
    const { body } = await graphql(
      service.url,
      'mutation ($url: String!) { createWebhookEndpoint(input: {url: $url, events: ["template.updated"]}) { secret } }',
      { key: account.apiKey, variables: { url } },
    );
    expect(body.errors).toBeUndefined();
  }
  return { account, templateId: created.json.id };
}

/** Raises template.updated (a rename through the API). */
async function update(account: CreatedAccount, templateId: number, name: string): Promise<void> {
  const answer = await rest(service.url, account.apiKey, 'PUT', `/templates/${templateId}`, { name });
  expect(answer.status, JSON.stringify(answer.json)).toBe(200);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await sleep(20);
  }
}

describe('fair delivery', { timeout: 120_000 }, () => {
  it('one endpoint gets at most 8 deliveries at once from both instances (12 due)', async () => {
    const { account, templateId } = await accountWith([`${slow.url}/d/only`]);
    for (let i = 0; i < 12; i += 1) await update(account, templateId, `D ${i}`);
    await until(() => slow.openNow('/d/') >= 8, 10_000, 'eight deliveries open at the slow endpoint');
    // The others are due, and stay waiting while eight are open.
    await sleep(1500);
    expect(slow.openNow('/d/')).toBe(8);
    expect(slow.maxOpen('/d/')).toBe(8);
    const pending = await db.webhookDelivery.count({ where: { accountId: account.accountId, status: 'pending' } });
    expect(pending).toBe(12);
  });

  it('an account with 20 slow endpoints holds 30 places at most; another’s webhook arrives within 500 ms', async () => {
    const { account: a, templateId: aTemplate } = await accountWith(
      Array.from({ length: MAX_ITEMS.webhookEndpoints }, (_, i) => `${slow.url}/a/${i}`),
    );
    const { account: b, templateId: bTemplate } = await accountWith([`${fast.url}/b`]);
    await update(a, aTemplate, 'A 1');
    await update(a, aTemplate, 'A 2');
    await until(() => slow.openNow('/a/') >= 30, 10_000, 'thirty of A’s deliveries open');
    await sleep(300);

    const raised = Date.now();
    await update(b, bTemplate, 'B 1');
    const [arrival] = await fast.waitFor((requests) => requests.some((r) => r.path === '/b'), 20_000);
    const waited = arrival!.at - raised;
    expect(waited, `B's webhook arrived ${waited} ms after its event`).toBeLessThan(500);
    expect(arrival!.json).toMatchObject({ event_type: 'template.updated', data: { id: bTemplate, name: 'B 1' } });
    // A is still stuck, with no more than its share open.
    expect(slow.openNow('/a/')).toBe(30);
    expect(slow.maxOpen('/a/')).toBe(30);
  });
});
