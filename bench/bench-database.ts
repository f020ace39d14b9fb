/**
 * The database the throughput and memory benchmarks run against: a fresh `signet_bench_<random>`
 * on the server named by DATABASE_URL, or on an embedded PostgreSQL in a temporary directory when
 * DATABASE_URL is unset. Migrated, with one account whose API key the load uses.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createAccount } from '../src/accounts/create-account.ts';
import { createDb } from '../src/db/client.ts';
import { startEmbeddedPostgres } from '../src/db/embedded-postgres.ts';
import { applyMigrations } from '../src/db/migrate.ts';

export interface BenchDatabase {
  /** 'external' (DATABASE_URL) or 'embedded'. */
  kind: 'external' | 'embedded';
  /** postgresql:// URL of the bench database. */
  url: string;
  name: string;
  /** API key of the bench account's user. */
  apiKey: string;
  user: { id: number; email: string; firstName: string; lastName: string };
}

export const BENCH_USER = { name: 'Bench', email: 'bench@signet.local', firstName: 'Bench', lastName: 'User' } as const;

/**
 * Creates, migrates and seeds the bench database.
 * @param onCleanup receives each undo step as soon as there is something to undo (drop the
 *   database, stop the embedded server, remove its directory); the caller runs them in reverse
 */
export async function createBenchDatabase(
  onCleanup: (label: string, step: () => Promise<void>) => void,
): Promise<BenchDatabase> {
  let adminUrl = process.env.DATABASE_URL;
  const kind = adminUrl ? 'external' : 'embedded';
  if (!adminUrl) {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-bench-pg-'));
    // As root the embedded PostgreSQL runs as `postgres`, which must be able to enter the directory.
    await fs.chmod(dataDir, 0o755);
    onCleanup(`remove ${dataDir}`, () => fs.rm(dataDir, { recursive: true, force: true }));
    const embedded = await startEmbeddedPostgres({ dataDir });
    onCleanup('stop the embedded PostgreSQL', () => embedded.stop());
    adminUrl = embedded.adminConnectionString;
  }

  const name = `signet_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)}`);
  } finally {
    await admin.end();
  }
  onCleanup(`drop database ${name}`, async () => {
    const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`);
    } finally {
      await client.end();
    }
  });

  const target = new URL(adminUrl);
  target.pathname = `/${name}`;
  const url = target.toString();

  await applyMigrations({ connectionString: url });
  const db = createDb(url, { poolSize: 1 });
  try {
    const created = await createAccount(db, BENCH_USER);
    return {
      kind,
      url,
      name,
      apiKey: created.apiKey,
      user: {
        id: created.userId,
        email: BENCH_USER.email,
        firstName: BENCH_USER.firstName,
        lastName: BENCH_USER.lastName,
      },
    };
  } finally {
    await db.$disconnect();
  }
}

/** The URL with its password replaced by `***`, for printing. */
export function redactUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}
