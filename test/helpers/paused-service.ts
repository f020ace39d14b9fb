/**
 * Test-only entry: the service (buildApp, the job queue, the database) started as src/main.ts
 * starts it on DATABASE_URL, with completion hooks that stop the completion job at one step
 * boundary so that a test can kill the process there (test/completion-restart.test.ts). Run with
 * `node --import tsx test/helpers/paused-service.ts` (startService's `entry` option).
 *
 * PAUSE_COMPLETION_AT=`<step>:<phase>` (a CompletionBoundary: `documents:stored`,
 * `documents:committed`, `audit-log:stored`, `audit-log:committed`): the first run to reach that
 * boundary writes `completion paused at <step>:<phase> <json>` to stdout and never goes on (the
 * job stays locked, its lock renewed, until the process is killed). Unset: no pause. The variable
 * is read here only; the service itself has no such setting.
 */
import pino from 'pino';
import { docusealRestApi } from '../../rest-compat/index.ts';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createDb } from '../../src/db/client.ts';
import { applyMigrations } from '../../src/db/migrate.ts';
import { createJobQueue } from '../../src/jobs/job-queue.ts';
import type { CompletionHooks } from '../../src/signing/complete-submission.ts';

const config = loadConfig();
if (!config.databaseUrl) throw new Error('paused-service: DATABASE_URL is required');
const pauseAt = process.env.PAUSE_COMPLETION_AT;
const logger = pino({ level: config.logLevel });

const completionHooks: CompletionHooks = {
  async atBoundary(boundary) {
    if (`${boundary.step}:${boundary.phase}` !== pauseAt) return;
    process.stdout.write(`completion paused at ${pauseAt} ${JSON.stringify(boundary)}\n`);
    await new Promise(() => undefined);
  },
};

await applyMigrations({ connectionString: config.databaseUrl });
const db = createDb(config.databaseUrl);
const jobs = createJobQueue({ connectionString: config.databaseUrl, logger, lockLifetimeMs: config.jobsLockLifetime });
const app = await buildApp({ config, db, logger, jobs, completionHooks, apis: [docusealRestApi()] });
await app.start();
// startService waits for this line, as for the service's banner.
process.stdout.write(`Signet is running at ${config.appUrl} (completion hooks: pause at ${pauseAt ?? 'none'})\n`);
process.on('SIGTERM', () => void app.stop().then(() => process.exit(0)));
