/**
 * The completion pipeline's SQL (src/signing/complete-submission.ts): one run at a time per
 * submission.
 *
 * The pipeline's steps run outside any transaction (PDF work takes seconds), so the lock is a
 * session-level advisory lock held on one pooled connection for the whole run, not a
 * transaction's. PostgreSQL releases it when that connection closes, so a process killed with
 * SIGKILL leaves nothing locked (DocuSeal's LockEvent rows, lib/submissions/ensure_result_generated.rb,
 * stay "start" after a crash until a 90 s timeout; this lock needs no timeout).
 */
import type { Prisma } from '../../generated/prisma/client.ts';
import { type Db, sqlPool } from '../client.ts';
import { withPoolClient } from '../pool-client.ts';

/** The advisory lock space of completion runs (the first key of pg_advisory_lock(int, int)). */
const COMPLETION_LOCK_SPACE = 7301006;

/** $1: the submission. Waits until no other run of its completion holds the lock, then takes it. */
export const LOCK_COMPLETION = {
  name: 'signet_completion_lock',
  text: `SELECT pg_advisory_lock(${COMPLETION_LOCK_SPACE}, $1)`,
};

/** $1: the submission. Releases the lock LOCK_COMPLETION took on this connection. */
export const UNLOCK_COMPLETION = {
  name: 'signet_completion_unlock',
  text: `SELECT pg_advisory_unlock(${COMPLETION_LOCK_SPACE}, $1)`,
};

/**
 * Runs `run` while holding the completion lock of `submissionId` (waiting for another run to end
 * first). The lock's connection is taken from the client's pool and kept for the run; if taking
 * or releasing the lock fails, that connection is closed instead of returned, so that no pooled
 * connection keeps a lock. The run's own queries and transactions use other connections of the
 * pool, so a pool needs one connection more than the completion runs it holds at once (the job
 * runs 2 at a time; the service's pool has 10).
 * @returns what `run` returned; rejects with its error, or the database's
 */
export async function withCompletionLock<T>(db: Db, submissionId: number, run: () => Promise<T>): Promise<T> {
  return withPoolClient(sqlPool(db), async (client, discard) => {
    let unlocked = false;
    try {
      await client.query(LOCK_COMPLETION, [submissionId]);
      try {
        return await run();
      } finally {
        // A failed unlock is not the run's error: the connection is closed below, which unlocks.
        await client.query(UNLOCK_COMPLETION, [submissionId]).then(
          () => (unlocked = true),
          () => undefined,
        );
      }
    } finally {
      if (!unlocked) discard();
    }
  });
}

/**
 * In a completion step's transaction: whether the submission is still there, locking its row
 * against a permanent delete (FOR KEY SHARE, which the delete's FOR UPDATE waits for,
 * ./permanent-delete.ts) until the step commits. False once a delete has committed: the step
 * records nothing.
 */
export async function lockSubmissionForStep(
  tx: Pick<Prisma.TransactionClient, '$queryRaw'>,
  submissionId: number,
): Promise<boolean> {
  const rows = await tx.$queryRaw<{ id: number }[]>`
    SELECT id FROM submissions WHERE id = ${submissionId} FOR KEY SHARE`;
  return rows.length > 0;
}
