/**
 * Files the service reads from the project at run time (migrations). Found from the project root,
 * so the same code works run from src/ (tsx) and bundled into dist/ (scripts/build.mjs).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findProjectRoot(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'signet')
      return dir;
    if (path.dirname(dir) === dir) throw new Error(`Cannot find Signet's package.json above ${start}`);
  }
}

/** The folder holding Signet's package.json. */
export const PROJECT_ROOT = findProjectRoot(path.dirname(fileURLToPath(import.meta.url)));

/** prisma/migrations: `<timestamp>_<name>/migration.sql` folders. */
export const MIGRATIONS_DIR = path.join(PROJECT_ROOT, 'prisma', 'migrations');
