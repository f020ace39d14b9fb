/**
 * Carrying out a bulk send (issue 16) in the background: the `bulk-send-batch` job, one per
 * BULK_SEND_BATCH_ROWS rows, each recording the next in its own transaction (the outbox), so a bulk
 * send goes on by itself across restarts and instances.
 *
 * A batch reads its pending rows and judges each one as POST /submissions judges a request (the
 * same functions: readSubmissionsRequest, then planSubmissions on the template read with
 * readTemplateForCreate): a row it refuses is rejected with that request's message, nothing else
 * written for it. Then, in one transaction that first locks the bulk send's row: the accepted rows'
 * submissions with their side effects (insertPlannedSubmissions: requests, expiry, completions and
 * submission.created in the outbox, as any create), every row's outcome, the counters, and the next
 * batch's job. A crash before the commit leaves nothing of the batch (the job runs again: Agenda
 * takes it back once its lock expires); after it, a run again finds the rows done and writes
 * nothing. So no row is lost, and none is made twice.
 *
 * Invitations are paced: each signature request a batch schedules is due 60 / rate_per_minute
 * seconds after the one before (the bulk send's `next_invitation_at`, kept with the counters; never
 * earlier than the batch), so 10,000 emails leave at the rate asked, through the ordinary
 * `send-signature-request` jobs (src/submissions/send-requests.ts) and their retries.
 */
import type { z } from 'zod';
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import {
  type BulkSendRowOutcome,
  lockBulkSend,
  type LockedBulkSend,
  recordBulkSendOutcomes,
} from '../db/queries/bulk-sends.ts';
import type { FileStorage } from '../documents/storage.ts';
import { AppError } from '../errors.ts';
import type { Effects, SideEffects } from '../events/events.ts';
import type { LiveEvents } from '../events/pubsub.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import type { JobQueue } from '../jobs/job-queue.ts';
import { type OutboxJob, recordJobs } from '../jobs/outbox.ts';
import type { BulkSendSettings } from './bulk-send-input.ts';
import type { RowSubmitter } from './bulk-send-rows.ts';
import { readSubmissionsRequest } from './create-submissions-request.ts';
import {
  type CreateSubmissionsOptions,
  insertPlannedSubmissions,
  type PlannedSubmissions,
  planSubmissions,
  readTemplateForCreate,
} from './create-submissions.ts';
import type { CreateSubmissionsRequest } from './submitter-input.ts';

export const BULK_SEND_BATCH_JOB = 'bulk-send-batch';

/**
 * Rows per batch: one transaction each, whose submissions are written by one statement. Measured
 * (bench/bulk-send.ts): a row costs ~1 ms of CPU to judge and plan; a batch's transaction holds the
 * bulk send's row lock well under a second.
 */
export const BULK_SEND_BATCH_ROWS = 200;

/** Batch `batch` of a bulk send: its rows (batch × BULK_SEND_BATCH_ROWS, (batch + 1) × BULK_SEND_BATCH_ROWS]. */
export interface BulkSendBatchJob {
  bulkSendId: number;
  batch: number;
}

/** The job of one batch, to record in the transaction that decides it (one per batch: its unique key). */
export function bulkSendBatchJob(bulkSendId: number, batch: number): OutboxJob {
  return {
    name: BULK_SEND_BATCH_JOB,
    data: { bulkSendId, batch } satisfies BulkSendBatchJob,
    uniqueKey: `${bulkSendId}:${batch}`,
  };
}

export interface BulkSendDeps {
  db: Db;
  storage: FileStorage;
  effects: Pick<SideEffects, 'committed'>;
  live: Pick<LiveEvents, 'publishBulkSendProgress'>;
  config: Pick<Config, 'downloadAllowPrivate' | 'downloadMaxBytes' | 'downloadTimeout' | 'images'>;
  logger: { warn(object: object, message: string): void };
}

/**
 * Batches that fail for a reason other than a row's (the database away, a file store error) are
 * retried: after 5 s, then twice as long each time, 8 runs in all (about 10 minutes).
 */
const BATCH_RETRY = { maxAttempts: 8, delayMs: (attempt: number) => 2 ** attempt * 5000 };

/** Registers the bulk send job on a queue (every instance that should run it). */
export function defineBulkSendJobs(queue: JobQueue, deps: BulkSendDeps): void {
  queue.define<BulkSendBatchJob>(BULK_SEND_BATCH_JOB, (job) => runBulkSendBatch(deps, job), {
    // Bulk sends of different accounts go on side by side; one batch at a time of each is enough.
    concurrency: 2,
    retry: BATCH_RETRY,
    onGiveUp: (job, failure) => recordBulkSendFailure(deps, job.bulkSendId, failure.error),
  });
}

/**
 * The create request of one row: the bulk send's settings (as stored: `expire_at` an ISO string)
 * and the row's submitters. readSubmissionsRequest reads it as POST /submissions' body.
 */
export function rowRequest(
  settings: Record<string, unknown>,
  submitters: RowSubmitter[],
): Omit<z.input<typeof CreateSubmissionsRequest>, 'template_id'> {
  const { expire_at: expireAt, ...rest } = settings as BulkSendSettings & { expire_at?: string };
  return {
    ...(rest as Omit<BulkSendSettings, 'expire_at'>),
    ...(expireAt ? { expire_at: new Date(expireAt) } : {}),
    submitters,
  };
}

/** A row judged: its create options and plan, or why it is refused. */
type Judged =
  | { row: number; options: CreateSubmissionsOptions; planned: PlannedSubmissions }
  | { row: number; error: string };

/**
 * One batch (see the module comment). Idempotent: rows already done are not read again, and a
 * batch whose rows another run wrote meanwhile writes nothing.
 * @throws what is not a row's fault (database, storage): the job is retried
 */
export async function runBulkSendBatch(deps: BulkSendDeps, job: BulkSendBatchJob): Promise<void> {
  const { db } = deps;
  const bulkSend = await db.bulkSend.findUnique({ where: { id: job.bulkSendId } });
  if (!bulkSend || bulkSend.status === 'completed' || bulkSend.status === 'failed') return;
  const first = job.batch * BULK_SEND_BATCH_ROWS + 1;
  const last = Math.min((job.batch + 1) * BULK_SEND_BATCH_ROWS, bulkSend.totalRows);
  const rows = await db.bulkSendRow.findMany({
    where: { bulkSendId: bulkSend.id, row: { gte: first, lte: last }, status: 'pending' },
    orderBy: { row: 'asc' },
    select: { row: true, submitters: true },
  });
  if (rows.length === 0) return;

  // Judged outside the transaction: planning may download attachment values or render typed signatures.
  let template: Awaited<ReturnType<typeof readTemplateForCreate>> | undefined;
  let templateRefusal: string | undefined;
  try {
    template = await readTemplateForCreate(db, { id: bulkSend.templateId, accountId: bulkSend.accountId });
  } catch (error) {
    // The template archived, emptied or moved since: every row gets the refusal a POST would get now.
    if (!(error instanceof AppError)) throw error;
    templateRefusal = error.message;
  }
  const settings = bulkSend.settings as Record<string, unknown>;
  // Side by side: the rows' ids are then drawn in one statement (src/db/turn-batch.ts).
  const judged = await Promise.all(
    rows.map(async ({ row, submitters }): Promise<Judged> => {
      try {
        if (templateRefusal !== undefined || !template) throw new AppError('VALIDATION', templateRefusal ?? '');
        const options: CreateSubmissionsOptions = {
          accountId: bulkSend.accountId,
          userId: bulkSend.createdByUserId ?? 0,
          templateId: bulkSend.templateId,
          ...readSubmissionsRequest(deps, rowRequest(settings, submitters as unknown as RowSubmitter[])),
          source: 'bulk',
        };
        return { row, options, planned: await planSubmissions(deps, options, template) };
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        return { row, error: error.message };
      }
    }),
  );

  const now = new Date();
  const effects = await db.$transaction(
    (tx) =>
      writeBatch(tx, deps, { bulkSendId: bulkSend.id, batch: job.batch, last, total: bulkSend.totalRows }, judged, now),
    { timeout: 60_000 },
  );
  if (!effects) return;
  await deps.effects.committed(effects);
  await deps.live.publishBulkSendProgress(bulkSend);
}

/**
 * The batch's writes, under the bulk send's row lock (see the module comment).
 * @returns the effects written (for SideEffects.committed), or undefined when another run had
 *   written the batch (or the bulk send is gone or over): nothing written
 */
async function writeBatch(
  tx: Prisma.TransactionClient,
  deps: Pick<BulkSendDeps, 'storage'>,
  batch: { bulkSendId: number; batch: number; last: number; total: number },
  judged: Judged[],
  now: Date,
): Promise<Effects | undefined> {
  const locked = await lockBulkSend(tx, batch.bulkSendId);
  if (!locked || locked.status === 'completed' || locked.status === 'failed') return undefined;
  const pending = await tx.bulkSendRow.count({
    where: { bulkSendId: batch.bulkSendId, row: { in: judged.map((j) => j.row) }, status: 'pending' },
  });
  if (pending !== judged.length) return undefined;

  const pace = invitationPace(locked, now);
  const effects: Effects = { jobs: [], events: [] };
  const accepted = judged.filter((entry): entry is Exclude<Judged, { error: string }> => !('error' in entry));
  const createdIds = new Map<number, number>();
  if (accepted.length > 0) {
    // One statement for the batch's submissions: the rows share the bulk send's settings, so the
    // first row's options (but its submitters, already planned) are every row's.
    const written = await insertPlannedSubmissions(
      tx,
      deps,
      { ...accepted[0]!.options, requestsDueAt: pace.next },
      { plans: accepted.flatMap((e) => e.planned.plans), ids: accepted.flatMap((e) => e.planned.ids) },
      now,
    );
    effects.jobs.push(...written.effects.jobs);
    effects.events.push(...written.effects.events);
    for (const [i, entry] of accepted.entries()) createdIds.set(entry.row, written.created[i]!.id);
  }
  const outcomes: BulkSendRowOutcome[] = judged.map((entry) =>
    'error' in entry
      ? { row: entry.row, status: 'rejected', error: entry.error }
      : { row: entry.row, status: 'created', submissionId: createdIds.get(entry.row) },
  );
  await recordBulkSendOutcomes(tx, batch.bulkSendId, outcomes);
  const done = batch.last >= batch.total;
  const created = outcomes.filter((o) => o.status === 'created').length;
  await tx.bulkSend.update({
    where: { id: batch.bulkSendId },
    data: {
      status: done ? 'completed' : 'processing',
      createdCount: { increment: created },
      rejectedCount: { increment: outcomes.length - created },
      invitationsScheduled: locked.invitationsScheduled + pace.scheduled(),
      nextInvitationAt: pace.scheduled() > 0 ? pace.nextAt() : undefined,
      ...(done ? { completedAt: now } : {}),
    },
  });
  if (!done) {
    const next = bulkSendBatchJob(batch.bulkSendId, batch.batch + 1);
    await recordJobs(tx, [next]);
    effects.jobs.push(next);
  }
  return effects;
}

/**
 * The due times of the invitations a batch schedules: the first at the bulk send's
 * next_invitation_at (or now, if that has passed or there is none), each next one 60,000 /
 * rate_per_minute ms later.
 */
export function invitationPace(
  bulkSend: Pick<LockedBulkSend, 'ratePerMinute' | 'nextInvitationAt'>,
  now: Date,
): { next: () => Date; scheduled: () => number; nextAt: () => Date } {
  const intervalMs = 60_000 / bulkSend.ratePerMinute;
  let at = Math.max(bulkSend.nextInvitationAt ? Date.parse(bulkSend.nextInvitationAt) : 0, now.getTime());
  let scheduled = 0;
  return {
    next: () => {
      const due = new Date(Math.round(at));
      at += intervalMs;
      scheduled += 1;
      return due;
    },
    scheduled: () => scheduled,
    nextAt: () => new Date(Math.round(at)),
  };
}

/** When the job gives up: the bulk send is failed with the reason, its remaining rows left pending. */
async function recordBulkSendFailure(deps: BulkSendDeps, bulkSendId: number, error: unknown): Promise<void> {
  const reason = error instanceof Error ? error.message : String(error);
  deps.logger.warn({ bulkSendId, err: error }, 'bulk send failed');
  const failed = await deps.db.bulkSend.updateManyAndReturn({
    where: { id: bulkSendId, status: { in: ['queued', 'processing'] } },
    data: { status: 'failed', error: reason.slice(0, 1000) },
    select: { id: true, accountId: true, templateId: true },
  });
  for (const bulkSend of failed) await deps.live.publishBulkSendProgress(bulkSend);
}
