/**
 * Entry point (`npm start`): open the database (embedded unless DATABASE_URL is set), apply
 * migrations, create the development account on the very first start, listen.
 * SIGTERM/SIGINT: finish in-flight requests, close the database and the embedded PostgreSQL.
 */
import pino from 'pino';
import { ensureDevelopmentAccount } from './accounts/development-account.ts';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { createDb } from './db/client.ts';
import { openDatabase } from './db/database.ts';
import { applyMigrations } from './db/migrate.ts';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = pino({ level: config.logLevel });
  const startedAt = Date.now();

  const database = await openDatabase(config, (line) => logger.debug({ component: 'postgres' }, line));
  const stopDatabase = async () => database.close().catch((error) => logger.error({ err: error }, 'stopping PostgreSQL failed'));
  try {
    const { applied } = await applyMigrations({ connectionString: database.url, log: (line) => logger.info(line) });
    if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  } catch (error) {
    await stopDatabase();
    throw error;
  }

  const db = createDb(database.url);
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  let url: string;
  let dev: Awaited<ReturnType<typeof ensureDevelopmentAccount>> = null;
  try {
    // Before listening, so that the key printed below works from the first request.
    if (config.createDevAccount) dev = await ensureDevelopmentAccount(db);
    app = await buildApp({ config, db, logger });
    url = await app.start();
  } catch (error) {
    await (app ? app.stop() : db.$disconnect()).catch(() => undefined);
    await stopDatabase();
    throw error;
  }
  const running = app;
  const publicUrl = config.appUrl;
  logger.info({ url, embeddedDatabase: database.embedded, startupMs: Date.now() - startedAt }, 'Signet is listening');

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
  }
  process.stdout.write(`${lines.join('\n')}\n`);

  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    try {
      await running.stop();
    } catch (error) {
      logger.error({ err: error }, 'error while stopping the HTTP server');
    }
    await stopDatabase();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
  // The message says what to do; the stack helps only when debugging.
  const detail = error instanceof Error ? (process.env.LOG_LEVEL === 'debug' ? error.stack : error.message) : String(error);
  process.stderr.write(`Signet failed to start: ${detail}\n`);
  process.exit(1);
});
