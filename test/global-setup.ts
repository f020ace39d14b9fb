/**
 * Vitest global setup: provides a PostgreSQL server for the whole run.
 * - DATABASE_URL set: that server (the URL's database is only used to CREATE/DROP test databases).
 * - otherwise: an embedded PostgreSQL in a temporary DATA_DIR, stopped and removed at the end.
 * Each test file then creates its own database with test/helpers/database.ts and drops it.
 *
 * It also builds dist/ once (scripts/build.mjs, as `npm start` does) for the tests that run the
 * service as a process: a build per test file would replace dist/'s chunks under a service that
 * another file is running (its next dynamic import then fails).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../src/db/embedded-postgres.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    adminDatabaseUrl: string;
    /** dist/ was built by this setup: test/helpers/processes.ts buildService() does not build again. */
    serviceBuilt: boolean;
  }
}

export default async function setup(project: TestProject) {
  execFileSync(process.execPath, [path.join(import.meta.dirname, '..', 'scripts', 'build.mjs')], { stdio: 'inherit' });
  project.provide('serviceBuilt', true);
  const configured = process.env.DATABASE_URL;
  if (configured) {
    const client = new pg.Client({ connectionString: configured, connectionTimeoutMillis: 5000 });
    await client.connect();
    await client.end();
    project.provide('adminDatabaseUrl', configured);
    return;
  }
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-test-pg-'));
  await fs.chmod(dataDir, 0o755);
  const embedded = await startEmbeddedPostgres({ dataDir });
  project.provide('adminDatabaseUrl', embedded.adminConnectionString);
  return async () => {
    await embedded.stop();
    await fs.rm(dataDir, { recursive: true, force: true });
  };
}
