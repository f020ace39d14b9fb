#!/usr/bin/env node
// No line over 120 characters (issue 14, "Habits"; STYLE.md). Biome formats at 120 columns
// (biome.jsonc) but never breaks strings, template literals (SQL), comments or long names, so
// this check runs after it in `npm run lint` (and so in CI, .ci/run).
//
// Usage: node scripts/check-line-length.mjs [directory]   (default: this repository)
// Checks the files git lists in the directory (tracked, and untracked ones not ignored) whose
// names end in one of CHECKED_EXTENSIONS; prints `file:line:length` for each long line and exits
// with 1 when there is one. Length is in Unicode code points ("…" counts one), without the line end.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The longest line allowed, in code points: biome.jsonc's formatter lineWidth. */
export const MAX_LINE_LENGTH = 120;

/** Source files this check reads. Markdown, JSON and HTML are prose or data, not checked. */
export const CHECKED_EXTENSIONS = ['.ts', '.mts', '.cts', '.tsx', '.js', '.mjs', '.cjs', '.sql'];

/**
 * Never checked, for good. Globs relative to the repository: `*` matches within one path segment,
 * a trailing `/` matches everything below a directory.
 * - prisma/migrations/: an applied migration must not change, its SHA-256 is recorded in every
 *   database's `_prisma_migrations` (src/db/migrate.ts refuses a migration whose checksum moved).
 * - src/generated/, dist/: written by tools (prisma generate, scripts/build.mjs), gitignored.
 * schema.graphql is not listed because .graphql is not a checked extension: graphql's printSchema
 * writes it (scripts/print-schema.ts) with each argument list on one line and each description as
 * it is, and wrapping a description would change the text introspection returns.
 */
export const EXCLUDED = ['prisma/migrations/', 'src/generated/', 'dist/'];

/** `pattern` (a glob as in EXCLUDED) as a RegExp over a `/`-separated relative path. */
export function globToRegExp(pattern) {
  const body = pattern
    .replace(/\/$/, '')
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]*');
  return new RegExp(`^${body}${pattern.endsWith('/') ? '/' : '$'}`);
}

/** Whether the path (relative, `/`-separated) matches one of the globs. */
export function matchesAny(file, patterns) {
  return patterns.some((pattern) => globToRegExp(pattern).test(file));
}

/** The long lines of a text: [{ line (1-based), length (code points) }]. Ends: \n or \r\n. */
export function longLines(text, max = MAX_LINE_LENGTH) {
  const found = [];
  text.split(/\r?\n/).forEach((line, index) => {
    const length = [...line].length;
    if (length > max) found.push({ line: index + 1, length });
  });
  return found;
}

/**
 * Checks the repository (or any git work tree) at `root`.
 * Returns `problems`: `file:line:length` strings, the long lines outside every exclusion.
 * Throws when `root` is not in a git work tree (git's error).
 */
export function checkTree(root) {
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const files = [...new Set(listed.split('\0').filter(Boolean))].sort();
  const problems = [];
  for (const file of files) {
    if (!CHECKED_EXTENSIONS.includes(path.extname(file)) || matchesAny(file, EXCLUDED)) continue;
    const absolute = path.join(root, file);
    // Listed but deleted in the work tree (an uncommitted removal).
    if (!fs.existsSync(absolute)) continue;
    for (const { line, length } of longLines(fs.readFileSync(absolute, 'utf8'))) {
      problems.push(`${file}:${line}:${length}`);
    }
  }
  return { problems };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const root = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));
  const { problems } = checkTree(root);
  for (const problem of problems) console.log(problem);
  if (problems.length > 0) {
    console.log(`${problems.length} line(s) over ${MAX_LINE_LENGTH} characters (scripts/check-line-length.mjs).`);
  }
  process.exit(problems.length > 0 ? 1 : 0);
}
