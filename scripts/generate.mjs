#!/usr/bin/env node
// Runs `prisma generate` (Prisma Client + Pothos types into src/generated/).
// Prisma's CLI insists on locating a schema-engine binary even though `generate` never runs it,
// and it cannot be downloaded on offline machines: point it at any existing file (DESIGN.md).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const env = { ...process.env };
env.PRISMA_SCHEMA_ENGINE_BINARY ??= process.execPath;
env.PRISMA_HIDE_UPDATE_MESSAGE = '1';
// Generators such as prisma-pothos-types are looked up on PATH.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
env.PATH = `${path.join(root, 'node_modules', '.bin')}${path.delimiter}${env.PATH ?? ''}`;
env.CHECKPOINT_DISABLE = '1';
const cli = require.resolve('prisma/build/index.js');
const result = spawnSync(process.execPath, [cli, 'generate', ...process.argv.slice(2)], { stdio: 'inherit', env });
process.exit(result.status ?? 1);
