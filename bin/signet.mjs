#!/usr/bin/env node
// The `signet` command (package.json "bin"): runs the TypeScript CLI through tsx.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
