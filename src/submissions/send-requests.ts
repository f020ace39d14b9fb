/**
 * Sending signature requests, in order (reference/docuseal-behaviour.md §7.3–7.4):
 * - `send-signature-request` jobs, one per submitter, channel and sending, recorded by the
 *   transaction that decides the sending (requestJobs: the job outbox, src/jobs/outbox.ts); each
 *   renders the message, stores it in the email/SMS outbox (deduplicated) and delivers it once
 *   (src/notifications/deliver.ts), recording `send_email` / `send_sms` and `sent_at` with the
 *   send, and `fail_email` / `fail_sms` with each failed attempt (src/db/queries/notification-events.ts).
 *   Provider failures are retried by the job; they never fail the API call.
 * - When a party completes, the next group in order is sent its requests.
 * - Once a party has been sent its request, its reminders start when the submission (or its
 *   account's default) asks for them (src/submissions/reminders.ts startReminders).
 * - `expire-submission` jobs at `expire_at`.
 */
import type { Prisma } from '../db/client.ts';
import { readSignatureRequest } from '../db/queries/signature-requests.ts';
import type { JobQueue } from '../jobs/job-queue.ts';
import type { OutboxJob } from '../jobs/outbox.ts';
import { startReminders } from './reminders.ts';
import { sendRetry } from '../notifications/delivery-error.ts';
import { abandonRequestMessage, deliverRequestMessage, type SendDeps } from './request-messages.ts';
import { SUBMISSION_FACTS } from './status.ts';

export type { SendDeps };

export const SEND_REQUEST_JOB = 'send-signature-request';
export const EXPIRE_SUBMISSION_JOB = 'expire-submission';

export interface SendRequestJob {
  submitterId: number;
  channel: 'email' | 'sms';
  /** Which sending of this submitter it is (0 = the first; re-sends count up). */
  sending: number;
}

/** What a request's delivery records on the submission (src/db/queries/notification-events.ts). */
const EMAIL_EVENTS = { submissionEvent: 'send_email', failureEvent: 'fail_email' } as const;
const SMS_EVENTS = { submissionEvent: 'send_sms', failureEvent: 'fail_sms' } as const;

/** The outbox key of one request: per submitter and sending (email and SMS are in separate tables). */
const requestDedupeKey = (job: SendRequestJob) => `signature_request:${job.submitterId}:${job.sending}`;

/**
 * Requests sent at once per instance. A send is two short statements and a provider call, so it
 * mostly waits: with Agenda's default of 5 an instance drained ~440 requests/s with its CPU two
 * thirds idle; 10 drained ~600/s (bench:submissions, issue 4). 20 made each send cost more CPU.
 */
const SEND_CONCURRENCY = 10;

/** Registers the submission jobs on a queue (every instance that should run them). */
export function defineSubmissionJobs(queue: JobQueue, deps: SendDeps): void {
  queue.define<SendRequestJob>(SEND_REQUEST_JOB, (job, run) => sendRequest(deps, job, run.id), {
    retry: sendRetry(deps.config.sendRetryBase),
    concurrency: SEND_CONCURRENCY,
  });
  queue.define<{ submissionId: number; expireAt: string }>(EXPIRE_SUBMISSION_JOB, (job) => expireSubmission(deps, job));
}

/**
 * The expiry job at `expire_at`. The status is computed at read time from expire_at; this marks
 * the moment with `submission.expired`, once per submission (key `submission.expired:<id>`), and
 * only if nothing changed meanwhile. Reference §6 ("Webhook event triggers"): skipped if the
 * submission or its template is archived, anyone declined, it is completed, or expire_at moved.
 */
async function expireSubmission(
  deps: Pick<SendDeps, 'db' | 'effects' | 'logger'>,
  job: { submissionId: number; expireAt: string },
): Promise<void> {
  const submission = await deps.db.submission.findUnique({
    where: { id: job.submissionId },
    select: {
      accountId: true,
      expireAt: true,
      archivedAt: true,
      completedAt: true,
      template: { select: { archivedAt: true } },
      submitters: { where: { declinedAt: { not: null } }, select: { declinedAt: true }, take: 1 },
    },
  });
  if (!submission || submission.archivedAt || submission.template.archivedAt) return;
  // Completed or declined: it shows that status, never `expired` (src/submissions/status.ts). Not
  // judged by the clock: the job runs at expire_at, which must be the one it was scheduled for.
  if (SUBMISSION_FACTS.completed(submission) || SUBMISSION_FACTS.declined(submission)) return;
  if (submission.expireAt?.toISOString() !== job.expireAt) return;
  deps.logger.info({ submissionId: job.submissionId }, 'submission expired');
  await deps.effects.emit([
    {
      type: 'submission.expired',
      accountId: submission.accountId,
      recordId: job.submissionId,
      at: new Date(),
      key: `submission.expired:${job.submissionId}`,
    },
  ]);
}

/**
 * The request jobs of these submitters, on every channel they chose (the one rule of who is sent
 * what: email unless `send_email` is false, SMS when `send_sms` is true, each only with an
 * address), to record in the transaction that decides the sending.
 * @param sending 0 for the first request; re-sends pass a new number so they are not deduplicated away
 */
export function requestJobs(
  submitters: readonly { id: number; preferences: unknown; email: string | null; phone: string | null }[],
  sending = 0,
): OutboxJob[] {
  const jobs: OutboxJob[] = [];
  for (const s of submitters) {
    const prefs = (s.preferences ?? {}) as { send_email?: boolean; send_sms?: boolean };
    const job = (channel: SendRequestJob['channel']): OutboxJob => ({
      name: SEND_REQUEST_JOB,
      data: { submitterId: s.id, channel, sending } satisfies SendRequestJob,
      uniqueKey: `${s.id}:${channel}:${sending}`,
    });
    if (prefs.send_email !== false && s.email) jobs.push(job('email'));
    if (prefs.send_sms === true && s.phone) jobs.push(job('sms'));
  }
  return jobs;
}

/**
 * After a party completed, read in the completing transaction: the request jobs of the parties
 * of the next group in order that have not been contacted (§7.3). `random` submissions sent
 * everyone at creation.
 */
export async function nextPartyJobs(
  tx: Pick<Prisma.TransactionClient, 'submission'>,
  submissionId: number,
): Promise<OutboxJob[]> {
  const submission = await tx.submission.findUnique({
    where: { id: submissionId },
    select: {
      submittersOrder: true,
      archivedAt: true,
      submitters: {
        select: {
          id: true,
          orderIndex: true,
          completedAt: true,
          declinedAt: true,
          sentAt: true,
          preferences: true,
          email: true,
          phone: true,
        },
      },
    },
  });
  if (!submission || submission.archivedAt) return [];
  const pending = submission.submitters.filter((s) => !s.completedAt && !s.declinedAt);
  if (pending.length === 0) return [];
  const group = Math.min(...pending.map((s) => s.orderIndex));
  const next = pending.filter((s) => s.orderIndex === group && !s.sentAt);
  return requestJobs(next);
}

/** The expiry job of a submission (one per expiry time), to record with the change that sets it; none without one. */
export function expiryJobs(submissionId: number, expireAt: Date | null | undefined): OutboxJob[] {
  if (!expireAt) return [];
  const at = expireAt.toISOString();
  return [
    {
      name: EXPIRE_SUBMISSION_JOB,
      data: { submissionId, expireAt: at },
      at: expireAt,
      uniqueKey: `${submissionId}:${at}`,
    },
  ];
}

/**
 * One request to one submitter on one channel; idempotent (outbox dedupe key + delivery claim).
 * Once the party has been sent it (now or by an earlier run), its reminders start when the
 * submission or its account asks for them (src/submissions/reminders.ts).
 * @param runId the job's id: the delivery's claimant (a later run of this job takes back a
 *   message its dead earlier run left 'sending')
 * @throws DeliveryError (retryable) when the provider failed, or another worker holds the message
 */
async function sendRequest(deps: SendDeps, job: SendRequestJob, runId: string): Promise<void> {
  const { db } = deps;
  const submitter = await readSignatureRequest(db, job.submitterId);
  if (!submitter) return;
  const message = {
    channel: job.channel,
    dedupeKey: requestDedupeKey(job),
    kind: 'signature_request',
    events: job.channel === 'email' ? EMAIL_EVENTS : SMS_EVENTS,
    runId,
  };
  // Nothing to ask of a party that is done, or of an archived or completed submission. A retry
  // of a request that failed before ends here: its message is given up, and the submission's
  // events say so (they said "will be retried").
  if (submitter.done || submitter.closed) {
    const reason = submitter.done
      ? 'the party had completed or declined the form'
      : 'the submission was completed or archived';
    await abandonRequestMessage(db, message, reason, new Date());
    return;
  }
  const outcome = await deliverRequestMessage(deps, submitter, message);
  if (outcome === 'sent' || outcome === 'already-sent') await startReminders(deps, submitter);
}
