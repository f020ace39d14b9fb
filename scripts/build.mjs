#!/usr/bin/env node
// Bundles the service (main.ts, the composition root, and what it imports, npm packages left external) into
// dist/main.mjs with esbuild, the `signet` CLI (src/cli/main.ts) into dist/cli.mjs, and the parse pool's
// worker (src/parse-worker/worker.ts, which both start by file name) into dist/parse-worker.mjs, sharing chunks.
// `npm start` runs this first (about 0.1 s), so the service runs as plain JavaScript: no TypeScript
// loader in the process, which saves ~35 MB of memory and most of the start-up time (bench/README.md).
// bin/signet.mjs runs dist/cli.mjs while it is newer than src/ (a third of the CPU at start).
import { rm } from 'node:fs/promises';
import { build } from 'esbuild';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// Old chunks would pile up: start from an empty dist/.
await rm(path.join(root, 'dist'), { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: { main: 'main.ts', cli: 'src/cli/main.ts', 'parse-worker': 'src/parse-worker/worker.ts' },
  outdir: 'dist',
  outExtension: { '.js': '.mjs' },
  // Modules imported dynamically (the completion pipeline's fonts, PDF and crypto libraries) go to
  // their own chunks, so their packages load on first use, not at start.
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  packages: 'external',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: 'linked',
  logLevel: 'warning',
});
