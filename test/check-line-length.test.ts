/**
 * scripts/check-line-length.mjs, the "no line over 120 characters" check of `npm run lint`
 * (issue 14, "Habits"): run on small git work trees made here, as `npm run lint` runs it.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';

const SCRIPT = path.resolve(import.meta.dirname, '..', 'scripts', 'check-line-length.mjs');
const made: string[] = [];

afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A git work tree holding `files` (relative path → text); untracked files count as listed. */
function tree(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'line-length-'));
  made.push(dir);
  spawnSync('git', ['init', '-q'], { cwd: dir });
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  }
  return dir;
}

function check(dir: string) {
  const run = spawnSync(process.execPath, [SCRIPT, dir], { encoding: 'utf8' });
  return { status: run.status, stdout: run.stdout };
}

it('fails on a line of 121 characters, naming file:line:length', () => {
  const dir = tree({ 'src/a.ts': `const a = 1;\n// ${'x'.repeat(118)}\n`, 'q.sql': `SELECT ${'1'.repeat(114)}\r\n` });
  const { status, stdout } = check(dir);
  expect(status).toBe(1);
  expect(stdout).toContain('src/a.ts:2:121\n');
  expect(stdout).toContain('q.sql:1:121\n');
});

it('passes lines of 120 code points ("…" counts one) and files it does not check', () => {
  const dir = tree({
    'src/a.ts': `// ${'…'.repeat(117)}\n`,
    'README.md': `${'x'.repeat(300)}\n`,
    'schema.graphql': `"""${'x'.repeat(300)}"""\n`,
    'prisma/migrations/1_init/migration.sql': `-- ${'x'.repeat(300)}\n`,
    'src/generated/client.ts': `// ${'x'.repeat(300)}\n`,
    '.gitignore': 'dist/\n',
    'dist/main.mjs': `// ${'x'.repeat(300)}\n`,
  });
  expect(check(dir)).toEqual({ status: 0, stdout: '' });
});
