/**
 * A restart loses no webhook retry: the service (a real child process, `node dist/main.mjs`) is
 * killed with SIGKILL while a delivery waits for its retry; started again, it sends the retry at
 * its time (not before), exactly once, and the delivery ends succeeded.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type CreatedAccount } from '../src/accounts/create-account.ts';
import { createDb, type Db } from '../src/db/client.ts';
import { createSideEffects } from '../src/events/events.ts';
import { createJobQueue, type JobQueue } from '../src/jobs/job-queue.ts';
import { createWebhookEndpoint } from '../src/webhooks/endpoints.ts';
import { rest } from './helpers/app.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { base64, drawPdf } from './helpers/pdfs.ts';
import { startService, type ServiceProcess } from './helpers/processes.ts';
import { ANY_DESTINATION, startReceiver, type Receiver } from './helpers/webhook-receiver.ts';

/** First retry 8 s after the failed first send: time enough to kill and restart in between, even on a busy machine. */
const BASE_MS = 8000;

let database: TestDatabase;
let db: Db;
let queue: JobQueue;
let receiver: Receiver;
let account: CreatedAccount;
let env: Record<string, string>;
const services: ServiceProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { poolSize: 2 });
  queue = createJobQueue({ connectionString: database.url, logger: pino({ level: 'silent' }) });
  receiver = await startReceiver();
  account = await createAccount(db, { name: 'Restart', email: 'owner@restart.test' });
  env = {
    DATABASE_URL: database.url,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_RETRY_BASE_MS: String(BASE_MS),
    CREATE_DEV_ACCOUNT: 'false',
  };
});
afterAll(async () => {
  for (const service of services) if (service.child.exitCode === null) service.child.kill('SIGKILL');
  await receiver?.close();
  await queue?.stop();
  await db?.$disconnect();
  await database?.drop();
});

async function until<T>(
  what: string,
  check: () => Promise<T | null | undefined | false>,
  timeoutMs = 60_000,
): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; ; ) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('restart while a delivery waits for its retry', () => {
  it('sends the retry on schedule after the restart, exactly once', async () => {
    let first = services[services.push(await startService(env)) - 1]!;
    const pdf = await drawPdf([{ texts: [{ text: 'Restart', x: 72, y: 72 }] }]);
    const template = await rest(first.url, account.apiKey, 'POST', '/templates/pdf', {
      name: 'Restart',
      documents: [{ name: 'restart', file: base64(pdf) }],
      fields: [{ name: 'Name', role: 'Signer', areas: [{ x: 72, y: 120, w: 200, h: 20, page: 1 }] }],
    });
    expect(template.status, JSON.stringify(template.json)).toBe(200);

    const { endpoint } = await createWebhookEndpoint(db, {
      accountId: account.accountId,
      url: `${receiver.url}/restart`,
      events: ['template.updated'],
      destination: ANY_DESTINATION,
    });
    receiver.respond((_request, index) =>
      index === 0 ? { status: 500, body: 'not yet' } : { status: 200, body: 'ok' },
    );
    // The event as a service raises it: a persisted dispatch-event job, run by the service.
    await createSideEffects({ db, jobs: queue }).emit([
      { type: 'template.updated', accountId: account.accountId, recordId: template.json.id, at: new Date() },
    ]);

    await receiver.waitFor((requests) => requests.length === 1);
    const waiting = await until('the retry to be scheduled', async () => {
      const delivery = await db.webhookDelivery.findFirst({
        where: { endpointId: endpoint.id },
        include: { attempts: true },
      });
      if (!delivery?.nextAttemptAt) return null;
      const [job] = await db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM agenda.jobs
         WHERE name = 'deliver-webhook' AND data->>'uniqueKey' = ${`${delivery.id}:1`}`;
      return job && Number(job.n) === 1 ? delivery : null;
    });
    expect(waiting).toMatchObject({ status: 'pending', attemptCount: 1 });
    expect(waiting.attempts).toMatchObject([{ attempt: 0, statusCode: 500, responseBody: 'not yet' }]);
    const dueAt = waiting.nextAttemptAt!.getTime();
    expect(dueAt - waiting.attempts[0]!.createdAt.getTime()).toBeGreaterThanOrEqual(BASE_MS);

    // Killed without warning while the retry waits.
    const exited = new Promise((resolve) => first.child.once('exit', resolve));
    first.child.kill('SIGKILL');
    await exited;
    expect(Date.now()).toBeLessThan(dueAt);
    expect(receiver.requests).toHaveLength(1);

    first = services[services.push(await startService(env)) - 1]!;
    const [, retry] = await receiver.waitFor((requests) => requests.length >= 2, 60_000);
    expect(retry!.at).toBeGreaterThanOrEqual(dueAt);
    expect(retry!.json.event_type).toBe('template.updated');
    expect(retry!.json.timestamp).toBe(receiver.requests[0]!.json.timestamp);

    const done = await until('the delivery to succeed', async () => {
      const delivery = await db.webhookDelivery.findFirst({
        where: { endpointId: endpoint.id },
        include: { attempts: { orderBy: { attempt: 'asc' } } },
      });
      return delivery?.status === 'succeeded' ? delivery : null;
    });
    expect(done.attempts.map((a) => [a.attempt, a.statusCode])).toEqual([
      [0, 500],
      [1, 200],
    ]);
    // Nothing more arrives: no other run of the attempt, no further retry.
    await new Promise((r) => setTimeout(r, BASE_MS));
    expect(receiver.requests).toHaveLength(2);
    expect(await first.stop()).toBe(0);
  }, 180_000);
});
