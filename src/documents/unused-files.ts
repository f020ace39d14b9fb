/**
 * Removing the bytes no StoredFile row uses any more, after a permanent delete
 * (src/templates/delete-records.ts), once replaced documents as filled so far are deleted
 * (src/signing/submission-outputs.ts), or signers' uploads no value uses
 * (src/signing-form/sweep-signer-uploads.ts). The delete's transaction deletes the rows and records
 * this job in the outbox with the storage keys it freed (src/jobs/outbox.ts), so the bytes go only
 * once the rows are gone for good, and a crash between the commit and the removal loses nothing:
 * the outbox row (or the stored job, taken back from a dead instance) runs at the next start or
 * scan and removes them then. The job is idempotent (removing missing bytes does nothing).
 *
 * Commit 82aef1a's way with orphaned completion files (a name per step, first write wins, so a
 * repeated run finds the file) does not fit here: these bytes are no run's output but bytes that
 * were in use until the commit, so removal has to follow the commit, which the outbox gives.
 *
 * A key is removed only if no row uses it when the job runs, checked under the key's lock
 * (src/db/queries/stored-file-keys.ts): bytes are shared by every row with the same content, across
 * templates and accounts, and a writer may be storing the same bytes again at that moment.
 */
import type { Db } from '../db/client.ts';
import type { FreedKey } from '../db/queries/permanent-delete.ts';
import { lockStorageKey, storageKeyInUse } from '../db/queries/stored-file-keys.ts';
import type { JobQueue } from '../jobs/job-queue.ts';
import type { OutboxJob } from '../jobs/outbox.ts';
import type { FileStorage } from './storage.ts';

export const DELETE_UNUSED_FILES_JOB = 'delete-unused-files';

/** The job's data: storage keys whose rows were deleted, with the SHA-256 those rows carried. */
export interface UnusedFilesJobData {
  keys: FreedKey[];
}

/**
 * One key's check and removal: the key's lock may wait for a writer storing the same bytes, and a
 * storage delete (S3) may take a while; Prisma's defaults (2 s to get a connection, 5 s in all)
 * failed the job on a busy machine, leaving the bytes to its retry.
 */
const REMOVE_TRANSACTION = { maxWait: 15_000, timeout: 30_000 };

/** Keys per job: a template with many submissions frees many, and a job's data is one JSON value. */
const KEYS_PER_JOB = 500;

/**
 * The jobs that remove the bytes of `keys` once no row uses them, to record in the transaction
 * that deleted the rows; none for no keys.
 */
export function unusedFilesJobs(keys: readonly FreedKey[]): OutboxJob[] {
  const jobs: OutboxJob[] = [];
  for (let i = 0; i < keys.length; i += KEYS_PER_JOB)
    jobs.push({ name: DELETE_UNUSED_FILES_JOB, data: { keys: keys.slice(i, i + KEYS_PER_JOB) } });
  return jobs;
}

/**
 * Removes from storage the bytes of each key no StoredFile row uses, each in a short transaction
 * holding the key's lock (module comment).
 * @returns the keys removed (those still in use are kept)
 * @throws the database's or storage's errors (the job retries; keys already removed stay removed)
 */
export async function removeUnusedBytes(
  deps: { db: Db; storage: FileStorage },
  keys: readonly FreedKey[],
): Promise<string[]> {
  const removed: string[] = [];
  for (const { key, sha256 } of keys) {
    const gone = await deps.db.$transaction(async (tx) => {
      await lockStorageKey(tx, key);
      if (await storageKeyInUse(tx, key, sha256)) return false;
      await deps.storage.delete(key);
      return true;
    }, REMOVE_TRANSACTION);
    if (gone) removed.push(key);
  }
  return removed;
}

/** Registers the job on a queue: 5 runs in all, 5, 10, 20 and 40 s apart (storage or database trouble). */
export function defineUnusedFilesJob(queue: JobQueue, deps: { db: Db; storage: FileStorage }): void {
  queue.define<UnusedFilesJobData>(
    DELETE_UNUSED_FILES_JOB,
    async ({ keys }) => {
      await removeUnusedBytes(deps, keys);
    },
    { retry: { maxAttempts: 5, delayMs: (attempt) => 2 ** attempt * 5_000 } },
  );
}
