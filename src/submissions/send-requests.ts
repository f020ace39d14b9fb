/**
 * Sending signature requests, in order (reference/docuseal-behaviour.md §7.3–7.4):
 * - `send-signature-request` jobs, one per submitter, channel and sending, recorded by the
 *   transaction that decides the sending (requestJobs: the job outbox, src/jobs/outbox.ts); each
 *   renders the message, stores it in the email/SMS outbox (deduplicated) and delivers it once
 *   (src/notifications/deliver.ts), recording `send_email` / `send_sms` and `sent_at` with the
 *   send, and `fail_email` / `fail_sms` with each failed attempt (src/db/queries/notification-events.ts).
 *   Provider failures are retried by the job; they never fail the API call.
 * - When a party completes, the next group in order is sent its requests.
 * - `expire-submission` jobs at `expire_at`.
 */
import type { Config } from '../config.ts';
import type { Db, Prisma } from '../db/client.ts';
import { abandonMessage } from '../db/queries/notification-events.ts';
import { readSignatureRequest } from '../db/queries/signature-requests.ts';
import type { SideEffects } from '../events/events.ts';
import type { EmailClickTags } from './signing-links.ts';
import type { JobQueue } from '../jobs/job-queue.ts';
import type { OutboxJob } from '../jobs/outbox.ts';
import { deliverSms, queueAndDeliverEmail, queueSms } from '../notifications/deliver.ts';
import { DeliveryError, type NotificationLogger } from '../notifications/delivery-error.ts';
import type { Mailer } from '../notifications/mailer.ts';
import {
  buildSignatureRequestEmail,
  buildSignatureRequestSms,
  type MessageVariables,
} from '../notifications/message-templates.ts';
import type { SmsSender } from '../notifications/sms.ts';
import { SUBMISSION_FACTS } from './status.ts';

export const SEND_REQUEST_JOB = 'send-signature-request';
export const EXPIRE_SUBMISSION_JOB = 'expire-submission';

export interface SendRequestJob {
  submitterId: number;
  channel: 'email' | 'sms';
  /** Which sending of this submitter it is (0 = the first; re-sends count up). */
  sending: number;
}

export interface SendDeps {
  db: Db;
  mailer: Mailer;
  smsSender: SmsSender;
  config: Pick<Config, 'appUrl' | 'mailFrom' | 'sendRetryBase'>;
  logger: NotificationLogger;
  /** Raises submission.expired (the expiry job). */
  effects: Pick<SideEffects, 'emit'>;
  /** Tags the email's signing link (`?t=`), so the page can record "Email link clicked". */
  emailClicks: Pick<EmailClickTags, 'tag'>;
}

/**
 * Runs of a request job in all. Delivery gives a message up after as many attempts, so the last
 * failed attempt is recorded as given up (`fail_email` with `retrying: false`), not as retried.
 */
const SEND_MAX_ATTEMPTS = 10;

/** Retry after base (SEND_RETRY_BASE_MS, 30 s), then twice as long each time, capped at an hour; 10 runs in all. */
const sendRetry = (baseMs: number) => ({
  maxAttempts: SEND_MAX_ATTEMPTS,
  delayMs: (attempt: number) => Math.min(2 ** attempt * baseMs, 3_600_000),
});

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
 * @param runId the job's id: the delivery's claimant (a later run of this job takes back a
 *   message its dead earlier run left 'sending')
 * @throws DeliveryError (retryable) when the provider failed, or another worker holds the message
 */
async function sendRequest(deps: SendDeps, job: SendRequestJob, runId: string): Promise<void> {
  const { db } = deps;
  const submitter = await readSignatureRequest(db, job.submitterId);
  if (!submitter) return;
  // Nothing to ask of a party that is done, or of an archived or completed submission. A retry
  // of a request that failed before ends here: its message is given up, and the submission's
  // events say so (they said "will be retried").
  if (submitter.done || submitter.closed) {
    const reason = submitter.done
      ? 'the party had completed or declined the form'
      : 'the submission was completed or archived';
    await abandonMessage(db, job.channel, {
      dedupeKey: requestDedupeKey(job),
      eventType: job.channel === 'email' ? EMAIL_EVENTS.failureEvent : SMS_EVENTS.failureEvent,
      now: new Date().toISOString(),
      reason,
      maxAttempts: SEND_MAX_ATTEMPTS,
    });
    return;
  }

  const prefs = submitter.preferences ?? {};
  const submissionPrefs = submitter.submissionPreferences ?? {};
  const link = `${deps.config.appUrl}/s/${submitter.slug}`;
  // Email links carry the click tag (DocuSeal's `t`); SMS links stay short.
  const emailLink = `${link}?t=${deps.emailClicks.tag(submitter.slug)}`;
  const sender = submitter.hasSender
    ? { firstName: submitter.senderFirstName, lastName: submitter.senderLastName, email: submitter.senderEmail }
    : null;
  const variables: MessageVariables = {
    account: { name: submitter.accountName },
    template: { id: submitter.templateId, name: submitter.templateName },
    submission: {
      id: submitter.submissionId,
      name: submitter.submissionName,
      expireAt: submitter.expireAt,
      submitters: submitter.parties,
    },
    submitter: {
      id: submitter.id,
      slug: submitter.slug,
      email: submitter.email,
      name: submitter.name,
      phone: submitter.phone,
      link,
    },
    sender,
    timeZone: submitter.timezone,
  };

  if (job.channel === 'email') {
    if (!submitter.email) return;
    const ownTypes = new Set(submitter.ownTypes);
    const purpose =
      ownTypes.size === 0 ? 'view' : ownTypes.has('signature') || ownTypes.has('initials') ? 'sign' : 'submit';
    const rendered = buildSignatureRequestEmail({
      variables: { ...variables, submitter: { ...variables.submitter, link: emailLink } },
      message: prefs.message ?? submissionPrefs.message ?? null,
      purpose,
    });
    const { outcome } = await queueAndDeliverEmail(
      { db, mailer: deps.mailer, logger: deps.logger, claimant: runId, maxAttempts: SEND_MAX_ATTEMPTS },
      {
        accountId: submitter.accountId,
        submissionId: submitter.submissionId,
        submitterId: submitter.id,
        kind: 'signature_request',
        dedupeKey: requestDedupeKey(job),
        from: deps.config.mailFrom,
        to: [submitter.email],
        replyTo: prefs.reply_to ?? sender?.email ?? null,
        subject: rendered.subject,
        textBody: rendered.text,
        htmlBody: rendered.html,
        provider: deps.mailer.name,
      },
      // Recorded with each outcome: the send_email event and the first sent_at, or fail_email.
      EMAIL_EVENTS,
    );
    if (outcome === 'in-progress') throw inProgress('email');
    return;
  }
  if (!submitter.phone) return;
  const row = await queueSms(db, {
    accountId: submitter.accountId,
    submissionId: submitter.submissionId,
    submitterId: submitter.id,
    kind: 'signature_request',
    dedupeKey: requestDedupeKey(job),
    to: submitter.phone,
    body: buildSignatureRequestSms({ variables }),
    provider: deps.smsSender.name,
  });
  const result = await deliverSms(
    { db, smsSender: deps.smsSender, logger: deps.logger, claimant: runId, maxAttempts: SEND_MAX_ATTEMPTS },
    row.id,
    SMS_EVENTS,
  );
  if (result === 'in-progress') throw inProgress('sms');
}

/**
 * Another worker holds the message (claimed within its lease): the job runs again later rather
 * than end with the message unsent, should that worker have died.
 */
function inProgress(provider: string): DeliveryError {
  return new DeliveryError('another worker is sending this message; retrying later', { retryable: true, provider });
}
