/**
 * Entry point and composition root (`npm start`): the service (src/) with its HTTP APIs (the
 * DocuSeal REST API, rest-compat/, passed to buildApp); it lives outside src/ so that nothing in
 * src/ depends on the REST layer. Open the database (embedded unless DATABASE_URL is set), apply
 * migrations, create the development account on the very first start, start the job queue, listen.
 * SIGTERM/SIGINT at any time: let start-up reach a safe point, then finish in-flight requests and
 * close everything opened so far, last opened first (HTTP server, job queue, database client,
 * embedded PostgreSQL).
 */
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
import { docusealRestApi } from './rest-compat/index.ts';

type Cleanup = { name: string; run: () => Promise<void> };

async function start(config: ReturnType<typeof loadConfig>, logger: pino.Logger, cleanups: Cleanup[]): Promise<void> {
  const startedAt = Date.now();
  const database = await openDatabase(config, (line) => logger.debug({ component: 'postgres' }, line));
  cleanups.push({ name: 'PostgreSQL', run: () => database.close() });

  const { applied } = await applyMigrations({ connectionString: database.url, log: (line) => logger.info(line) });
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');

  const db = createDb(database.url);
  cleanups.push({ name: 'database client', run: () => db.$disconnect() });
  // Before listening, so that the key printed below works from the first request.
  const dev = config.createDevAccount ? await ensureDevelopmentAccount(db) : null;
  // A restart: the key was printed on the first start only; say how to replace a lost one.
  const existingDev = config.createDevAccount && !dev ? await findDevelopmentUser(db) : null;

  const jobs = createJobQueue({
    connectionString: database.url,
    mongodbUrl: config.jobsMongodbUrl,
    logger,
    lockLifetimeMs: config.jobsLockLifetime,
  });
  const app = await buildApp({ config, db, logger, jobs, apis: [docusealRestApi()] });
  // app.stop() also stops the job queue and disconnects the database client.
  cleanups.push({ name: 'HTTP server', run: () => app.stop() });
  const url = await app.start();
  logger.info({ url, embeddedDatabase: database.embedded, startupMs: Date.now() - startedAt }, 'Signet is listening');

  const publicUrl = config.appUrl;
  const lines = [`Signet is running at ${publicUrl}  (GraphQL: ${publicUrl}/graphql, REST: ${publicUrl}/api)`];
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
      `The development account (${DEVELOPMENT_ACCOUNT.email}, user ${existingDev.userId}) exists; its API key was shown on the first start only.`,
      'Lost it? Make a new key (from this folder, with the environment of the service: DATABASE_URL, DATA_DIR):',
      '',
      `  ${lostKeyCommand(existingDev.userId)}`,
      '',
      '(`npx signet user list` lists the users, `npx signet api-key list --account-id N` their keys.)',
      '',
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** The exact command that makes a new API key for `userId` (the CLI, as README "API keys" runs it). */
function lostKeyCommand(userId: number): string {
  return `npx signet api-key create --user-id ${userId}`;
}

function main(): void {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(error instanceof ConfigError ? 2 : 1);
  }
  const logger = pino({ level: config.logLevel });
  const cleanups: Cleanup[] = [];
  const closeAll = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      await cleanup.run().catch((error) => logger.error({ err: error }, `closing the ${cleanup.name} failed`));
    }
  };

  const startup = start(config, logger, cleanups);

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

  startup.catch(async (error) => {
    // The message says what to do; the stack helps only when debugging.
    const detail = error instanceof Error ? (config.logLevel === 'debug' ? error.stack : error.message) : String(error);
    process.stderr.write(`Signet failed to start: ${detail}\n`);
    await closeAll();
    process.exit(1);
  });
}

main();
