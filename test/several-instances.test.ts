/**
 * Two Signet processes on one PostgreSQL database and one Redis behave as one service (issue 18,
 * "Several instances"; docs/operations.md). Both are real processes (A and B) started as `npm start`
 * starts the service (main.ts startSignet, through the test-only entry test/helpers/clock-service.ts,
 * whose only addition is a clock the test moves), with the same DATABASE_URL, REDIS_URL,
 * SECRET_KEY_BASE and DATA_DIR, as two replicas behind a load balancer; the test talks to each
 * directly and checks:
 * - every job runs once: signature-request emails (a real SMTP server) and submission.created
 *   webhooks (a real receiver) of submissions created on both, each delivered exactly once, each
 *   row sent or succeeded at its first attempt, nothing left in the queue, both instances having
 *   run some; and reminders, which each instance's own scan records, sent once each while both scan;
 * - a subscription on A receives the events caused on B (and the other way round);
 * - the caches never answer from before a write made on the other instance: GET /api/submissions'
 *   kept items (rows + each process's LRU of their bytes) after a submitter, a submission and a
 *   template change, and the create path's parsed-template memo (`knownTemplates`) after the
 *   template's roles change;
 * - a key revoked on one instance is refused by the other at once.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import type { Client } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type CreatedAccount } from '../src/accounts/create-account.ts';
import { createDb, type Db } from '../src/db/client.ts';
import { ACCOUNT_EVENTS_TOPIC, redisChannelPrefix } from '../src/events/pubsub.ts';
import { setFileClockHours } from './helpers/clock.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { messageIdFor } from '../src/notifications/deliver.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { freePort, ROOT, startService, type ServiceProcess } from './helpers/processes.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { subscribeWs, until, wsClient } from './helpers/subscriptions.ts';
import { startReceiver, type Receiver } from './helpers/webhook-receiver.ts';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const SECRET = randomBytes(32).toString('hex');

let database: TestDatabase;
let db: Db;
let redis: Redis;
let smtp: TestSmtpServer;
let receiver: Receiver;
let a: ServiceProcess;
let b: ServiceProcess;
let account: CreatedAccount;
let templateId: number;
const clients: Client[] = [];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-instances-'));
const dataDir = path.join(tmp, 'data');
const clockFile = path.join(tmp, 'clock');
const MAIL_FROM = 'Signet <no-reply@instances.test>';

/** A JSON request to an instance's REST API with the account's key (or `key`). */
async function rest(
  instance: ServiceProcess,
  method: string,
  pathname: string,
  body?: unknown,
  key = account.apiKey,
): Promise<{ status: number; json: any }> {
  const response = await fetch(`${instance.url}/api${pathname}`, {
    method,
    headers: { 'X-Auth-Token': key, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

/** A GraphQL request to an instance; fails on errors. */
async function graphql(instance: ServiceProcess, query: string, variables?: Record<string, unknown>, key?: string) {
  const response = await fetch(`${instance.url}/graphql`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Auth-Token': key ?? account.apiKey },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data?: any; errors?: unknown[] };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

/** One instance: main.ts startSignet with the shared clock (see the module comment). */
async function startInstance(): Promise<ServiceProcess> {
  const port = await freePort();
  return startService({ ...serviceEnv(), PORT: String(port), APP_URL: `http://127.0.0.1:${port}` }, 90_000, ROOT, [
    '--import',
    'tsx',
    path.join(ROOT, 'test', 'helpers', 'clock-service.ts'),
  ]);
}

const serviceEnv = () => ({
  NODE_ENV: 'test',
  CLOCK_FILE: clockFile,
  MAIL_FROM,
  // Both instances scan for due reminders often (each scan its own, with no job lock).
  REMINDER_SCAN_SECONDS: '0.1',
  DATABASE_URL: database.url,
  DATA_DIR: dataDir,
  REDIS_URL,
  SECRET_KEY_BASE: SECRET,
  SMTP_URL: smtp.url,
  WEBHOOK_ALLOW_PRIVATE: 'true',
  CREATE_DEV_ACCOUNT: 'false',
  // Two pools each of 4 connections per instance: the test server has other files' databases too.
  DATABASE_POOL_SIZE: '4',
});

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { poolSize: 2 });
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true });
  await redis.connect();
  smtp = await startSmtpServer();
  receiver = await startReceiver();
  setFileClockHours(clockFile, 0);
  [a, b] = await Promise.all([startInstance(), startInstance()]);
  account = await createAccount(db, { name: 'Acme', email: 'owner@instances.test' });
  const template = await rest(a, 'POST', '/templates/pdf', {
    name: 'Contract',
    documents: [{ name: 'contract', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [{ name: 'Name', role: 'Client', areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }] }],
  });
  expect(template.status, JSON.stringify(template.json)).toBe(200);
  templateId = template.json.id;
}, 180_000);

afterAll(async () => {
  for (const client of clients) await client.dispose();
  await Promise.all([a?.stop(), b?.stop()]);
  await receiver?.close();
  await smtp?.close();
  redis?.disconnect();
  await db?.$disconnect();
  await database?.drop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('two instances, one database, one Redis', { timeout: 120_000 }, () => {
  it('run every job once: each email and each webhook of submissions made on both is sent once', async () => {
    const endpoint = await graphql(
      b,
      'mutation ($url: String!) { createWebhookEndpoint(input: {url: $url, events: ["submission.created"]}) ' +
        '{ endpoint { id } } }',
      { url: `${receiver.url}/hooks` },
    );
    expect(endpoint.createWebhookEndpoint.endpoint.id).toBeGreaterThan(0);
    // Both instances take jobs from the shared store (Agenda records who ran a job last); which one
    // locks a job is a race, so batches are made until each has run some (nearly always the first).
    const runners = async () =>
      (
        await db.$queryRaw<{ runner: string }[]>`
          SELECT DISTINCT split_part(last_modified_by, ':', 2) AS runner FROM agenda.jobs
           WHERE last_run_at IS NOT NULL`
      )
        .map((row) => Number(row.runner))
        .sort();
    const BATCH = 16;
    const submissionIds: number[] = [];
    const recipientsMade: string[] = [];
    for (let batch = 0; batch < 5; batch += 1) {
      const created = await Promise.all(
        Array.from({ length: BATCH }, (_, i) => {
          const email = `signer${batch}-${i}@instances.test`;
          recipientsMade.push(email);
          return rest(i % 2 === 0 ? a : b, 'POST', '/submissions', {
            template_id: templateId,
            send_email: true,
            submitters: [{ role: 'Client', email }],
          });
        }),
      );
      for (const answer of created) expect(answer.status, JSON.stringify(answer.json)).toBe(200);
      submissionIds.push(...created.map((answer) => answer.json[0].submission_id as number));
      await smtp.waitForMessages(submissionIds.length, 60_000);
      await receiver.waitFor((requests) => requests.length >= submissionIds.length, 60_000);
      if ((await runners()).length === 2) break;
    }
    const COUNT = submissionIds.length;
    // Both queues are idle (nothing due or running, the outbox empty) before counting for good.
    await until(async () => {
      const [{ n }] = await db.$queryRaw<{ n: number }[]>`
        SELECT (SELECT count(*) FROM agenda.jobs WHERE locked_at IS NOT NULL OR next_run_at <= now())
             + (SELECT count(*) FROM outbox) AS n`;
      return Number(n) === 0;
    }, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 1000));

    expect(await runners()).toEqual([a.child.pid, b.child.pid].sort());
    const recipients = smtp.messages.map((message) => message.envelope.rcptTo.join(',')).sort();
    expect(recipients).toEqual(recipientsMade.sort());
    const delivered = receiver.requests.map((request) => request.json.data.id as number).sort((x, y) => x - y);
    expect(delivered).toEqual(submissionIds.sort((x, y) => x - y));
    const emails = await db.emailMessage.findMany({ select: { status: true, attemptCount: true } });
    expect(emails).toHaveLength(COUNT);
    expect(emails.every((email) => email.status === 'sent' && email.attemptCount === 1)).toBe(true);
    const deliveries = await db.webhookDelivery.findMany({ select: { status: true, attemptCount: true } });
    expect(deliveries).toHaveLength(COUNT);
    expect(deliveries.every((delivery) => delivery.status === 'succeeded' && delivery.attemptCount === 1)).toBe(true);
  });

  it('send each reminder once while both instances scan for due ones', async () => {
    const PARTIES = 6;
    const before = smtp.messages.length;
    const made = await Promise.all(
      Array.from({ length: PARTIES }, (_, i) =>
        rest(i % 2 === 0 ? b : a, 'POST', '/submissions', {
          template_id: templateId,
          reminders: { first_after_hours: 24, every_hours: 24, max_count: 2 },
          submitters: [{ role: 'Client', email: `remind${i}@instances.test` }],
        }),
      ),
    );
    for (const answer of made) expect(answer.status, JSON.stringify(answer.json)).toBe(200);
    const parties = made.map((answer) => ({ id: answer.json[0].id as number, email: answer.json[0].email as string }));
    await smtp.waitForMessages(before + PARTIES, 60_000); // the requests
    await until(async () => (await db.reminderSchedule.count()) === PARTIES, 30_000);
    const received = (messageId: string) => smtp.messages.filter((m) => m.parsed.messageId === messageId).length;
    for (const [hours, number] of [
      [25, 1],
      [49, 2],
    ] as const) {
      setFileClockHours(clockFile, hours);
      const ids = parties.map((party) => messageIdFor(`reminder:${party.id}:${number}:${party.email}`, MAIL_FROM));
      await until(() => ids.every((id) => received(id) >= 1), 60_000);
      // Many scans of both instances later, still one each.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(ids.map(received)).toEqual(ids.map(() => 1));
    }
    expect(smtp.messages.length).toBe(before + 3 * PARTIES);
  });

  it('deliver to a subscriber on A the events caused on B, and the other way round', async () => {
    const channel = `${redisChannelPrefix(SECRET)}${ACCOUNT_EVENTS_TOPIC}:${account.accountId}`;
    const subscribers = async (count: number) =>
      until(async () => {
        const [, n] = (await redis.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
        return Number(n) === count;
      }, 15_000);
    const query = 'subscription ($id: Int!) { submissionUpdated(id: $id) { eventType submission { id archivedAt } } }';
    const [first, second] = await Promise.all(
      [0, 1].map((i) =>
        rest(a, 'POST', '/submissions', {
          template_id: templateId,
          send_email: false,
          submitters: [{ role: 'Client', email: `live${i}@instances.test` }],
        }),
      ),
    );
    for (const [subscriberOn, causedOn, submissionId] of [
      [a, b, first!.json[0].submission_id],
      [b, a, second!.json[0].submission_id],
    ] as const) {
      const client = wsClient(subscriberOn.url, account.apiKey);
      clients.push(client);
      const feed = subscribeWs(client, query, { id: submissionId });
      await subscribers(1);
      const archived = await rest(causedOn, 'DELETE', `/submissions/${submissionId}`);
      expect(archived.status).toBe(200);
      expect((await feed.nextData(10_000)).submissionUpdated).toEqual({
        eventType: 'submission.archived',
        submission: { id: submissionId, archivedAt: archived.json.archived_at },
      });
      feed.close();
      await subscribers(0);
    }
  });

  it("serve GET /api/submissions from no cache older than the other instance's writes", async () => {
    const made = await rest(b, 'POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [{ role: 'Client', email: 'listed@instances.test', name: 'First Name' }],
    });
    const submissionId = made.json[0].submission_id as number;
    const submitterId = made.json[0].id as number;
    const itemOn = async (instance: ServiceProcess) => {
      const page = await rest(instance, 'GET', '/submissions?limit=100');
      expect(page.status).toBe(200);
      return page.json.data.find((item: { id: number }) => item.id === submissionId);
    };
    // Kept in the table and in each process's LRU (the second read on each is served from memory).
    for (const instance of [a, b, a, b]) expect((await itemOn(instance)).submitters[0].name).toBe('First Name');

    const renamed = await rest(b, 'PUT', `/submitters/${submitterId}`, { name: 'Second Name' });
    expect(renamed.status, JSON.stringify(renamed.json)).toBe(200);
    expect((await itemOn(a)).submitters[0].name).toBe('Second Name');

    const archived = await rest(b, 'DELETE', `/submissions/${submissionId}`);
    expect((await itemOn(a)).archived_at).toBe(archived.json.archived_at);

    // A template change stales every item of the account (the account's list epoch).
    const template = await rest(a, 'PUT', `/templates/${templateId}`, { name: 'Contract v2' });
    expect(template.status, JSON.stringify(template.json)).toBe(200);
    for (const instance of [b, a]) expect((await itemOn(instance)).template.name).toBe('Contract v2');
  });

  it("create submissions from the template as it is, not as the other instance's memo last read it", async () => {
    const create = (instance: ServiceProcess, role: string) =>
      rest(instance, 'POST', '/submissions', {
        template_id: templateId,
        send_email: false,
        submitters: [{ role, email: `${role.toLowerCase()}@instances.test` }],
      });
    // A reads and keeps the template's roles (the fast path's memo).
    for (let i = 0; i < 2; i += 1) expect((await create(a, 'Client')).status).toBe(200);
    // B renames the role (the same role: its uuid, which the fields name).
    const before = await rest(b, 'GET', `/templates/${templateId}`);
    const updated = await rest(b, 'PUT', `/templates/${templateId}`, {
      submitters: [{ name: 'Signer', uuid: before.json.submitters[0].uuid }],
    });
    expect(updated.status, JSON.stringify(updated.json)).toBe(200);
    const read = await rest(a, 'GET', `/templates/${templateId}`);
    expect(read.json.submitters.map((role: { name: string }) => role.name)).toEqual(['Signer']);

    // By name, and by position (§7.2: the old name matches no role): the role as B left it, on A as on B.
    for (const instance of [a, b])
      for (const role of ['Signer', 'Client']) {
        const made = await create(instance, role);
        expect(made.status, JSON.stringify(made.json)).toBe(200);
        expect(made.json[0].role).toBe('Signer');
      }
  });

  it('refuse a key revoked on one instance on the other at once', async () => {
    const made = await graphql(a, 'mutation { createApiKey(input: {name: "spare"}) { token apiKey { id } } }');
    const { token, apiKey } = made.createApiKey;
    for (const instance of [a, b]) expect((await rest(instance, 'GET', '/user', undefined, token)).status).toBe(200);
    await graphql(b, 'mutation ($id: Int!) { revokeApiKey(input: {id: $id}) { apiKey { revokedAt } } }', {
      id: apiKey.id,
    });
    const [onA, onB] = await Promise.all([a, b].map((instance) => rest(instance, 'GET', '/user', undefined, token)));
    expect(onA).toEqual({ status: 401, json: { error: 'Not authenticated' } });
    expect(onB.status).toBe(401);
  });
});
