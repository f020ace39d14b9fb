// The parse pool's worker when Signet runs from its TypeScript sources (vitest, `signet` through
// tsx): registers tsx's loader in this thread, then loads worker.ts. Bundled, the pool runs
// dist/parse-worker.mjs instead (src/parse-pool/pool.ts workerFile).
import { register } from 'tsx/esm/api';

register();
const { default: runParseTask } = await import('./worker.ts');

export default runParseTask;
