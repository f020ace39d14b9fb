/**
 * src/db/migrate.ts: Prisma-compatible bookkeeping, idempotence, concurrency, failure and tampering.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { applyMigrations, computeChecksum, MIGRATIONS_DIR, scriptMatchesChecksum } from '../src/db/migrate.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';

const INIT = '20261121000000_init';
/** Every migration folder, in the order they apply. */
const ALL = (await fs.readdir(MIGRATIONS_DIR, { withFileTypes: true }))
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function emptyDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase({ migrate: false });
  cleanups.push(() => db.drop());
  return db;
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** A temporary migrations folder: `{ "<folder>": "<migration.sql>" }`. */
async function migrationsDir(files: Record<string, string>): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-migrations-'));
  cleanups.push(() => fs.rm(dir, { recursive: true, force: true }));
  for (const [name, sql] of Object.entries(files)) {
    await fs.mkdir(path.join(dir, name));
    await fs.writeFile(path.join(dir, name, 'migration.sql'), sql);
  }
  await fs.writeFile(path.join(dir, 'migration_lock.toml'), 'provider = "postgresql"\n');
  return dir;
}

interface Row {
  id: string;
  checksum: string;
  migration_name: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  started_at: Date;
  applied_steps_count: number;
  logs: string | null;
}

describe('applyMigrations', () => {
  it('applies the migrations once, in order, and records them as Prisma Migrate does', async () => {
    const db = await emptyDatabase();
    const lines: string[] = [];

    const first = await applyMigrations({ connectionString: db.url, log: (line) => lines.push(line) });
    expect(ALL[0]).toBe(INIT);
    expect(first).toEqual({ applied: ALL, alreadyApplied: [] });
    expect(lines.filter((line) => line.startsWith('applying migration '))).toEqual(
      ALL.map((name) => `applying migration ${name}`),
    );

    const second = await applyMigrations({ connectionString: db.url });
    expect(second).toEqual({ applied: [], alreadyApplied: ALL });

    const rows = await query<Row>(db.url, 'SELECT * FROM _prisma_migrations ORDER BY migration_name');
    expect(rows.map((r) => r.migration_name)).toEqual(ALL);
    const [row] = rows;
    const bytes = await fs.readFile(path.join(MIGRATIONS_DIR, INIT, 'migration.sql'));
    expect(row.migration_name).toBe(INIT);
    expect(row.checksum).toMatch(/^[0-9a-f]{64}$/);
    expect(row.checksum).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(row.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(row.finished_at).toBeInstanceOf(Date);
    expect(row.finished_at!.getTime()).toBeGreaterThanOrEqual(row.started_at.getTime());
    expect(row.rolled_back_at).toBeNull();
    expect(row.logs).toBeNull();
    expect(row.applied_steps_count).toBe(1);

    // The schema really is there.
    const tables = await query<{ n: number }>(
      db.url,
      `SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public' AND tablename = 'accounts'`,
    );
    expect(tables[0].n).toBe(1);
  });

  it("creates _prisma_migrations with Prisma's columns", async () => {
    const db = await emptyDatabase();
    await applyMigrations({ connectionString: db.url });
    const columns = await query<{
      column_name: string;
      type: string;
      is_nullable: string;
      column_default: string | null;
    }>(
      db.url,
      `SELECT column_name, format_type(a.atttypid, a.atttypmod) AS type, c.is_nullable, c.column_default
         FROM information_schema.columns c
         JOIN pg_attribute a ON a.attrelid = '_prisma_migrations'::regclass AND a.attname = c.column_name
        WHERE c.table_name = '_prisma_migrations' ORDER BY c.ordinal_position`,
    );
    expect(columns).toEqual([
      { column_name: 'id', type: 'character varying(36)', is_nullable: 'NO', column_default: null },
      { column_name: 'checksum', type: 'character varying(64)', is_nullable: 'NO', column_default: null },
      { column_name: 'finished_at', type: 'timestamp with time zone', is_nullable: 'YES', column_default: null },
      { column_name: 'migration_name', type: 'character varying(255)', is_nullable: 'NO', column_default: null },
      { column_name: 'logs', type: 'text', is_nullable: 'YES', column_default: null },
      { column_name: 'rolled_back_at', type: 'timestamp with time zone', is_nullable: 'YES', column_default: null },
      { column_name: 'started_at', type: 'timestamp with time zone', is_nullable: 'NO', column_default: 'now()' },
      { column_name: 'applied_steps_count', type: 'integer', is_nullable: 'NO', column_default: '0' },
    ]);
    const pk = await query<{ columns: string[] }>(
      db.url,
      `SELECT array_agg(a.attname::text ORDER BY a.attnum) AS columns FROM pg_index i
         JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
        WHERE i.indrelid = '_prisma_migrations'::regclass AND i.indisprimary`,
    );
    expect(pk[0].columns).toEqual(['id']);
  });

  it('applies each migration exactly once when two runs start at the same time', async () => {
    const db = await emptyDatabase();
    const dir = await migrationsDir({
      '20260101000000_one': 'CREATE TABLE one (id INTEGER PRIMARY KEY);\nSELECT pg_sleep(0.3);\n',
      '20260102000000_two': 'CREATE TABLE two (id INTEGER PRIMARY KEY);\n',
    });
    const results = await Promise.all([
      applyMigrations({ connectionString: db.url, migrationsDir: dir }),
      applyMigrations({ connectionString: db.url, migrationsDir: dir }),
    ]);
    const applied = results.flatMap((result) => result.applied).sort();
    expect(applied).toEqual(['20260101000000_one', '20260102000000_two']);
    // The run that waited for the lock found everything done.
    expect(results.map((result) => result.applied.length).sort()).toEqual([0, 2]);

    const rows = await query<{ migration_name: string; n: number }>(
      db.url,
      'SELECT migration_name, count(*)::int AS n FROM _prisma_migrations GROUP BY 1 ORDER BY 1',
    );
    expect(rows).toEqual([
      { migration_name: '20260101000000_one', n: 1 },
      { migration_name: '20260102000000_two', n: 1 },
    ]);
  });

  it('rolls a failing migration back entirely, keeps the good one, and names the failure', async () => {
    const db = await emptyDatabase();
    const good = 'CREATE TABLE good (id INTEGER PRIMARY KEY);\n';
    const broken = [
      'CREATE TABLE half_done (id INTEGER PRIMARY KEY);',
      'CREATE INDEX half_done_idx ON half_done (id);',
      'ALTER TABLE good ADD COLUMN name TEXT;',
      'CREATE TABLE broken (id INTEGER REFERENCES no_such_table (id));',
      '',
    ].join('\n');
    const dir = await migrationsDir({ '20260101000000_good': good, '20260102000000_broken': broken });

    const failure = applyMigrations({ connectionString: db.url, migrationsDir: dir });
    await expect(failure).rejects.toThrow(
      /^migration 20260102000000_broken failed: relation "no_such_table" does not exist/,
    );

    const rows = await query<Row>(db.url, 'SELECT * FROM _prisma_migrations');
    expect(rows.map((row) => [row.migration_name, row.applied_steps_count, row.finished_at !== null])).toEqual([
      ['20260101000000_good', 1, true],
    ]);
    const tables = await query<{ tablename: string }>(
      db.url,
      `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`,
    );
    expect(tables.map((table) => table.tablename)).toEqual(['_prisma_migrations', 'good']);
    const goodColumns = await query<{ column_name: string }>(
      db.url,
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'good'`,
    );
    expect(goodColumns.map((column) => column.column_name)).toEqual(['id']);
    const indexes = await query<{ n: number }>(
      db.url,
      `SELECT count(*)::int AS n FROM pg_indexes WHERE indexname = 'half_done_idx'`,
    );
    expect(indexes[0].n).toBe(0);

    // A syntax error is reported with its line; once the file is fixed the run completes.
    await fs.writeFile(
      path.join(dir, '20260102000000_broken', 'migration.sql'),
      broken.replace('ALTER TABLE good', 'ALTER TABLEE good'),
    );
    await expect(applyMigrations({ connectionString: db.url, migrationsDir: dir })).rejects.toThrow(
      /^migration 20260102000000_broken failed: syntax error at or near "TABLEE" \(line 3 of migration\.sql\)$/,
    );
    await fs.writeFile(
      path.join(dir, '20260102000000_broken', 'migration.sql'),
      broken.replace('no_such_table', 'good'),
    );
    expect(await applyMigrations({ connectionString: db.url, migrationsDir: dir })).toEqual({
      applied: ['20260102000000_broken'],
      alreadyApplied: ['20260101000000_good'],
    });
  });

  it('detects a migration modified after it was applied', async () => {
    const db = await emptyDatabase();
    const dir = await migrationsDir({ '20260101000000_one': 'CREATE TABLE one (id INTEGER PRIMARY KEY);\n' });
    await applyMigrations({ connectionString: db.url, migrationsDir: dir });

    await fs.writeFile(
      path.join(dir, '20260101000000_one', 'migration.sql'),
      'CREATE TABLE one (id BIGINT PRIMARY KEY);\n',
    );
    await expect(applyMigrations({ connectionString: db.url, migrationsDir: dir })).rejects.toThrow(
      /^migration 20260101000000_one was modified after it was applied/,
    );

    // Only line endings changed (git autocrlf): Prisma accepts that, so do we.
    await fs.writeFile(
      path.join(dir, '20260101000000_one', 'migration.sql'),
      'CREATE TABLE one (id INTEGER PRIMARY KEY);\r\n',
    );
    expect(await applyMigrations({ connectionString: db.url, migrationsDir: dir })).toEqual({
      applied: [],
      alreadyApplied: ['20260101000000_one'],
    });
  });

  it('refuses to run past a migration Prisma recorded as failed', async () => {
    const db = await emptyDatabase();
    const dir = await migrationsDir({ '20260101000000_one': 'CREATE TABLE one (id INTEGER PRIMARY KEY);\n' });
    await applyMigrations({ connectionString: db.url, migrationsDir: dir });
    // What Prisma leaves behind when a migration fails half-way.
    await query(
      db.url,
      `INSERT INTO _prisma_migrations (id, checksum, migration_name, logs, applied_steps_count)
       VALUES (gen_random_uuid()::text, $1, '20260102000000_two', 'Database error ...', 0)`,
      [computeChecksum('SELECT 1;\n')],
    );
    await expect(applyMigrations({ connectionString: db.url, migrationsDir: dir })).rejects.toThrow(
      /^migration 20260102000000_two failed earlier .* recorded as unfinished/,
    );

    // Marked rolled back (prisma migrate resolve --rolled-back): no longer blocks.
    await query(db.url, `UPDATE _prisma_migrations SET rolled_back_at = now() WHERE finished_at IS NULL`);
    expect(await applyMigrations({ connectionString: db.url, migrationsDir: dir })).toEqual({
      applied: [],
      alreadyApplied: ['20260101000000_one'],
    });
  });
});

describe('scriptMatchesChecksum', () => {
  it("follows Prisma's rules (line endings, unpadded legacy checksums)", () => {
    // Prisma's own test vector (schema-connector checksum.rs).
    expect(computeChecksum('hello')).toBe('2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824');
    expect(scriptMatchesChecksum('a\nb\n', computeChecksum('a\r\nb\r\n'))).toBe(true);
    expect(scriptMatchesChecksum('a\r\nb\r\n', computeChecksum('a\nb\n'))).toBe(true);
    expect(scriptMatchesChecksum('abc\n', computeChecksum('abc'))).toBe(false);
    const digest = createHash('sha256').update('hello').digest();
    const unpadded = [...digest].map((byte) => byte.toString(16)).join('');
    expect(unpadded.length).toBeLessThan(64);
    expect(scriptMatchesChecksum('hello', unpadded)).toBe(true);
  });
});
