/**
 * Test-only entry: the service started exactly as `npm start` starts it (main.ts startSignet) on
 * DATABASE_URL, with completion hooks that stop the completion job at one step boundary so that a
 * test can kill the process there (test/completion-restart.test.ts). Run with
 * `node --import tsx test/helpers/paused-service.ts` (startService's `entry` option).
 *
 * PAUSE_COMPLETION_AT=`<step>:<phase>` (a CompletionBoundary: `documents:stored`,
 * `documents:committed`, `audit-log:stored`, `audit-log:committed`): the first run to reach that
 * boundary writes `completion paused at <step>:<phase> <json>` to stdout and never goes on (the
 * job stays locked, its lock renewed, until the process is killed). Unset: no pause. The variable
 * is read here only; the service itself has no such setting.
 */
import { startSignet } from '../../main.ts';
import type { CompletionHooks } from '../../src/signing/complete-submission.ts';

// Without it startSignet would start an embedded PostgreSQL, which these tests never want.
if (!process.env.DATABASE_URL) throw new Error('paused-service: DATABASE_URL is required');
const pauseAt = process.env.PAUSE_COMPLETION_AT;

const completionHooks: CompletionHooks = {
  async atBoundary(boundary) {
    if (`${boundary.step}:${boundary.phase}` !== pauseAt) return;
    process.stdout.write(`completion paused at ${pauseAt} ${JSON.stringify(boundary)}\n`);
    await new Promise(() => undefined);
  },
};

// startSignet prints the banner startService waits for, and handles SIGTERM as the service does.
await startSignet({ completionHooks });
process.stdout.write(`(completion hooks: pause at ${pauseAt ?? 'none'})\n`);
