/**
 * Vitest global setup: provides a PostgreSQL server for the whole run.
 * - DATABASE_URL set: that server (the URL's database is only used to CREATE/DROP test databases).
 * - otherwise: an embedded PostgreSQL in a temporary DATA_DIR, stopped and removed at the end.
 * Each test file then creates its own database with test/helpers/database.ts and drops it.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../src/db/embedded-postgres.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    adminDatabaseUrl: string;
  }
}

export default async function setup(project: TestProject) {
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
