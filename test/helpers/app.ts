/**
 * A real Signet HTTP server on loopback over a fresh test database.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createAccount, type CreatedAccount } from '../../src/accounts/create-account.ts';
import { buildApp, type App } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { findFreePort } from '../../src/util/free-port.ts';
import { createDb, type Db } from '../../src/db/client.ts';
import type { RestRoute } from '../../rest-compat/gateway.ts';
import { docusealRestApi } from '../../rest-compat/index.ts';
import type { FileUrlSigner } from '../../src/documents/file-urls.ts';
import type { FileStorage } from '../../src/documents/storage.ts';
import { createJobQueue, type JobQueue } from '../../src/jobs/job-queue.ts';
import type { Clock } from '../../src/util/clock.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';

export interface TestApp {
  url: string;
  db: Db;
  app: App;
  /** The app's job queue (started, scanning every 50 ms): `await t.jobs.waitForIdle()` before checking effects. */
  jobs: JobQueue;
  config: Config;
  database: TestDatabase;
  /** Every log line the server wrote, parsed. */
  logs: Record<string, unknown>[];
  /** SQL statements run through `db` since the last resetQueries(). */
  queries: string[];
  /** Waits until no statement has been reported for 50 ms (Prisma reports them asynchronously). */
  settleQueries(): Promise<void>;
  /** settleQueries(), then forgets the statements so far. */
  resetQueries(): Promise<void>;
  /**
   * Resolves once the outbox is empty: the jobs (and events) recorded so far are in the job
   * store (agenda.jobs). The relay runs right after each commit, so this is usually at once.
   */
  outboxRelayed(timeoutMs?: number): Promise<void>;
  /** Creates an account with a user and an API key. */
  createAccount(overrides?: {
    name?: string;
    email?: string;
    firstName?: string;
    lastName?: string;
  }): Promise<CreatedAccount>;
  close(): Promise<void>;
}

let sequence = 0;

/**
 * Starts the service on 127.0.0.1 on a free port.
 * @param options.env extra configuration variables (e.g. MAX_BODY_SIZE_MB)
 * @param options.databaseUrl use this URL for the service's db instead of the test database (e.g. an unreachable one)
 * @param options.viaDatabaseUrl the URL the service (its db and job queue) uses for the test database's URL,
 *   e.g. the same database through a TCP proxy (test/helpers/tcp-proxy.ts); the returned `db` connects directly
 * @param options.storage, options.signer passed to buildApp (default: built from config)
 * @param options.clock passed to buildApp: the time reminders are judged by (test/helpers/clock.ts)
 * DATA_DIR is a new temporary directory, removed by close(), unless options.env sets it.
 * The job queue runs on the test database with fast polling; close() stops it with the app.
 */
export async function startTestApp(
  options: {
    env?: Record<string, string>;
    extraRestRoutes?: RestRoute[];
    databaseUrl?: string;
    viaDatabaseUrl?: (testDatabaseUrl: string) => string;
    storage?: FileStorage;
    signer?: FileUrlSigner;
    clock?: Clock;
  } = {},
): Promise<TestApp> {
  const database = await createTestDatabase();
  const queries: string[] = [];
  const logs: Record<string, unknown>[] = [];
  const serviceDatabaseUrl = options.viaDatabaseUrl?.(database.url);
  const db = createDb(options.databaseUrl ?? serviceDatabaseUrl ?? database.url, {
    onQuery: (sql) => queries.push(sql),
  });
  const dataDir = options.env?.DATA_DIR ? undefined : await fs.mkdtemp(path.join(os.tmpdir(), 'signet-test-data-'));
  // Known before listening, so that links the app makes (APP_URL) point at this server.
  const port = await findFreePort();
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    DATABASE_URL: serviceDatabaseUrl ?? database.url,
    DATA_DIR: dataDir,
    APP_URL: `http://127.0.0.1:${port}`,
    ...options.env,
  });
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split('\n')) if (line.trim()) logs.push(JSON.parse(line));
      callback();
    },
  });
  const logger = pino({ level: 'info' }, stream);
  const jobs = createJobQueue({ connectionString: serviceDatabaseUrl ?? database.url, logger, processEvery: 50 });
  const app = await buildApp({
    config,
    db,
    logger,
    jobs,
    apis: [docusealRestApi({ extraRoutes: options.extraRestRoutes })],
    storage: options.storage,
    signer: options.signer,
    clock: options.clock,
  });
  const url = await app.start({ port, host: '127.0.0.1' });
  const setupDb = options.databaseUrl || serviceDatabaseUrl ? createDb(database.url) : db;
  const settleQueries = async () => {
    for (let seen = -1; seen !== queries.length; ) {
      seen = queries.length;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  return {
    url,
    db: setupDb,
    app,
    jobs,
    config,
    database,
    logs,
    queries,
    settleQueries,
    async resetQueries() {
      await settleQueries();
      queries.length = 0;
    },
    async outboxRelayed(timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const [{ n }] = await setupDb.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM outbox`;
        if (n === 0) return;
        if (Date.now() > deadline) throw new Error(`outboxRelayed: ${n} outbox rows after ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    createAccount: (overrides = {}) => {
      sequence += 1;
      return createAccount(setupDb, {
        name: overrides.name ?? `Account ${sequence}`,
        email: overrides.email ?? `user${sequence}-${Date.now()}@example.test`,
        firstName: overrides.firstName ?? 'Ada',
        lastName: overrides.lastName ?? 'Lovelace',
      });
    },
    async close() {
      await app.stop();
      if (setupDb !== db) await setupDb.$disconnect();
      await database.drop();
      if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** POST /graphql with an optional API key; returns the parsed JSON and status. */
export async function graphql(
  url: string,
  query: string,
  options: { key?: string; variables?: Record<string, unknown>; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: { data?: any; errors?: { message: string; extensions?: { code?: string } }[] } }> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(options.key ? { 'x-auth-token': options.key } : {}),
      ...options.headers,
    },
    body: JSON.stringify({ query, variables: options.variables }),
  });
  return { status: response.status, body: (await response.json()) as any };
}

/**
 * A JSON call to the REST API (`/api` + path) with an API key; the body parsed when there is one.
 */
export async function rest(
  url: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: any }> {
  const response = await fetch(`${url}/api${path}`, {
    method,
    headers: { 'X-Auth-Token': key, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

/**
 * The signer with this slug accepts the electronic-signature disclosure their form shows, as the
 * page does before the first signature or completing (docs/signing-form.md "Consent"): reads the
 * form's `consent.version`, then acceptSigningConsent. Tests that sign through the page's
 * mutations call it first. An unknown slug or a form that is no longer open is left as it is
 * (the completion that follows gets the refusal itself).
 * @returns the version accepted ('' for an unknown slug)
 */
export async function acceptConsentViaApi(
  url: string,
  slug: string,
  headers: Record<string, string> = {},
): Promise<string> {
  const read = await graphql(url, 'query ($slug: String!) { signingForm(slug: $slug) { consent { version } } }', {
    variables: { slug },
    headers,
  });
  const version = read.body.data?.signingForm?.consent?.version;
  // An unknown slug: the completion that follows answers NOT_FOUND itself.
  if (typeof version !== 'string') return '';
  const accepted = await graphql(
    url,
    'mutation ($slug: String!, $version: String!) { acceptSigningConsent(slug: $slug, version: $version) { slug } }',
    { variables: { slug, version }, headers },
  );
  const refusal = accepted.body.errors?.[0]?.message;
  if (refusal && !/^Form has been /.test(refusal)) throw new Error(`acceptSigningConsent: ${refusal}`);
  return version;
}
