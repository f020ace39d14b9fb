/**
 * Per-file test databases on the run's PostgreSQL server (see test/global-setup.ts).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { applyMigrations } from '../../src/db/migrate.ts';

export interface TestDatabase {
  /** postgresql:// URL of the new database. */
  url: string;
  name: string;
  /** Drops the database (terminating any connection still open). */
  drop(): Promise<void>;
}

/** The URL of the run's server with `database` swapped in. */
export function databaseUrl(database: string): string {
  const url = new URL(inject('adminDatabaseUrl'));
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * Creates a database named signet_test_<random>: migrated (a copy of the run's migrated template,
 * test/global-setup.ts), or empty.
 * @param options.migrate with prisma/migrations applied (default true); false: empty, for the tests
 *   that apply them
 */
export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const name = `signet_test_${randomBytes(6).toString('hex')}`;
  const template = options.migrate !== false ? inject('templateDatabase') : undefined;
  const admin = new pg.Client({ connectionString: inject('adminDatabaseUrl') });
  await admin.connect();
  try {
    const from = template ? ` TEMPLATE ${admin.escapeIdentifier(template)}` : '';
    await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)}${from}`);
  } finally {
    await admin.end();
  }
  const url = databaseUrl(name);
  // Without a template (a run whose setup made none): migrated here.
  if (options.migrate !== false && !template) await applyMigrations({ connectionString: url });
  return {
    url,
    name,
    async drop() {
      const client = new pg.Client({ connectionString: inject('adminDatabaseUrl') });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
