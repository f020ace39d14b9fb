/**
 * Entry point and composition root (`npm start`): the service (src/) with its HTTP APIs (the
 * DocuSeal REST API, rest-compat/, passed to buildApp); it lives outside src/ so that nothing in
 * src/ depends on the REST layer. Open the database (embedded unless DATABASE_URL is set), apply
 * migrations, create the development account on the very first start, start the job queue, listen.
 * SIGTERM/SIGINT at any time: let start-up reach a safe point, then finish in-flight requests and
 * close everything opened so far, last opened first (HTTP server, job queue, database client,
 * embedded PostgreSQL).
 *
 * The start-up is one exported function, startSignet, run here when this file is the program
 * (`node dist/main.mjs`, scripts/build.mjs bundles this file). A test-only entry imports it and
 * adds what the service never sets (test/helpers/paused-service.ts: completion hooks;
 * test/helpers/clock-service.ts: a clock the test moves), so tests start the service exactly as
 * `npm start` does.
 */
import { realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import {
  DEVELOPMENT_ACCOUNT,
  ensureDevelopmentAccount,
  findDevelopmentUser,
} from './src/accounts/development-account.ts';
import { buildApp } from './src/app.ts';
import { ConfigError, loadConfig } from './src/config.ts';
import { createDb } from './src/db/client.ts';
import { openDatabase } from './src/db/database.ts';
import { applyMigrations } from './src/db/migrate.ts';
import { createJobQueue } from './src/jobs/job-queue.ts';
import { closeParsePool } from './src/parse-pool/pool.ts';
import type { CompletionHooks } from './src/signing/complete-submission.ts';
import type { Clock } from './src/util/clock.ts';
import { docusealRestApi } from './rest-compat/index.ts';

type Cleanup = { name: string; run: () => Promise<void> };

/** What a caller of startSignet adds to the service; `npm start` adds nothing. */
export interface StartSignetOptions {
  /**
   * Seams into the completion job, for tests only (test/helpers/paused-service.ts stops the job at
   * a step boundary so that a test can kill the process there); passed to buildApp.
   */
  completionHooks?: CompletionHooks;
  /**
   * The time reminders are judged by, for tests that move it (test/helpers/clock-service.ts);
   * passed to buildApp. Default: the machine's clock.
   */
  clock?: Clock;
}

async function start(
  config: ReturnType<typeof loadConfig>,
  { logger, print }: ServiceLog,
  cleanups: Cleanup[],
  options: StartSignetOptions,
): Promise<void> {
  const startedAt = Date.now();
  const database = await openDatabase(config, (line) => logger.debug({ component: 'postgres' }, line));
  cleanups.push({ name: 'PostgreSQL', run: () => database.close() });

  const { applied } = await applyMigrations({ connectionString: database.url, log: (line) => logger.info(line) });
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');

  const db = createDb(database.url, { poolSize: config.databasePoolSize });
  cleanups.push({ name: 'database client', run: () => db.$disconnect() });
  // After the HTTP server (closed first): its last requests' parses finish, then the workers end.
  cleanups.push({ name: 'parse pool', run: closeParsePool });
  // Before listening, so that the key printed below works from the first request.
  const dev = config.createDevAccount ? await ensureDevelopmentAccount(db) : null;
  // A restart: the key was printed on the first start only; say how to replace a lost one.
  const existingDev = config.createDevAccount && !dev ? await findDevelopmentUser(db) : null;

  const jobs = createJobQueue({
    connectionString: database.url,
    mongodbUrl: config.jobsMongodbUrl,
    logger,
    lockLifetimeMs: config.jobsLockLifetime,
    poolSize: config.databasePoolSize,
  });
  const app = await buildApp({
    config,
    db,
    logger,
    jobs,
    apis: [docusealRestApi()],
    ...(options.completionHooks ? { completionHooks: options.completionHooks } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  // app.stop() also stops the job queue and disconnects the database client.
  cleanups.push({ name: 'HTTP server', run: () => app.stop() });
  const url = await app.start();
  logger.info({ url, embeddedDatabase: database.embedded, startupMs: Date.now() - startedAt }, 'Signet is listening');

  const publicUrl = config.appUrl;
  const lines = [`Signet is running at ${publicUrl}  (GraphQL: ${publicUrl}/graphql, REST: ${publicUrl}/api)`];
  if (isLoopback(config.host))
    lines.push(
      `Listening on ${config.host} only: other machines cannot reach this service. ` +
        'Set HOST=0.0.0.0 to listen on every interface.',
    );
  if (dev) {
    lines.push(
      '',
      'First start: a development account was created. Its API key is shown only this once:',
      '',
      `  ${dev.apiKey}`,
      '',
      'Try it:',
      `  curl -H "X-Auth-Token: ${dev.apiKey}" ${publicUrl}/api/user`,
      '',
    );
  } else if (existingDev) {
    lines.push(
      '',
      `The development account (${DEVELOPMENT_ACCOUNT.email}, user ${existingDev.userId}) exists; ` +
        'its API key was shown on the first start only.',
      'Lost it? Make a new key (from this folder, with the environment of the service: DATABASE_URL, DATA_DIR):',
      '',
      `  ${lostKeyCommand(existingDev.userId)}`,
      '',
      '(`npx signet user list` lists the users, `npx signet api-key list --account-id N` their keys.)',
      '',
    );
  }
  print(`${lines.join('\n')}\n`);
}

/** Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost). */
function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

/** The exact command that makes a new API key for `userId` (the CLI, as README "API keys" runs it). */
function lostKeyCommand(userId: number): string {
  return `npx signet api-key create --user-id ${userId}`;
}

/**
 * Starts Signet as `npm start` does, configured by the environment (src/config.ts): opens the
 * database, applies migrations, creates the development account on the very first start, starts
 * the job queue, listens on PORT and prints the banner ("Signet is running at <APP_URL> …", with a
 * first start's API key). Installs SIGTERM/SIGINT handlers: start-up reaches a safe point, then
 * in-flight requests finish, everything opened is closed (last opened first) and the process
 * exits 0.
 * Exits the process with 2 on a configuration error (ConfigError, its message on stderr) and with
 * 1 when start-up fails ("Signet failed to start: …" on stderr, after closing what it opened).
 * @returns resolves once the service listens and the banner is out
 */
export function startSignet(options: StartSignetOptions = {}): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(error instanceof ConfigError ? 2 : 1);
  }
  const log = createLogger(config);
  const { logger } = log;
  const cleanups: Cleanup[] = [];
  const closeAll = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      await cleanup.run().catch((error) => logger.error({ err: error }, `closing the ${cleanup.name} failed`));
    }
  };

  const startup = start(config, log, cleanups, options);

  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    // A signal during start-up waits for it, so that nothing it opened is left behind.
    await startup.catch(() => undefined);
    await closeAll();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  return startup.catch(async (error) => {
    // The message says what to do; the stack helps only when debugging.
    const detail = error instanceof Error ? (config.logLevel === 'debug' ? error.stack : error.message) : String(error);
    process.stderr.write(`Signet failed to start: ${detail}\n`);
    await closeAll();
    process.exit(1);
  });
}

/** The service's logger, and how it prints text (the banner) to stdout in order with the log lines. */
interface ServiceLog {
  logger: pino.Logger;
  /** Writes `text` as it is to stdout, after the log lines written before it and never inside one. */
  print: (text: string) => void;
}

/**
 * The service's logger: JSON lines (pino), or pino-pretty's coloured lines for a person at a
 * terminal (config.logFormat: LOG_FORMAT, default pretty when stdout is a TTY outside production).
 * pino-pretty runs in this thread as pino's destination (no worker thread), and is loaded only
 * when used. JSON lines go through pino's own asynchronous destination (pino.destination(1), as
 * `pino()` makes by default; flushed at exit), so the banner is written to that same destination:
 * written beside it with process.stdout.write, it came before the lines logged earlier, or inside
 * one when stdout was slow (a full pipe or terminal makes the destination write in parts).
 */
function createLogger(config: ReturnType<typeof loadConfig>): ServiceLog {
  if (config.logFormat === 'json') {
    const destination = pino.destination(1);
    return { logger: pino({ level: config.logLevel }, destination), print: (text) => destination.write(text) };
  }
  const pretty = prettyStream();
  const logger = pino({ level: config.logLevel }, pretty({ colorize: process.stdout.isTTY === true, sync: true }));
  // pino-pretty writes synchronously: what was logged is out before the banner.
  return { logger, print: (text) => process.stdout.write(text) };
}

/** pino-pretty's stream factory, loaded on first use (createRequire: main.ts starts synchronously). */
function prettyStream(): typeof import('pino-pretty') {
  return createRequire(import.meta.url)('pino-pretty') as typeof import('pino-pretty');
}

/** Whether this module is the program node runs (not imported by another entry). */
function isProgram(): boolean {
  const program = process.argv[1];
  if (!program) return false;
  try {
    return pathToFileURL(realpathSync(program)).href === import.meta.url;
  } catch {
    return false;
  }
}

if (isProgram()) void startSignet();
