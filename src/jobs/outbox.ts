/**
 * The transactional outbox (docs/security.md, "Side effects: exactly once"): every side effect
 * of a change (a signature request's email or SMS, a webhook dispatch, a completion, an expiry) is
 * a background job written **in the change's own database transaction** into the `outbox` table,
 * so a crash can lose neither the change nor its effects, nor keep one without the other. Once
 * the transaction commits, the job queue moves the rows into its store (JobQueue.relayOutbox;
 * after a crash, its next scan does), where they run at least once; each handler is idempotent
 * (the email and SMS rows' dedupe keys, the webhook delivery rows), so a receiver sees each once.
 *
 * Jobs that a job enqueues (a webhook dispatch's deliveries, a delivery's next attempt) go
 * straight to the store with JobQueue.enqueue: the running job is itself the durable record (a
 * run that dies is run again, and its enqueues are idempotent by their unique keys).
 */
import type { Prisma } from '../generated/prisma/client.ts';
import { insertOutboxRows } from '../db/queries/outbox.ts';

/** A job recorded in a change's transaction (see the module comment). */
export interface OutboxJob {
  /** The job's name, as defined on the queue. */
  name: string;
  /** What the handler receives (JSON-serialisable). */
  data: unknown;
  /**
   * Idempotency key, unique per job name in the store: recording a name and key that are
   * already stored (or recorded twice) makes one job.
   */
  uniqueKey?: string;
  /** When it is due (default: now). */
  at?: Date;
  /**
   * Keep it only if an enabled webhook endpoint of this account subscribes to this event type
   * when the change is written (the dispatch of a domain event: src/events/events.ts).
   */
  ifWebhook?: { accountId: number; eventType: string };
}

/** An OutboxJob as the outbox statements take it (src/db/queries/outbox.ts). */
export interface OutboxRow {
  name: string;
  data: unknown;
  uniqueKey?: string;
  /** ISO 8601 */
  runAt: string;
  ifWebhook?: { accountId: number; eventType: string };
}

/**
 * The JSON array the outbox statements take ($1 of INSERT_OUTBOX, or a statement's own
 * `selectOutboxRows` CTE).
 * @throws TypeError for an invalid `at`
 */
export function outboxRows(jobs: readonly OutboxJob[], now = new Date()): OutboxRow[] {
  return jobs.map((job) => {
    const at = job.at ?? now;
    if (!(at instanceof Date) || Number.isNaN(at.getTime()))
      throw new TypeError(`job ${job.name}: "at" is not a valid date`);
    return {
      name: job.name,
      data: job.data ?? null,
      ...(job.uniqueKey !== undefined ? { uniqueKey: job.uniqueKey } : {}),
      runAt: at.toISOString(),
      ...(job.ifWebhook ? { ifWebhook: job.ifWebhook } : {}),
    };
  });
}

/**
 * Writes jobs into the outbox through `tx`, a Prisma transaction (or client: then the statement
 * is its own transaction), in one statement. Call the queue's relayOutbox() once it has committed.
 */
export async function recordJobs(
  tx: Pick<Prisma.TransactionClient, '$executeRawUnsafe'>,
  jobs: readonly OutboxJob[],
): Promise<void> {
  if (jobs.length === 0) return;
  await insertOutboxRows(tx, outboxRows(jobs));
}
