/**
 * Live events across instances through Redis (REDIS_URL; the local Redis at 127.0.0.1:6379 unless
 * REDIS_URL is set): two service instances on one PostgreSQL database, A in this process and B a
 * real `node dist/main.mjs` child process, and an event raised on one reaches a subscriber on the
 * other, over graphql-ws and SSE, still scoped to the subscriber's account; and deployments with
 * different secrets sharing the Redis server do not hear each other.
 *
 * Redis does not tell a client when another one's SUBSCRIBE is done, so the tests wait for the
 * instance's channel to have a subscriber (PUBSUB NUMSUB). "Nothing else arrived" is shown without
 * waiting: Redis delivers one connection's publications in order, so a subscriber whose first
 * result is the event published last was not sent the ones before it.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from 'graphql-ws';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import type { EventType, SideEffects } from '../src/events/events.ts';
import { ACCOUNT_EVENTS_TOPIC, createLiveEvents, redisChannelPrefix, type LiveEvents } from '../src/events/pubsub.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { freePort, startService, type ServiceProcess } from './helpers/processes.ts';
import { subscribeSse, subscribeWs, until, wsClient } from './helpers/subscriptions.ts';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
/** The secret key base both instances share (it names the Redis channels). */
const SECRET = randomBytes(32).toString('hex');

let a: TestApp;
let b: ServiceProcess;
let redis: Redis;
let alice: CreatedAccount;
let bob: CreatedAccount;
let sinkA: SideEffects;
const clients: Client[] = [];
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-redis-b-'));

interface Party {
  id: number;
  submission_id: number;
}
let aliceParties: Party[];
let bobParties: Party[];

const FORM_EVENTS = /* GraphQL */ `
  subscription { formEvents { eventType submitter { id email } submission { id } } }
`;
const SUBMISSION_UPDATED = /* GraphQL */ `
  subscription ($id: Int!) { submissionUpdated(id: $id) { eventType submitter { id } submission { id archivedAt } } }
`;

const channel = (account: CreatedAccount, secret = SECRET) =>
  `${redisChannelPrefix(secret)}${ACCOUNT_EVENTS_TOPIC}:${account.accountId}`;

/** Waits until `count` Redis connections (instances) subscribe to the account's channel. */
async function redisSubscribers(account: CreatedAccount, count: number, secret = SECRET): Promise<void> {
  await until(
    async () => {
      const [, n] = (await redis.call('PUBSUB', 'NUMSUB', channel(account, secret))) as [string, number];
      return Number(n) === count;
    },
    15_000,
    `${count} Redis subscriber(s) of account ${account.accountId}`,
  );
}

const emitOnA = (account: CreatedAccount, type: EventType, recordId: number) =>
  sinkA.emit([{ type, accountId: account.accountId, recordId, at: new Date() }]);

function client(url: string, account: CreatedAccount): Client {
  const c = wsClient(url, account.apiKey);
  clients.push(c);
  return c;
}

async function setUpAccount(account: CreatedAccount, tag: string): Promise<Party[]> {
  const template = await rest(a.url, account.apiKey, 'POST', '/templates/pdf', {
    name: `Form ${tag}`,
    documents: [{ name: 'form', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [{ name: 'Name', role: 'Client', areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }] }],
  });
  expect(template.status, JSON.stringify(template.json)).toBe(200);
  const parties: Party[] = [];
  for (let i = 0; i < 2; i += 1) {
    const created = await rest(a.url, account.apiKey, 'POST', '/submissions', {
      template_id: template.json.id,
      send_email: false,
      submitters: [{ role: 'Client', email: `${tag}${i}@example.test` }],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    parties.push(created.json[0]);
  }
  return parties;
}

beforeAll(async () => {
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true });
  await redis.connect(); // the local Redis must answer (../shared/DESIGN.md: it runs on developer and CI machines)
  a = await startTestApp({ env: { REDIS_URL, SECRET_KEY_BASE: SECRET } });
  sinkA = a.app.effects;
  b = await startService({
    DATABASE_URL: a.database.url,
    DATA_DIR: dataDir,
    REDIS_URL,
    SECRET_KEY_BASE: SECRET,
    CREATE_DEV_ACCOUNT: 'false',
    NODE_ENV: 'test',
  });
  alice = await a.createAccount({ name: 'Alice', email: 'alice@redis.test' });
  bob = await a.createAccount({ name: 'Bob', email: 'bob@redis.test' });
  aliceParties = await setUpAccount(alice, 'alice');
  bobParties = await setUpAccount(bob, 'bob');
}, 120_000);

afterAll(async () => {
  for (const c of clients) await c.dispose();
  await b?.stop();
  await a?.close();
  redis?.disconnect();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('two instances, one database, one Redis', () => {
  it('instance A publishes through Redis', () => {
    expect(a.app.live.transport).toBe('redis');
  });

  it('an event raised on A reaches a graphql-ws subscriber on B', async () => {
    const feed = subscribeWs(client(b.url, alice), FORM_EVENTS);
    await redisSubscribers(alice, 1);
    expect(a.app.live.subscriberCount()).toBe(0);
    await emitOnA(alice, 'form.viewed', aliceParties[0]!.id);
    expect((await feed.nextData()).formEvents).toEqual({
      eventType: 'form.viewed',
      submitter: { id: aliceParties[0]!.id, email: 'alice0@example.test' },
      submission: { id: aliceParties[0]!.submission_id },
    });
    feed.close();
    await redisSubscribers(alice, 0);
  });

  it(
    'a DELETE /api/submissions/{id} on B reaches a submissionUpdated subscriber on A, ' + 'and one over SSE on B',
    async () => {
      const submissionId = aliceParties[1]!.submission_id;
      const onA = subscribeWs(client(a.url, alice), SUBMISSION_UPDATED, { id: submissionId });
      const onB = (await subscribeSse(b.url, alice.apiKey, SUBMISSION_UPDATED, { id: submissionId })).feed;
      await redisSubscribers(alice, 2);
      const archived = await rest(b.url, alice.apiKey, 'DELETE', `/submissions/${submissionId}`);
      expect(archived.status).toBe(200);
      for (const feed of [onA, onB]) {
        expect((await feed.nextData()).submissionUpdated).toEqual({
          eventType: 'submission.archived',
          submitter: null,
          submission: { id: submissionId, archivedAt: archived.json.archived_at },
        });
      }
      // Once each, not once from Redis and once in process: a later event of the submission comes next.
      await emitOnA(alice, 'form.viewed', aliceParties[1]!.id);
      for (const feed of [onA, onB]) {
        expect((await feed.nextData()).submissionUpdated).toMatchObject({
          eventType: 'form.viewed',
          submitter: { id: aliceParties[1]!.id },
        });
        expect(feed.count).toBe(2);
      }
      onA.close();
      onB.close();
      await redisSubscribers(alice, 0);
      expect(a.app.live.subscriberCount()).toBe(0);
    },
  );

  it("a subscriber on B never gets another account's events raised on A", async () => {
    const bobFeed = subscribeWs(client(b.url, bob), FORM_EVENTS);
    const aliceFeed = subscribeWs(client(b.url, alice), FORM_EVENTS);
    await redisSubscribers(bob, 1);
    await redisSubscribers(alice, 1);
    await emitOnA(alice, 'form.started', aliceParties[0]!.id);
    // Alice's submitter under Bob's account (a faulty emitter): dropped before publication.
    await sinkA.emit([
      { type: 'form.started', accountId: bob.accountId, recordId: aliceParties[1]!.id, at: new Date() },
    ]);
    await emitOnA(bob, 'form.completed', bobParties[0]!.id);
    expect((await bobFeed.nextData()).formEvents).toMatchObject({
      eventType: 'form.completed',
      submitter: { id: bobParties[0]!.id },
    });
    expect((await aliceFeed.nextData()).formEvents).toMatchObject({
      eventType: 'form.started',
      submitter: { id: aliceParties[0]!.id },
    });
    expect(bobFeed.count).toBe(1);
    await emitOnA(alice, 'form.declined', aliceParties[1]!.id);
    expect((await aliceFeed.nextData()).formEvents).toMatchObject({
      eventType: 'form.declined',
      submitter: { id: aliceParties[1]!.id },
    });
    bobFeed.close();
    aliceFeed.close();
    await redisSubscribers(bob, 0);
    await redisSubscribers(alice, 0);
  });

  it('a deployment with another secret on the same Redis does not hear these events', async () => {
    const logger = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;
    const otherSecret = randomBytes(32).toString('hex');
    const other: LiveEvents = await createLiveEvents({
      db: a.db,
      logger,
      redis: { url: REDIS_URL, secretKeyBase: otherSecret },
    });
    try {
      expect(redisChannelPrefix(otherSecret)).not.toBe(redisChannelPrefix(SECRET));
      const iterator = other.subscribe(alice.accountId)[Symbol.asyncIterator]();
      const first = iterator.next();
      await redisSubscribers(alice, 1, otherSecret);
      // Ours (same account id), then the other deployment's own: only the latter arrives there.
      await emitOnA(alice, 'form.viewed', aliceParties[0]!.id);
      await other.publish([
        { type: 'form.completed', accountId: alice.accountId, recordId: aliceParties[1]!.id, at: new Date() },
      ]);
      expect((await first).value).toMatchObject({ type: 'form.completed', submitterId: aliceParties[1]!.id });
      await iterator.return?.();
    } finally {
      await other.close();
    }
  });
});

describe('Redis unavailable', () => {
  it('an instance with an unreachable REDIS_URL still starts and serves; emitting does not fail', async () => {
    const down = await startTestApp({
      env: { REDIS_URL: `redis://127.0.0.1:${await freePort()}`, SECRET_KEY_BASE: SECRET },
    });
    try {
      const carol = await down.createAccount({ name: 'Carol', email: 'carol@redis.test' });
      const created = await rest(down.url, carol.apiKey, 'POST', '/templates/pdf', {
        name: 'Offline',
        documents: [{ name: 'doc', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
      });
      // template.created is emitted; its live publication fails and is logged, the call succeeds.
      expect(created.status, JSON.stringify(created.json)).toBe(200);
      await until(
        () => down.logs.some((l) => l.msg === 'live events not published'),
        15_000,
        'the publication failure to be logged',
      );
    } finally {
      await down.close();
    }
  });
});
