/**
 * The sweep of signers' uploads no value uses (issue 23; docs/security.md "Signer uploads"). A
 * signer may upload a file and never use it (a signature drawn again, a photo replaced, a form
 * left); such files were kept for ever. The `sweep-signer-uploads` job removes a signer's upload
 * that no value names:
 * - once the signer's form is closed (completed, declined, archived, expired: formStateOf,
 *   ./form-state.ts) — nothing can name it any more;
 * - in a form still open, once it is SIGNER_UPLOADS_UNUSED_HOURS old (7 days by default): the
 *   signer has moved on. An upload in use is looked at again that long after.
 * Never one that a value of the submission's parties names (the completed documents and the audit
 * log are drawn from those values), nor one a completed document, template document or preview
 * row uses. An upload in use when its form closed is kept for good (`upload_sweep_at` NULL).
 *
 * Races: each signer's uploads are decided and deleted in one statement under the submission's
 * and submitter's row locks (lockSignerForm: the locks every change of values takes), so a value
 * saved at that moment is either seen, and its file kept, or saved after, and then refused as
 * "Unknown attachment" (src/db/queries/signer-uploads.ts SWEEP). The rows go in that transaction
 * with a `delete-unused-files` job in the outbox for their bytes (src/documents/unused-files.ts:
 * removed once no row uses them, as after a permanent delete).
 *
 * Schedule: an Agenda job per SIGNER_UPLOADS_SWEEP_SECONDS slot (its unique key is the slot), which
 * every instance enqueues when the slot begins (and at start): the store keeps one per slot
 * whichever instances enqueue it, Agenda runs it on one, a restart or a dead instance loses none
 * (the job is stored; the next instance to start or tick enqueues the current slot), and a run
 * that fails is retried. The sweep is idempotent: a second run, or two at once, finds nothing
 * left to do (each statement re-checks what it deletes).
 */
import type { Db } from '../db/client.ts';
import { dueSignerUploads, sweepSignerUploads, type DueSignerUpload } from '../db/queries/signer-uploads.ts';
import { logOutageOnce } from '../db/unavailable.ts';
import { unusedFilesJobs } from '../documents/unused-files.ts';
import type { SideEffects } from '../events/events.ts';
import type { JobQueue } from '../jobs/job-queue.ts';
import type { JobLogger } from '../jobs/job-store.ts';
import type { Clock } from '../util/clock.ts';
import { formStateOf, lockSignerForm } from './form-state.ts';

export const SWEEP_SIGNER_UPLOADS_JOB = 'sweep-signer-uploads';

/** Uploads read per statement of a sweep. */
const BATCH = 500;

export interface SignerUploadSweepDeps {
  db: Db;
  effects: SideEffects;
  /** The time forms and ages are judged by (src/util/clock.ts; tests move it). */
  clock: Clock;
  /** Milliseconds after which an unused upload of an open form goes (SIGNER_UPLOADS_UNUSED_HOURS). */
  unusedAfter: number;
}

/**
 * One sweep (module comment): every due upload, a signer at a time, each in its own short
 * transaction.
 * @returns how many upload rows were deleted (their bytes follow by the delete-unused-files job)
 * @throws the database's errors (the job retries; what was swept stays swept)
 */
export async function sweepUnusedSignerUploads(deps: SignerUploadSweepDeps): Promise<number> {
  const now = deps.clock.now();
  const cutoff = new Date(now.getTime() - deps.unusedAfter);
  let removed = 0;
  let afterId = 0;
  for (;;) {
    const due = await dueSignerUploads(deps.db, { now, cutoff, afterId, limit: BATCH });
    const bySigner = new Map<number, DueSignerUpload[]>();
    for (const upload of due) bySigner.set(upload.submitterId, [...(bySigner.get(upload.submitterId) ?? []), upload]);
    for (const uploads of bySigner.values()) removed += await sweepSigner(deps, uploads, now, cutoff);
    if (due.length < BATCH) return removed;
    afterId = due.at(-1)!.fileId;
  }
}

/** One signer's due uploads, under its form's locks; resolves to the rows deleted. */
function sweepSigner(
  deps: SignerUploadSweepDeps,
  uploads: DueSignerUpload[],
  now: Date,
  cutoff: Date,
): Promise<number> {
  const { submitterId, submissionId } = uploads[0]!;
  return deps.effects.transaction(async (tx, effects) => {
    const signer =
      submissionId === null
        ? null
        : await lockSignerForm(tx, { id: submitterId, submissionId }).catch((error: unknown) => {
            // Deleted since it was read (a permanent delete): its uploads are no one's.
            if ((error as { code?: string }).code === 'P2025') return null;
            throw error;
          });
    const closed = !signer || formStateOf({ submitter: signer, submission: signer.submission }, now) !== 'OPEN';
    const freed = await sweepSignerUploads(tx, {
      fileIds: uploads.map((u) => u.fileId),
      submitterId,
      closed,
      cutoff,
      now,
    });
    effects.jobs.push(...unusedFilesJobs(freed));
    return freed.length;
  });
}

/** Registers the job: one run at a time per instance; 3 runs in all, 10 and 20 s apart. */
export function defineSignerUploadSweep(queue: JobQueue, deps: SignerUploadSweepDeps & { logger: JobLogger }): void {
  queue.define(
    SWEEP_SIGNER_UPLOADS_JOB,
    async () => {
      const removed = await sweepUnusedSignerUploads(deps);
      if (removed > 0) deps.logger.info({ removed }, 'signer uploads: unused uploads removed');
    },
    { concurrency: 1, retry: { maxAttempts: 3, delayMs: (attempt) => 2 ** attempt * 10_000 } },
  );
}

/** Enqueues the sweep of each slot on one instance (module comment, "Schedule"). */
export interface SignerUploadSweepSchedule {
  /** Enqueues the current slot's sweep, and each next one when its slot begins (idempotent). */
  start(): void;
  stop(): void;
}

/**
 * The schedule of the sweep: the job of slot ⌊now / interval⌋, unique key `<interval>:<slot>`, at
 * start and at each slot's beginning. A failed enqueue (the database away) is logged once per
 * outage; the next slot's enqueue goes on.
 * @param deps.intervalMs milliseconds between sweeps (SIGNER_UPLOADS_SWEEP_SECONDS)
 */
export function createSignerUploadSweepSchedule(deps: {
  jobs: Pick<JobQueue, 'enqueue'>;
  intervalMs: number;
  logger: JobLogger;
}): SignerUploadSweepSchedule {
  const { intervalMs } = deps;
  let timer: NodeJS.Timeout | undefined;
  const logError = logOutageOnce((object, message) => deps.logger.error(object, message));
  const enqueueCurrent = () => {
    const slot = Math.floor(Date.now() / intervalMs);
    deps.jobs
      .enqueue(SWEEP_SIGNER_UPLOADS_JOB, { slot }, { uniqueKey: `${intervalMs}:${slot}` })
      .catch((error: unknown) =>
        logError(error, 'signer uploads: the sweep could not be scheduled; the next slot will'),
      );
  };
  const scheduleNext = () => {
    // Just past the next slot's beginning, so that ⌊now / interval⌋ is that slot.
    timer = setTimeout(
      () => {
        enqueueCurrent();
        scheduleNext();
      },
      intervalMs - (Date.now() % intervalMs) + 5,
    );
    timer.unref();
  };
  return {
    start() {
      if (timer) return;
      enqueueCurrent();
      scheduleNext();
    },
    stop() {
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
