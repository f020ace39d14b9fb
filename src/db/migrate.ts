/**
 * Applies prisma/migrations with the `pg` driver, keeping Prisma Migrate's bookkeeping in
 * `_prisma_migrations` exactly as its schema engine does, so `prisma migrate deploy` / `status` on
 * a machine with Prisma's engine agree with what ran here (and the service needs no engine).
 *
 * Differences from Prisma, on purpose: each migration runs in one transaction together with its
 * `_prisma_migrations` row, so a failed migration leaves neither DDL nor an unfinished row behind
 * (Prisma leaves a row with finished_at NULL). A migration.sql must therefore not contain its own
 * BEGIN/COMMIT, nor statements PostgreSQL refuses inside a transaction (CREATE INDEX CONCURRENTLY).
 */
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { MIGRATIONS_DIR } from '../paths.ts';
import pg from 'pg';

/** `<repo>/prisma/migrations`. */
export { MIGRATIONS_DIR };

/**
 * Session advisory-lock key. Prisma Migrate's own key (schema engine, PostgresFlavour::acquire_lock),
 * so this runner and `prisma migrate deploy` also exclude each other.
 */
export const MIGRATION_LOCK_KEY = 72707369;

/** Prisma's DDL for the table (schema engine, PostgresFlavour::create_migrations_table). */
const CREATE_MIGRATIONS_TABLE = `CREATE TABLE _prisma_migrations (
    id                      VARCHAR(36) PRIMARY KEY NOT NULL,
    checksum                VARCHAR(64) NOT NULL,
    finished_at             TIMESTAMPTZ,
    migration_name          VARCHAR(255) NOT NULL,
    logs                    TEXT,
    rolled_back_at          TIMESTAMPTZ,
    started_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    applied_steps_count     INTEGER NOT NULL DEFAULT 0
);`;

export interface ApplyMigrationsOptions {
  /** postgresql:// URL. A `?schema=` parameter is honoured as Prisma does (tables go into that schema). */
  connectionString: string;
  /** Folder of `<timestamp>_<name>/migration.sql` folders; default {@link MIGRATIONS_DIR}. */
  migrationsDir?: string;
  /** Receives one line per step (waiting for the lock, applying, applied). */
  log?: (line: string) => void;
}

export interface ApplyMigrationsResult {
  /** Folder names applied by this call, in order. */
  applied: string[];
  /** Folder names found already applied (checksum verified), in order. */
  alreadyApplied: string[];
}

interface Migration {
  name: string;
  script: string;
  checksum: string;
}

interface MigrationRow {
  id: string;
  checksum: string;
  migration_name: string;
  started_at: Date;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

/**
 * Applies every migration folder not yet recorded in `_prisma_migrations`, in folder-name order.
 *
 * Holds `pg_advisory_lock(MIGRATION_LOCK_KEY)` on its own connection for the whole run, so
 * processes starting at once apply each migration exactly once (the later ones wait, then find
 * everything applied).
 *
 * Rows written: id = random UUID, checksum = lower-case hex SHA-256 of the migration.sql bytes,
 * started_at = transaction start, finished_at = end, applied_steps_count = 1. An applied checksum
 * is compared as Prisma does (also accepting the file with CRLF/LF line endings swapped).
 *
 * @throws Error when a folder has no migration.sql; when a migration fails ("migration <name>
 *   failed: <PostgreSQL message> (line N of migration.sql)", rolled back, not recorded); when an
 *   applied migration's file no longer matches its checksum ("migration <name> was modified after
 *   it was applied"); when `_prisma_migrations` holds an unfinished, not rolled-back row (a
 *   migration that failed under Prisma, which must be resolved by hand first).
 */
export async function applyMigrations(options: ApplyMigrationsOptions): Promise<ApplyMigrationsResult> {
  const log = options.log ?? (() => {});
  const migrations = await readMigrations(options.migrationsDir ?? MIGRATIONS_DIR);

  const client = new pg.Client({ connectionString: options.connectionString });
  // A dropped connection surfaces as a failed query; without a listener it would crash the process.
  client.on('error', () => {});
  await client.connect();
  try {
    const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [
      MIGRATION_LOCK_KEY,
    ]);
    if (!rows[0].locked) {
      log('waiting for the migration lock (another process is migrating)');
      await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    }
    try {
      await useSchemaFromUrl(client, options.connectionString);
      return await applyPending(client, migrations, log);
    } finally {
      // If the connection is gone the session, and with it the lock, is gone too.
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
    }
  } finally {
    await client.end().catch(() => {});
  }
}

async function applyPending(
  client: pg.Client,
  migrations: Migration[],
  log: (line: string) => void,
): Promise<ApplyMigrationsResult> {
  const { rows: exists } = await client.query<{ table: string | null }>(
    `SELECT to_regclass('_prisma_migrations')::text AS "table"`,
  );
  if (exists[0].table === null) await client.query(CREATE_MIGRATIONS_TABLE);

  const { rows } = await client.query<MigrationRow>(
    `SELECT id, checksum, migration_name, started_at, finished_at, rolled_back_at
       FROM _prisma_migrations ORDER BY started_at`,
  );
  const failed = rows.find((row) => row.finished_at === null && row.rolled_back_at === null);
  if (failed) {
    throw new Error(
      `migration ${failed.migration_name} failed earlier (started ${failed.started_at.toISOString()}) and is ` +
        `recorded as unfinished in _prisma_migrations (id ${failed.id}). Repair the database by hand, then mark ` +
        `the row rolled back (\`prisma migrate resolve --rolled-back ${failed.migration_name}\`, or set its ` +
        `rolled_back_at) to re-apply it, or \`--applied\` if it is in fact complete.`,
    );
  }

  const local = new Set(migrations.map((migration) => migration.name));
  for (const row of rows) {
    if (row.finished_at !== null && row.rolled_back_at === null && !local.has(row.migration_name)) {
      log(`warning: migration ${row.migration_name} is applied in the database but missing locally`);
    }
  }

  const result: ApplyMigrationsResult = { applied: [], alreadyApplied: [] };
  for (const migration of migrations) {
    // Rows marked rolled back (prisma migrate resolve --rolled-back) do not count: apply again.
    const done = rows.find(
      (row) => row.migration_name === migration.name && row.finished_at !== null && row.rolled_back_at === null,
    );
    if (done) {
      if (!scriptMatchesChecksum(migration.script, done.checksum)) {
        throw new Error(
          `migration ${migration.name} was modified after it was applied ` +
            `(checksum ${done.checksum} in _prisma_migrations, ${migration.checksum} now)`,
        );
      }
      result.alreadyApplied.push(migration.name);
      continue;
    }
    log(`applying migration ${migration.name}`);
    const startedAt = Date.now();
    await applyOne(client, migration);
    log(`applied migration ${migration.name} (${Date.now() - startedAt} ms)`);
    result.applied.push(migration.name);
  }
  if (result.applied.length === 0) log(`database is up to date (${result.alreadyApplied.length} migrations)`);
  return result;
}

/** One transaction: the row, the script, the row marked finished. */
async function applyOne(client: pg.Client, migration: Migration): Promise<void> {
  const id = randomUUID();
  await client.query('BEGIN');
  try {
    await client.query(
      `INSERT INTO _prisma_migrations (id, checksum, migration_name, started_at, applied_steps_count)
       VALUES ($1, $2, $3, now(), 0)`,
      [id, migration.checksum, migration.name],
    );
    try {
      // No parameters: the simple query protocol runs the whole multi-statement script.
      await client.query(migration.script);
    } catch (error) {
      throw new Error(`migration ${migration.name} failed: ${describeError(error, migration.script)}`, {
        cause: error,
      });
    }
    await client.query(
      `UPDATE _prisma_migrations SET finished_at = clock_timestamp(), applied_steps_count = 1 WHERE id = $1`,
      [id],
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

/** Migration folders in name order (Prisma sorts them the same way). */
async function readMigrations(dir: string): Promise<Migration[]> {
  const entries = await fs.readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  const migrations: Migration[] = [];
  for (const name of names) {
    const file = path.join(dir, name, 'migration.sql');
    let bytes: Buffer;
    try {
      bytes = await fs.readFile(file);
    } catch (error) {
      throw new Error(`migration ${name} has no readable migration.sql (${file})`, { cause: error });
    }
    migrations.push({ name, script: bytes.toString('utf8'), checksum: computeChecksum(bytes) });
  }
  return migrations;
}

/** Prisma's migration checksum: lower-case hex SHA-256 of the script, no normalisation. */
export function computeChecksum(script: string | Buffer): string {
  return createHash('sha256').update(script).digest('hex');
}

/**
 * Whether `script` matches a recorded checksum, as Prisma's schema engine decides it
 * (schema-connector checksum.rs, script_matches_checksum): the script as is, with CRLF turned into
 * LF, or with LF turned into CRLF (git may have changed line endings since), and for checksums
 * that are not 64 characters long the old rendering without zero-padding (prisma-engines#1887).
 */
export function scriptMatchesChecksum(script: string, checksum: string): boolean {
  const variants = [script, script.replaceAll('\r\n', '\n'), script.replaceAll('\n', '\r\n')];
  const unpadded = checksum.length !== 0 && checksum.length !== 64;
  return variants.some((variant) => {
    const digest = createHash('sha256').update(variant).digest();
    const rendered = unpadded ? [...digest].map((byte) => byte.toString(16)).join('') : digest.toString('hex');
    return rendered === checksum;
  });
}

/** PostgreSQL's message, with the line of migration.sql it points at when it gives a position. */
function describeError(error: unknown, script: string): string {
  if (!(error instanceof Error)) return String(error);
  const position = Number((error as pg.DatabaseError).position);
  if (!Number.isInteger(position) || position < 1) return error.message;
  const line = script.slice(0, position - 1).split('\n').length;
  return `${error.message} (line ${line} of migration.sql)`;
}

/** Prisma reads the PostgreSQL schema from `?schema=` (default public); `pg` ignores it, so apply it here. */
async function useSchemaFromUrl(client: pg.Client, connectionString: string): Promise<void> {
  let schema: string | null = null;
  try {
    schema = new URL(connectionString).searchParams.get('schema');
  } catch {
    return; // not a URL (key=value form): nothing to honour
  }
  if (!schema) return;
  const quoted = client.escapeIdentifier(schema);
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
  await client.query(`SET search_path TO ${quoted}`);
}
