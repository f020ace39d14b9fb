/**
 * Vitest global setup: provides a PostgreSQL server for the whole run.
 * - DATABASE_URL set: that server (the URL's database is only used to CREATE/DROP test databases).
 * - otherwise: an embedded PostgreSQL in a temporary DATA_DIR, stopped and removed at the end.
 * Each test file then creates its own database with test/helpers/database.ts and drops it.
 *
 * It also builds dist/ once (scripts/build.mjs, as `npm start` does) for the tests that run the
 * service as a process: a build per test file would replace dist/'s chunks under a service that
 * another file is running (its next dynamic import then fails).
 *
 * And it migrates one database, signet_test_template_<random>, that each migrated test database
 * is copied from (CREATE DATABASE … TEMPLATE): the same migrations, applied once per run instead
 * of once per database (1.4 s each on a busy 2-core machine, over a hundred databases a run).
 * The tests of the migrations themselves start from empty databases and apply them.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../src/db/embedded-postgres.ts';
import { applyMigrations } from '../src/db/migrate.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    adminDatabaseUrl: string;
    /** The migrated database that test/helpers/database.ts copies; no connection to it stays open. */
    templateDatabase: string;
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
    const dropTemplate = await migratedTemplate(project, configured);
    return dropTemplate;
  }
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-test-pg-'));
  await fs.chmod(dataDir, 0o755);
  const embedded = await startEmbeddedPostgres({ dataDir });
  project.provide('adminDatabaseUrl', embedded.adminConnectionString);
  const dropTemplate = await migratedTemplate(project, embedded.adminConnectionString);
  return async () => {
    await dropTemplate();
    await embedded.stop();
    await fs.rm(dataDir, { recursive: true, force: true });
  };
}

/**
 * Creates and migrates signet_test_template_<random> on the server of `adminUrl`, provides its
 * name as `templateDatabase`, and returns what drops it.
 */
async function migratedTemplate(project: TestProject, adminUrl: string): Promise<() => Promise<void>> {
  const name = `signet_test_template_${randomBytes(6).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  await applyMigrations({ connectionString: url.toString() });
  project.provide('templateDatabase', name);
  return () => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}
