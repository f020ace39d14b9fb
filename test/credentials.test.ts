/**
 * Credentials that end when revoked (issue 12 §4; src/accounts/credential-sessions.ts,
 * src/graphql/connections.ts): revoking an API key through the API closes every graphql-ws socket
 * opened with it (code 4403) and ends every SSE stream within 1 s, and nothing more arrives on
 * them; other keys' sessions stay open; the key gets 401 at once. With REDIS_URL, a revocation on
 * one instance closes the sessions on another (a real `node dist/main.mjs` on the same database),
 * also when made with the CLI. A key revoked (or a user archived) behind the service's back ends
 * its sessions at the next periodic check. And neither adding a webhook URL nor a test delivery
 * tells what a destination resolved to.
 *
 * The instances whose closing is measured check credentials only hourly
 * (CREDENTIALS_RECHECK_SECONDS=3600), so a close within 1 s is the announcement's doing.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createClient, type Client } from 'graphql-ws';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { revokeApiKey } from '../src/accounts/api-keys.ts';
import { CREDENTIAL_REVOCATIONS_TOPIC, redisChannelPrefix } from '../src/events/pubsub.ts';
import { WEBHOOK_DESTINATION_REFUSED } from '../src/webhooks/send-request.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { runSignet, startService, type ServiceProcess } from './helpers/processes.ts';
import { type Feed, subscribeSse, subscribeWs, until, type SubscriptionResult } from './helpers/subscriptions.ts';

const FORM_EVENTS = 'subscription { formEvents { eventType submitter { id } } }';
/** Webhook destinations the default configuration refuses, for different reasons. */
const REFUSED_DESTINATIONS = [
  'http://localhost:9/hook', // a name that resolves to a loopback address
  'http://10.255.255.1/hook', // a private address
  'http://no-such-host.invalid/hook', // a name that does not resolve
];
/** An hour: no periodic check interferes with what these tests time. */
const NO_RECHECK = { CREDENTIALS_RECHECK_SECONDS: '3600' };

interface Socket {
  client: Client;
  /** Close events of the socket, with when they came (ms since the epoch). */
  closes: { code: number; reason: string; at: number }[];
}

const sockets: Socket[] = [];

/** A graphql-ws client with `key` in its connection parameters that records how its socket closes. */
function socket(url: string, key: string): Socket {
  const closes: Socket['closes'] = [];
  const client = createClient({
    url: `${url.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { 'X-Auth-Token': key },
    retryAttempts: 0,
    lazy: true,
    on: {
      closed: (event) =>
        closes.push({ code: (event as CloseEvent).code, reason: (event as CloseEvent).reason, at: Date.now() }),
    },
  });
  const s = { client, closes };
  sockets.push(s);
  return s;
}

/** A new API key for the account's user, made over GraphQL. */
async function newKey(url: string, account: CreatedAccount, name: string): Promise<{ id: number; token: string }> {
  const { body } = await graphql(
    url,
    'mutation ($name: String) { createApiKey(input: {name: $name}) { token apiKey { id } } }',
    {
      key: account.apiKey,
      variables: { name },
    },
  );
  expect(body.errors).toBeUndefined();
  return { id: body.data.createApiKey.apiKey.id, token: body.data.createApiKey.token };
}

/** Revokes key `id` through the API with the account's main key; resolves with when the request was sent. */
async function revokeThroughApi(url: string, account: CreatedAccount, id: number): Promise<number> {
  const sent = Date.now();
  const { body } = await graphql(
    url,
    'mutation ($id: Int!) { revokeApiKey(input: {id: $id}) { apiKey { revokedAt } } }',
    {
      key: account.apiKey,
      variables: { id },
    },
  );
  expect(body.errors).toBeUndefined();
  expect(body.data.revokeApiKey.apiKey.revokedAt).toMatch(/Z$/);
  return sent;
}

/** A template and a submission of the account; resolves with its submitter's id (to raise form events about). */
async function submitterOf(url: string, account: CreatedAccount): Promise<number> {
  const template = await rest(url, account.apiKey, 'POST', '/templates/pdf', {
    name: 'Form',
    documents: [{ name: 'form', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [{ name: 'Name', role: 'Client', areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }] }],
  });
  expect(template.status, JSON.stringify(template.json)).toBe(200);
  const created = await rest(url, account.apiKey, 'POST', '/submissions', {
    template_id: template.json.id,
    send_email: false,
    submitters: [{ role: 'Client', email: 'client@credentials.test' }],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  return created.json[0].id;
}

const resultsOf = (feed: Feed) => feed.count;

/**
 * Raises events until every feed has had one, so that each subscription is known to listen (the
 * protocols do not say when a subscription starts, and on another process it cannot be counted).
 */
async function untilListening(feeds: Feed[], emit: () => Promise<void>): Promise<void> {
  await until(
    async () => {
      if (feeds.every((f) => f.count > 0)) return true;
      await emit();
      await new Promise((resolve) => setTimeout(resolve, 100));
      return feeds.every((f) => f.count > 0);
    },
    15_000,
    'every subscription to get an event',
  );
}

afterAll(async () => {
  for (const s of sockets) await s.client.dispose();
});

describe('one instance', () => {
  let t: TestApp;
  let alice: CreatedAccount;
  let submitterId: number;
  const emit = () =>
    t.app.effects.emit([{ type: 'form.viewed', accountId: alice.accountId, recordId: submitterId, at: new Date() }]);

  beforeAll(async () => {
    t = await startTestApp({ env: NO_RECHECK });
    alice = await t.createAccount({ name: 'Alice' });
    submitterId = await submitterOf(t.url, alice);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it(
    'closes the graphql-ws sockets of a key revoked through the API with 4403 within 1 s; ' +
      'nothing more arrives on them, other keys stay open',
    async () => {
      const revoked = await newKey(t.url, alice, 'to revoke');
      const first = socket(t.url, revoked.token);
      const second = socket(t.url, revoked.token);
      const other = socket(t.url, alice.apiKey);
      const feeds = [subscribeWs(first.client, FORM_EVENTS), subscribeWs(second.client, FORM_EVENTS)];
      const control = subscribeWs(other.client, FORM_EVENTS);
      await until(() => t.app.live.subscriberCount(alice.accountId) === 3, 15_000, 'three subscribers');
      await emit();
      for (const feed of [...feeds, control]) expect((await feed.nextData()).formEvents.eventType).toBe('form.viewed');

      const sent = await revokeThroughApi(t.url, alice, revoked.id);
      await until(
        () => first.closes.length > 0 && second.closes.length > 0,
        1000,
        'both sockets of the revoked key to close',
      );
      for (const s of [first, second]) {
        expect(s.closes[0]!.code).toBe(4403);
        expect(s.closes[0]!.reason).toMatch(/^Forbidden/);
        expect(s.closes[0]!.at - sent).toBeLessThan(1000);
      }
      await until(
        () => t.app.live.subscriberCount(alice.accountId) === 1,
        1000,
        'the revoked sessions to stop listening',
      );

      // The next event reaches the other key's socket only.
      const before = feeds.map(resultsOf);
      await emit();
      expect((await control.nextData()).formEvents.eventType).toBe('form.viewed');
      expect(feeds.map(resultsOf)).toEqual(before);
      expect(other.closes).toEqual([]);
      control.close();
    },
  );

  it('ends an SSE subscription of a key revoked through the API within 1 s; nothing more arrives on it', async () => {
    const revoked = await newKey(t.url, alice, 'sse');
    const { feed, status } = await subscribeSse(t.url, revoked.token, FORM_EVENTS);
    expect(status).toBe(200);
    const control = (await subscribeSse(t.url, alice.apiKey, FORM_EVENTS)).feed;
    await until(() => t.app.live.subscriberCount(alice.accountId) === 2, 15_000, 'two subscribers');
    await emit();
    expect((await feed.nextData()).formEvents.eventType).toBe('form.viewed');
    expect((await control.nextData()).formEvents.eventType).toBe('form.viewed');

    const sent = await revokeThroughApi(t.url, alice, revoked.id);
    await until(() => feed.done, 1000, 'the SSE stream to end');
    expect(Date.now() - sent).toBeLessThan(1000);
    expect(feed.failure).toBeUndefined();
    await until(() => t.app.live.subscriberCount(alice.accountId) === 1, 1000, 'the revoked stream to stop listening');

    const count = feed.count;
    await emit();
    expect((await control.nextData()).formEvents.eventType).toBe('form.viewed');
    expect(feed.count).toBe(count);
    expect(control.done).toBe(false);
    control.close();
  });

  it('refuses a revoked key at once: 401 over REST, UNAUTHENTICATED over GraphQL and graphql-ws', async () => {
    const key = await newKey(t.url, alice, 'refused');
    expect((await rest(t.url, key.token, 'GET', '/user')).status).toBe(200);
    await revokeThroughApi(t.url, alice, key.id);
    const user = await rest(t.url, key.token, 'GET', '/user');
    expect(user).toEqual({ status: 401, json: { error: 'Not authenticated' } });
    const viewer = await graphql(t.url, '{ viewer { user { id } } }', { key: key.token });
    expect(viewer.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const again = subscribeWs(socket(t.url, key.token).client, FORM_EVENTS);
    const result = (await again.next(5000)) as SubscriptionResult;
    expect(result.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  it(
    'webhook URLs that delivery would refuse are refused as they are added, ' + 'in one message for every cause',
    async () => {
      const CREATE = 'mutation ($url: String!) { createWebhookEndpoint(input: {url: $url}) { endpoint { id } } }';
      const answers: unknown[] = [];
      for (const url of REFUSED_DESTINATIONS) {
        const { body } = await graphql(t.url, CREATE, { key: alice.apiKey, variables: { url } });
        expect(body.data?.createWebhookEndpoint ?? null, url).toBeNull();
        answers.push({ message: body.errors?.[0]?.message, extensions: body.errors?.[0]?.extensions });
      }
      expect(answers).toEqual(
        REFUSED_DESTINATIONS.map(() => ({
          message: WEBHOOK_DESTINATION_REFUSED,
          extensions: { code: 'VALIDATION', details: { path: ['url'] } },
        })),
      );
      expect(JSON.stringify(answers)).not.toMatch(/127\.0\.0\.1|::1|10\.255|loopback/i);

      // A URL changed to one of them likewise, and the endpoint keeps its URL.
      const public_ = await t.db.webhookEndpoint.create({
        data: {
          accountId: alice.accountId,
          url: 'https://hooks.example.com/x',
          events: ['form.viewed'],
          secret: 'whsec_test',
        },
      });
      for (const url of REFUSED_DESTINATIONS) {
        const { body } = await graphql(
          t.url,
          'mutation ($id: Int!, $url: String!) { ' +
            'updateWebhookEndpoint(input: {id: $id, url: $url}) { endpoint { id } } }',
          {
            key: alice.apiKey,
            variables: { id: public_.id, url },
          },
        );
        expect(body.errors?.[0]?.message, url).toBe(WEBHOOK_DESTINATION_REFUSED);
      }
      expect((await t.db.webhookEndpoint.findUniqueOrThrow({ where: { id: public_.id } })).url).toBe(
        'https://hooks.example.com/x',
      );
      await t.db.webhookEndpoint.delete({ where: { id: public_.id } });
    },
  );

  it(
    'webhook test errors say only "Webhook request failed", whatever the destination resolved to ' + '(logged in full)',
    async () => {
      const errors: unknown[] = [];
      for (const url of REFUSED_DESTINATIONS) {
        // Stored as it was added before its name changed (or before this check existed): delivery checks again.
        const created = await t.db.webhookEndpoint.create({
          data: { accountId: alice.accountId, url, events: ['form.viewed'], secret: 'whsec_test' },
        });
        const { body } = await graphql(
          t.url,
          'mutation ($id: Int!) { sendTestWebhook(input: {endpointId: $id}) { delivery { id status attempts { ' +
            'statusCode error responseBody } } } }',
          { key: alice.apiKey, variables: { id: created.id } },
        );
        expect(body.errors, url).toBeUndefined();
        const { delivery } = body.data.sendTestWebhook;
        expect(delivery.status).toBe('failed');
        errors.push(delivery.attempts);
        // The reason is for operators: in the server log with the delivery.
        expect(
          t.logs.find((l) => l.msg === 'webhook request failed' && l.deliveryId === delivery.id)?.reason,
          url,
        ).toMatch(/Refused: .* resolves to|does not resolve/);
      }
      expect(errors).toEqual(
        REFUSED_DESTINATIONS.map(() => [{ statusCode: null, error: 'Webhook request failed', responseBody: null }]),
      );
      expect(JSON.stringify(errors)).not.toMatch(/127\.0\.0\.1|::1|10\.255|resolve|private|loopback/i);
    },
  );
});

describe('revoked behind the service (SQL, the CLI without Redis): the periodic check', () => {
  let t: TestApp;
  let alice: CreatedAccount;
  beforeAll(async () => {
    t = await startTestApp({ env: { CREDENTIALS_RECHECK_SECONDS: '0.5' } });
    alice = await t.createAccount({ name: 'Alice' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it(
    'closes the sessions of a key revoked, or of a user archived, without an announcement, ' +
      'within the check interval',
    async () => {
      const revoked = await newKey(t.url, alice, 'revoked in SQL');
      const kept = await newKey(t.url, alice, 'kept');
      const viaRevoked = socket(t.url, revoked.token);
      const viaKept = socket(t.url, kept.token);
      subscribeWs(viaRevoked.client, FORM_EVENTS);
      const keptFeed = subscribeWs(viaKept.client, FORM_EVENTS);
      const sse = (await subscribeSse(t.url, revoked.token, FORM_EVENTS)).feed;
      await until(() => t.app.live.subscriberCount(alice.accountId) === 3, 15_000, 'three subscribers');

      // As the CLI does without REDIS_URL: the row only.
      const at = Date.now();
      await revokeApiKey(t.db, { keyId: revoked.id });
      await until(() => viaRevoked.closes.length > 0 && sse.done, 3000, 'the periodic check to end both sessions');
      expect(viaRevoked.closes[0]!.code).toBe(4403);
      expect(Date.now() - at).toBeLessThan(1500);
      expect(viaKept.closes).toEqual([]);
      expect(keptFeed.done).toBe(false);

      // An archived user's keys stop authenticating: their sessions end too.
      await t.db.user.update({ where: { id: alice.userId }, data: { archivedAt: new Date() } });
      await until(() => viaKept.closes.length > 0, 3000, 'the archived user’s socket to close');
      expect(viaKept.closes[0]!.code).toBe(4403);
    },
  );
});

describe('two instances, one database, one Redis', () => {
  const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  const SECRET = randomBytes(32).toString('hex');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-credentials-b-'));
  let a: TestApp;
  let b: ServiceProcess;
  let redis: Redis;
  let alice: CreatedAccount;
  let submitterId: number;
  /**
   * An event raised on A: a subscriber that gets it is listening (the protocols do not say when a subscription starts).
   */
  const emitOnA = () =>
    a.app.effects.emit([{ type: 'form.viewed', accountId: alice.accountId, recordId: submitterId, at: new Date() }]);

  beforeAll(async () => {
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true });
    await redis.connect(); // the local Redis must answer (../shared/DESIGN.md)
    a = await startTestApp({ env: { ...NO_RECHECK, REDIS_URL, SECRET_KEY_BASE: SECRET } });
    b = await startService({
      ...NO_RECHECK,
      DATABASE_URL: a.database.url,
      DATA_DIR: dataDir,
      REDIS_URL,
      SECRET_KEY_BASE: SECRET,
      CREATE_DEV_ACCOUNT: 'false',
      NODE_ENV: 'test',
    });
    alice = await a.createAccount({ name: 'Alice' });
    submitterId = await submitterOf(a.url, alice);
    // Both instances listen to the deployment's revocation channel.
    const channel = `${redisChannelPrefix(SECRET)}${CREDENTIAL_REVOCATIONS_TOPIC}`;
    await until(
      async () => Number(((await redis.call('PUBSUB', 'NUMSUB', channel)) as [string, number])[1]) === 2,
      15_000,
      'two instances subscribed to the revocation channel',
    );
  }, 180_000);
  afterAll(async () => {
    await b?.stop();
    await a?.close();
    redis?.disconnect();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('revoking on A closes the graphql-ws socket and ends the SSE stream on B within 1 s', async () => {
    const revoked = await newKey(a.url, alice, 'used on B');
    const onB = socket(b.url, revoked.token);
    const feed = subscribeWs(onB.client, FORM_EVENTS);
    const sse = (await subscribeSse(b.url, revoked.token, FORM_EVENTS)).feed;
    const control = socket(b.url, alice.apiKey);
    const controlFeed = subscribeWs(control.client, FORM_EVENTS);
    // All three listen on B once B's Redis connection subscribed to
    // the account's channel and an event raised on A reached them.
    const accountChannel = `${redisChannelPrefix(SECRET)}account-events:${alice.accountId}`;
    await until(
      async () => Number(((await redis.call('PUBSUB', 'NUMSUB', accountChannel)) as [string, number])[1]) === 1,
      15_000,
      'B listening',
    );
    await untilListening([feed, sse, controlFeed], emitOnA);
    expect((await feed.nextData()).formEvents.eventType).toBe('form.viewed');

    const sent = await revokeThroughApi(a.url, alice, revoked.id);
    await until(() => onB.closes.length > 0 && sse.done, 1000, 'the socket and the stream on B to end');
    expect(onB.closes[0]).toMatchObject({ code: 4403 });
    expect(onB.closes[0]!.at - sent).toBeLessThan(1000);
    // Nothing more on them: the next event reaches the other key's socket only.
    const counts = [feed.count, sse.count, controlFeed.count];
    await emitOnA();
    await until(() => controlFeed.count > counts[2]!, 15_000, 'the next event on the other key’s socket');
    expect([feed.count, sse.count]).toEqual(counts.slice(0, 2));
    expect(control.closes).toEqual([]);
    controlFeed.close();
  });

  it('a revoked key gets 401 at once on both instances', async () => {
    const key = await newKey(a.url, alice, 'both');
    for (const url of [a.url, b.url]) expect((await rest(url, key.token, 'GET', '/user')).status).toBe(200);
    await revokeThroughApi(b.url, alice, key.id);
    for (const url of [a.url, b.url])
      expect(await rest(url, key.token, 'GET', '/user')).toEqual({ status: 401, json: { error: 'Not authenticated' } });
  });

  it('`signet api-key revoke` with REDIS_URL closes the key’s sockets on the running instances at once', async () => {
    const revoked = await newKey(a.url, alice, 'cli');
    const onA = socket(a.url, revoked.token);
    const onB = socket(b.url, revoked.token);
    const feeds = [subscribeWs(onA.client, FORM_EVENTS), subscribeWs(onB.client, FORM_EVENTS)];
    await until(() => a.app.live.subscriberCount(alice.accountId) === 1, 15_000, 'A listening');
    const accountChannel = `${redisChannelPrefix(SECRET)}account-events:${alice.accountId}`;
    await until(
      async () => Number(((await redis.call('PUBSUB', 'NUMSUB', accountChannel)) as [string, number])[1]) === 2,
      15_000,
      'A and B listening',
    );
    await untilListening(feeds, emitOnA);

    const cli = await runSignet(['api-key', 'revoke', '--key-id', String(revoked.id)], {
      DATABASE_URL: a.database.url,
      DATA_DIR: dataDir,
      REDIS_URL,
      SECRET_KEY_BASE: SECRET,
    });
    expect(cli.code, cli.stderr).toBe(0);
    const exited = Date.now();
    await until(() => onA.closes.length > 0 && onB.closes.length > 0, 1000, 'both sockets to close');
    for (const s of [onA, onB]) expect(s.closes[0]).toMatchObject({ code: 4403 });
    expect(Date.now() - exited).toBeLessThan(1000);
  });
});
