/**
 * The database seam (issue 14, "One database seam"; docs/architecture.md): hand-written SQL lives
 * under src/db/ (statements and the functions that run them in src/db/queries/, one file per
 * aggregate); everything else goes through Prisma's query API or those functions. This test scans
 * src/ and rest-compat/ for SQL outside src/db/: raw Prisma calls, pg `query` calls, the pool
 * under the Prisma client, and string literals that start an SQL statement. Comments are ignored.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');

/**
 * TEMPORARY — files whose SQL other pieces of issue 14 are moving (item 1, "One DocuSeal
 * representation", reworks the submission create statement, the webhook payloads and dispatch,
 * and the submission list's serializer). Each entry is removed when its file is emptied of SQL;
 * the test fails when an entry no longer holds any (so the list can only shrink). Do not add to it.
 */
const TEMPORARY_SQL_OUTSIDE_DB_UNTIL_ISSUE_14_ITEM_1 = new Set<string>([]);

/** What counts as hand-written SQL, each with the reason it is named. */
const SQL_PATTERNS: { name: string; pattern: RegExp }[] = [
  { name: 'Prisma raw SQL ($queryRaw, $executeRaw, …Unsafe)', pattern: /\.\$(?:query|execute)Raw(?:Unsafe)?\b/ },
  { name: 'a pg query call (pool.query, client.query)', pattern: /\.query\s*(?:<[^>()]*>)?\s*\(/ },
  { name: 'the pg pool under the Prisma client (sqlPool)', pattern: /\bsqlPool\s*\(/ },
  {
    name: 'a string that starts an SQL statement',
    // Upper case, as the project writes SQL (a message such as 'Select a file' is not SQL).
    pattern: /[`'"]\s*(?:(?:SELECT|INSERT\s+INTO|DELETE\s+FROM)\s|UPDATE\s+\w+\s+SET\s|WITH\s+\w+\s+AS\s*\()/,
  },
];

/** The source without its comments (block and line), so that prose naming SQL is not counted. */
function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:\\])\/\/.*$/gm, '$1');
}

/** The SQL found in a source text: `kind: line n` each (a statement may start on the line after its quote). */
function sqlIn(source: string): string[] {
  const code = withoutComments(source);
  const found: string[] = [];
  for (const { name, pattern } of SQL_PATTERNS) {
    for (const match of code.matchAll(new RegExp(pattern.source, `${pattern.flags}g`))) {
      found.push(`${name}: line ${code.slice(0, match.index).split('\n').length}`);
    }
  }
  return found;
}

/** The .ts files under `dir` (relative to the repository), generated code left out. */
function tsFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (relative: string) => {
    for (const entry of fs.readdirSync(path.join(ROOT, relative), { withFileTypes: true })) {
      const child = `${relative}/${entry.name}`;
      if (entry.isDirectory()) {
        if (child !== 'src/generated' && entry.name !== 'node_modules') walk(child);
      } else if (entry.name.endsWith('.ts')) out.push(child);
    }
  };
  walk(dir);
  return out;
}

describe('hand-written SQL lives under src/db/', () => {
  const files = [...tsFiles('src'), ...tsFiles('rest-compat')].filter((file) => !file.startsWith('src/db/'));

  it('the scan recognises each kind of SQL, and not SQL named in comments', () => {
    expect(sqlIn('await tx.$queryRaw`SELECT 1`;')).not.toEqual([]);
    expect(sqlIn('await tx.$executeRawUnsafe(text, json);')).not.toEqual([]);
    expect(sqlIn('const { rows } = await pool.query<{ id: number }>({ name, text });')).not.toEqual([]);
    expect(sqlIn('const pool = sqlPool(db);')).not.toEqual([]);
    expect(sqlIn("const text = 'DELETE FROM outbox WHERE id = $1';")).not.toEqual([]);
    expect(sqlIn('const text = `\n  UPDATE jobs SET locked_at = $2`;')).not.toEqual([]);
    expect(sqlIn('const text = `WITH moved AS (DELETE ...)`;')).not.toEqual([]);
    expect(sqlIn('/** answers `SELECT 1` within 2 s */\n// pool.query(...) here\nconst a = 1;')).toEqual([]);
    expect(sqlIn("tx: Pick<Prisma.TransactionClient, '$executeRawUnsafe'>")).toEqual([]);
    expect(sqlIn("builder.queryField('submission', (t) => t.field({}));")).toEqual([]);
    expect(sqlIn("throw new AppError('VALIDATION', 'Select a file to upload');")).toEqual([]);
  });

  it('no file outside src/db/ holds any (but the temporary allow-list)', () => {
    const offenders = Object.fromEntries(
      files
        .filter((file) => !TEMPORARY_SQL_OUTSIDE_DB_UNTIL_ISSUE_14_ITEM_1.has(file))
        .map((file) => [file, sqlIn(fs.readFileSync(path.join(ROOT, file), 'utf8'))] as const)
        .filter(([, found]) => found.length > 0),
    );
    expect(offenders).toEqual({});
  });

  it('every file on the temporary allow-list still holds SQL (remove it from the list once it holds none)', () => {
    const emptied = [...TEMPORARY_SQL_OUTSIDE_DB_UNTIL_ISSUE_14_ITEM_1].filter(
      (file) =>
        !fs.existsSync(path.join(ROOT, file)) || sqlIn(fs.readFileSync(path.join(ROOT, file), 'utf8')).length === 0,
    );
    expect(emptied).toEqual([]);
  });
});
