/**
 * Credentials that end when revoked (issue 12 §4, issue 23 §7; src/accounts/credential-sessions.ts,
 * src/db/listener.ts, src/graphql/connections.ts): revoking an API key through the API closes every
 * graphql-ws socket opened with it (code 4403) and ends every SSE stream within 1 s, and nothing
 * more arrives on them; other keys' sessions stay open; the key gets 401 at once. On two real
 * service processes (`node dist/main.mjs`) on one database and no Redis, `signet api-key revoke`
 * (the real CLI), archiving a user and archiving an account close the sessions on both within 1 s
 * of the change, through PostgreSQL's LISTEN/NOTIFY; a listening connection killed with
 * pg_terminate_backend comes back and delivers again; one cut while a key is revoked catches up
 * when it is back. A revocation whose notification never came ends its sessions at the next
 * periodic check. And neither adding a webhook URL nor a test delivery tells what a destination
 * resolved to.
 *
 * The instances whose closing is measured check credentials only hourly
 * (CREDENTIALS_RECHECK_SECONDS=3600), so a close within 1 s is the notification's doing.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createClient, type Client } from 'graphql-ws';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createAccount, type CreatedAccount } from '../src/accounts/create-account.ts';
import { createApiKey } from '../src/accounts/api-keys.ts';
import { authenticate } from '../src/accounts/authenticate.ts';
import { createCredentialSessions, REVOCATIONS_LISTENER_NAME } from '../src/accounts/credential-sessions.ts';
import { createDb, type Db } from '../src/db/client.ts';
import { WEBHOOK_DESTINATION_REFUSED } from '../src/webhooks/send-request.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { runSignet, startService, type ServiceProcess } from './helpers/processes.ts';
import { type Feed, subscribeSse, subscribeWs, until, type SubscriptionResult } from './helpers/subscriptions.ts';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.ts';

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

  it('a session that authenticated before its key was revoked but is tracked after the notification ends', async () => {
    const sessions = createCredentialSessions({ db: t.db, logger: pino({ level: 'silent' }), recheckMs: 3_600_000 });
    await sessions.start();
    try {
      const key = await newKey(t.url, alice, 'raced');
      const early = await authenticate(t.db, key.token);
      const late = await authenticate(t.db, key.token);
      let earlyEnded = false;
      let lateEnded = false;
      sessions.track(early!, () => (earlyEnded = true));
      await t.db.apiKey.update({ where: { id: key.id }, data: { revokedAt: new Date() } });
      await until(() => earlyEnded, 1000, 'the tracked session to end on the notification');
      // Tracked only now (an SSE stream is tracked once its execution started): ended all the same.
      sessions.track(late!, () => (lateEnded = true));
      await until(() => lateEnded, 1000, 'the session tracked after the notification to end');
    } finally {
      await sessions.close();
    }
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

describe('a revocation PostgreSQL did not announce: the periodic check', () => {
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
    'closes the sessions of a key revoked, or of a user archived, whose notification never came, ' +
      'within the check interval',
    async () => {
      const revoked = await newKey(t.url, alice, 'revoked, unannounced');
      const kept = await newKey(t.url, alice, 'kept');
      const viaRevoked = socket(t.url, revoked.token);
      const viaKept = socket(t.url, kept.token);
      subscribeWs(viaRevoked.client, FORM_EVENTS);
      const keptFeed = subscribeWs(viaKept.client, FORM_EVENTS);
      const sse = (await subscribeSse(t.url, revoked.token, FORM_EVENTS)).feed;
      await until(() => t.app.live.subscriberCount(alice.accountId) === 3, 15_000, 'three subscribers');
      // The instance listens: only the notification is missing (its triggers skipped), as when it is lost.
      expect(await listeners(t.database.url)).toHaveLength(1);

      const at = Date.now();
      await withoutNotification(t.database.url, 'UPDATE api_keys SET revoked_at = now() WHERE id = $1', [revoked.id]);
      await until(() => viaRevoked.closes.length > 0 && sse.done, 3000, 'the periodic check to end both sessions');
      expect(viaRevoked.closes[0]!.code).toBe(4403);
      expect(Date.now() - at).toBeLessThan(1500);
      expect(viaKept.closes).toEqual([]);
      expect(keptFeed.done).toBe(false);

      // An archived user's keys stop authenticating: their sessions end too.
      await withoutNotification(t.database.url, 'UPDATE users SET archived_at = now() WHERE id = $1', [alice.userId]);
      await until(() => viaKept.closes.length > 0, 3000, 'the archived user’s socket to close');
      expect(viaKept.closes[0]!.code).toBe(4403);
    },
  );
});

/** Runs one statement with the database's triggers off for its session (so no NOTIFY is sent). */
async function withoutNotification(url: string, sql: string, params: unknown[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // `replica` fires no ordinary trigger (PostgreSQL: session_replication_role); the test user is a superuser.
    await client.query('SET session_replication_role = replica');
    await client.query(sql, params);
  } finally {
    await client.end();
  }
}

/** The backends listening for credential revocations on the database at `url`: their pids. */
async function listeners(url: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 ' +
        "AND query LIKE 'LISTEN %' ORDER BY pid",
      [REVOCATIONS_LISTENER_NAME],
    );
    return rows.map((row) => row.pid);
  } finally {
    await client.end();
  }
}

describe('two service processes on one database, no Redis: revocations through LISTEN/NOTIFY', () => {
  const SECRET = randomBytes(32).toString('hex');
  const dataDirs = [0, 1].map((i) => fs.mkdtempSync(path.join(os.tmpdir(), `signet-credentials-${i}-`)));
  let database: TestDatabase;
  let db: Db;
  /** B reaches PostgreSQL through this proxy, so that a test can cut B alone off the database. */
  let proxy: TcpProxy;
  let a: ServiceProcess;
  let b: ServiceProcess;
  const cli = (args: string[]) =>
    runSignet(args, {
      DATABASE_URL: database.url,
      DATA_DIR: dataDirs[0],
      SECRET_KEY_BASE: SECRET,
      REDIS_URL: undefined,
    });

  beforeAll(async () => {
    database = await createTestDatabase();
    db = createDb(database.url, { poolSize: 2 });
    proxy = await startTcpProxy({ port: Number(new URL(database.url).port || 5432) });
    const env = (dataDir: string, databaseUrl: string) => ({
      ...NO_RECHECK,
      NODE_ENV: 'test',
      DATABASE_URL: databaseUrl,
      DATA_DIR: dataDir,
      SECRET_KEY_BASE: SECRET,
      CREATE_DEV_ACCOUNT: 'false',
      REDIS_URL: undefined,
    });
    [a, b] = await Promise.all([
      startService(env(dataDirs[0]!, database.url)),
      startService(env(dataDirs[1]!, proxy.url(database.url))),
    ]);
  }, 180_000);
  afterAll(async () => {
    for (const s of sockets) await s.client.dispose();
    await Promise.all([a?.stop(), b?.stop()]);
    await db?.$disconnect();
    await proxy?.close();
    await database?.drop();
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A new account (its user and key), and a second key of that user: one per test, nothing shared. */
  async function newAccount(name: string) {
    const account = await createAccount(db, { name, email: `${name.toLowerCase()}-${Date.now()}@credentials.test` });
    const { token: otherKey } = await createApiKey(db, { userId: account.userId, name: 'other' });
    return { ...account, otherKey };
  }

  /**
   * A graphql-ws socket on `url` with `key`, subscribed to form events; resolves once the
   * instance tracks it (a query answered on the same socket: each operation authenticates it).
   */
  async function openSession(url: string, key: string): Promise<Socket & { feed: Feed }> {
    const s = socket(url, key);
    const feed = subscribeWs(s.client, FORM_EVENTS);
    const viewer = subscribeWs(s.client, '{ viewer { user { id } } }');
    expect((await viewer.nextData()).viewer.user.id).toBeGreaterThan(0);
    return { ...s, feed };
  }

  /** Waits until every socket closed (within `ms`) and checks each closed with 4403 within `ms` of `from`. */
  async function expectClosedWithin(sessions: Socket[], from: number, ms: number, what: string): Promise<void> {
    await until(() => sessions.every((s) => s.closes.length > 0), ms + 2000, what);
    for (const s of sessions) {
      expect(s.closes[0]).toMatchObject({ code: 4403 });
      expect(s.closes[0]!.at - from, what).toBeLessThan(ms);
    }
  }

  it('each instance listens on one connection of its own', async () => {
    expect(await listeners(database.url)).toHaveLength(2);
  });

  it(
    '`signet api-key revoke` closes the key’s graphql-ws and SSE sessions on both instances within 1 s of ' +
      'its return; the user’s other key stays open',
    async () => {
      const account = await newAccount('Cli');
      const revoked = [await openSession(a.url, account.apiKey), await openSession(b.url, account.apiKey)];
      const sse = await Promise.all([a.url, b.url].map((url) => subscribeSse(url, account.apiKey, FORM_EVENTS)));
      const kept = [await openSession(a.url, account.otherKey), await openSession(b.url, account.otherKey)];
      const run = await cli(['api-key', 'revoke', '--key-id', String(account.apiKeyId)]);
      expect(run.code, run.stderr).toBe(0);
      const returned = Date.now();
      await expectClosedWithin(revoked, returned, 1000, 'both sockets of the revoked key to close');
      await until(() => sse.every(({ feed }) => feed.done), 1000, 'both SSE streams to end');
      expect(Date.now() - returned).toBeLessThan(1000);
      for (const s of kept) {
        expect(s.closes).toEqual([]);
        expect(s.feed.done).toBe(false);
      }
    },
  );

  it('archiving a user closes the sessions of all its keys on both instances within 1 s', async () => {
    const account = await newAccount('User');
    const sessions = await Promise.all(
      [a.url, b.url].flatMap((url) => [openSession(url, account.apiKey), openSession(url, account.otherKey)]),
    );
    const control = await newAccount('Bystander');
    const untouched = await openSession(b.url, control.apiKey);

    // No path of the service archives a user: an operator does it in SQL.
    const archived = Date.now();
    await db.user.update({ where: { id: account.userId }, data: { archivedAt: new Date() } });
    await expectClosedWithin(sessions, archived, 1000, 'the archived user’s four sockets to close');
    expect(untouched.closes).toEqual([]);
  });

  it('archiving an account closes the sessions of all its keys on both instances within 1 s', async () => {
    const account = await newAccount('Account');
    const sessions = await Promise.all(
      [a.url, b.url].flatMap((url) => [openSession(url, account.apiKey), openSession(url, account.otherKey)]),
    );
    const archived = Date.now();
    await db.account.update({ where: { id: account.accountId }, data: { archivedAt: new Date() } });
    await expectClosedWithin(sessions, archived, 1000, 'the archived account’s four sockets to close');
  });

  it('a listening connection killed with pg_terminate_backend comes back and delivers again', async () => {
    const before = await listeners(database.url);
    expect(before).toHaveLength(2);
    await db.$queryRawUnsafe('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', before);
    await until(
      async () => {
        const now = await listeners(database.url);
        return now.length === 2 && now.every((pid) => !before.includes(pid));
      },
      10_000,
      'both instances to LISTEN again on new connections',
    );

    const account = await newAccount('Reconnected');
    const sessions = [await openSession(a.url, account.apiKey), await openSession(b.url, account.apiKey)];
    const run = await cli(['api-key', 'revoke', '--key-id', String(account.apiKeyId)]);
    expect(run.code, run.stderr).toBe(0);
    await expectClosedWithin(sessions, Date.now(), 1000, 'both sockets to close after the reconnection');
  });

  it('a key revoked while an instance could not listen ends its sessions there once it listens again', async () => {
    const account = await newAccount('Missed');
    const [onA, onB] = [await openSession(a.url, account.apiKey), await openSession(b.url, account.apiKey)];

    // B loses its database (its listening connection with it); A does not.
    await proxy.cut('refuse');
    await until(async () => (await listeners(database.url)).length === 1, 5000, 'B to stop listening');
    const run = await cli(['api-key', 'revoke', '--key-id', String(account.apiKeyId)]);
    expect(run.code, run.stderr).toBe(0);
    await expectClosedWithin([onA], Date.now(), 1000, 'the socket on A to close at once');
    // B missed the notification; its sockets stay open while it cannot read the database.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(onB.closes).toEqual([]);

    await proxy.restore();
    const restored = Date.now();
    // B reconnects (its backoff is at most 5 s), then checks its open sessions.
    await expectClosedWithin([onB], restored, 6000, 'the socket on B to close once B listens again');
    await until(async () => (await listeners(database.url)).length === 2, 5000, 'B to listen again');
  });
});
