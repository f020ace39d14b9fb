#!/usr/bin/env node
// The `signet` command (package.json "bin"). It runs dist/cli.mjs, the CLI bundled with the service
// by scripts/build.mjs (`npm start`, `npm run build`), when that file is newer than every file under
// src/; otherwise the TypeScript source through tsx. The bundle starts on a third of the CPU
// (`signet user list`: 0.4 s against 1.2 s); the check of src/'s modification times costs a few
// milliseconds and keeps an edited source from running as its stale bundle.
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bundle = path.join(root, 'dist', 'cli.mjs');

/** The newest modification time (ms) of the files under `dir`. */
function newestUnder(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** Whether dist/cli.mjs exists and was built after the last change under src/. */
function bundleIsCurrent() {
  try {
    return statSync(bundle).mtimeMs >= newestUnder(path.join(root, 'src'));
  } catch {
    return false;
  }
}

if (bundleIsCurrent()) {
  await import(pathToFileURL(bundle).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
