/**
 * Sending signature requests, in order (reference/docuseal-behaviour.md §7.3–7.4):
 * - `send-signature-request` jobs, one per submitter, channel and sending, enqueued after the
 *   creating transaction commits; each renders the message, stores it in the outbox (deduplicated)
 *   and delivers it once (src/notifications/deliver.ts), then records `send_email` / `send_sms`
 *   and `sent_at`. Provider failures are retried by the job; they never fail the API call.
 * - When a party completes, the next group in order is sent its requests.
 * - `expire-submission` jobs at `expire_at`.
 */
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import type { EventSink } from '../events/events.ts';
import type { JobQueue } from '../jobs/job-queue.ts';
import { deliverEmail, deliverSms, queueEmail, queueSms } from '../notifications/deliver.ts';
import type { NotificationLogger } from '../notifications/delivery-error.ts';
import type { Mailer } from '../notifications/mailer.ts';
import { buildSignatureRequestEmail, buildSignatureRequestSms, type MessageVariables } from '../notifications/message-templates.ts';
import type { SmsSender } from '../notifications/sms.ts';
import { parseFields } from '../templates/fields.ts';

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
  events: EventSink;
}

/** Retry after base (SEND_RETRY_BASE_MS, 30 s), then twice as long each time, capped at an hour; 10 runs in all. */
const sendRetry = (baseMs: number) => ({ maxAttempts: 10, delayMs: (attempt: number) => Math.min(2 ** attempt * baseMs, 3_600_000) });

/** Registers the submission jobs on a queue (every instance that should run them). */
export function defineSubmissionJobs(queue: JobQueue, deps: SendDeps): void {
  queue.define<SendRequestJob>(SEND_REQUEST_JOB, (job) => sendRequest(deps, job), { retry: sendRetry(deps.config.sendRetryBase) });
  queue.define<{ submissionId: number; expireAt: string }>(EXPIRE_SUBMISSION_JOB, (job) => expireSubmission(deps, job));
}

/**
 * The expiry job at `expire_at`. The status is computed at read time from expire_at; this marks
 * the moment with `submission.expired`, once per submission (key `submission.expired:<id>`), and
 * only if nothing changed meanwhile. Reference §6 ("Webhook event triggers"): skipped if the
 * submission or its template is archived, anyone declined, it is completed, or expire_at moved.
 */
async function expireSubmission(deps: Pick<SendDeps, 'db' | 'events' | 'logger'>, job: { submissionId: number; expireAt: string }): Promise<void> {
  const submission = await deps.db.submission.findUnique({
    where: { id: job.submissionId },
    select: {
      accountId: true,
      expireAt: true,
      archivedAt: true,
      completedAt: true,
      template: { select: { archivedAt: true } },
      submitters: { where: { declinedAt: { not: null } }, select: { id: true }, take: 1 },
    },
  });
  if (!submission || submission.archivedAt || submission.template.archivedAt || submission.completedAt) return;
  if (submission.submitters.length > 0 || submission.expireAt?.toISOString() !== job.expireAt) return;
  deps.logger.info({ submissionId: job.submissionId }, 'submission expired');
  await deps.events.emit([
    { type: 'submission.expired', accountId: submission.accountId, recordId: job.submissionId, at: new Date(), key: `submission.expired:${job.submissionId}` },
  ]);
}

/**
 * Enqueues the requests of these submitters on every channel they chose (after commit).
 * @param sending 0 for the first request; re-sends pass a new number so they are not deduplicated away
 */
export async function enqueueRequests(queue: JobQueue, submitters: { id: number; preferences: unknown; email: string | null; phone: string | null }[], sending = 0): Promise<void> {
  for (const s of submitters) {
    const prefs = (s.preferences ?? {}) as { send_email?: boolean; send_sms?: boolean };
    if (prefs.send_email !== false && s.email) {
      await queue.enqueue<SendRequestJob>(SEND_REQUEST_JOB, { submitterId: s.id, channel: 'email', sending }, { uniqueKey: `${s.id}:email:${sending}` });
    }
    if (prefs.send_sms === true && s.phone) {
      await queue.enqueue<SendRequestJob>(SEND_REQUEST_JOB, { submitterId: s.id, channel: 'sms', sending }, { uniqueKey: `${s.id}:sms:${sending}` });
    }
  }
}

/**
 * After a party completed: the parties of the next group in order that have not been contacted
 * are sent their requests (§7.3). `random` submissions sent everyone at creation.
 */
export async function sendNextParties(db: Db, queue: JobQueue, submissionId: number): Promise<void> {
  const submission = await db.submission.findUnique({
    where: { id: submissionId },
    select: { submittersOrder: true, archivedAt: true, submitters: { select: { id: true, orderIndex: true, completedAt: true, declinedAt: true, sentAt: true, preferences: true, email: true, phone: true } } },
  });
  if (!submission || submission.archivedAt) return;
  const pending = submission.submitters.filter((s) => !s.completedAt && !s.declinedAt);
  if (pending.length === 0) return;
  const group = Math.min(...pending.map((s) => s.orderIndex));
  const next = pending.filter((s) => s.orderIndex === group && !s.sentAt);
  await enqueueRequests(queue, next);
}

/** Schedules the expiry job of a submission (idempotent per expiry time). */
export async function scheduleExpiry(queue: JobQueue, submissionId: number, expireAt: Date | null): Promise<void> {
  if (!expireAt) return;
  const at = expireAt.toISOString();
  await queue.enqueue(EXPIRE_SUBMISSION_JOB, { submissionId, expireAt: at }, { at: expireAt, uniqueKey: `${submissionId}:${at}` });
}

/** One request to one submitter on one channel; idempotent (outbox dedupe key + delivery claim). */
async function sendRequest(deps: SendDeps, job: SendRequestJob): Promise<void> {
  const { db } = deps;
  const submitter = await db.submitter.findUnique({
    where: { id: job.submitterId },
    include: {
      submission: {
        include: {
          template: { select: { id: true, name: true } },
          account: { select: { name: true, timezone: true } },
          createdByUser: { select: { firstName: true, lastName: true, email: true } },
          submitters: { select: { id: true, slug: true, email: true, name: true, phone: true }, orderBy: { id: 'asc' } },
        },
      },
    },
  });
  if (!submitter) return;
  const { submission } = submitter;
  // Nothing to ask of a party that is done, or of an archived submission.
  if (submitter.completedAt || submitter.declinedAt || submission.archivedAt || submission.completedAt) return;

  const prefs = (submitter.preferences ?? {}) as { message?: { subject?: string; body?: string }; reply_to?: string };
  const submissionPrefs = (submission.preferences ?? {}) as { message?: { subject?: string; body?: string } };
  const link = `${deps.config.appUrl}/s/${submitter.slug}`;
  const fields = parseFields(submission.templateFields);
  const ownTypes = new Set(fields.filter((f) => f.submitter_uuid === submitter.roleUuid).map((f) => f.type));
  const variables: MessageVariables = {
    account: { name: submission.account.name },
    template: { id: submission.template.id, name: submission.template.name },
    submission: {
      id: submission.id,
      name: submission.name,
      expireAt: submission.expireAt,
      submitters: submission.submitters.map((s) => ({ id: s.id, slug: s.slug, email: s.email, name: s.name, phone: s.phone })),
    },
    submitter: { id: submitter.id, slug: submitter.slug, email: submitter.email, name: submitter.name, phone: submitter.phone, link },
    sender: submission.createdByUser,
    timeZone: submission.account.timezone,
  };

  if (job.channel === 'email') {
    if (!submitter.email) return;
    const purpose = ownTypes.size === 0 ? 'view' : ownTypes.has('signature') || ownTypes.has('initials') ? 'sign' : 'submit';
    const rendered = buildSignatureRequestEmail({ variables, message: prefs.message ?? submissionPrefs.message ?? null, purpose });
    const row = await queueEmail(db, {
      accountId: submitter.accountId,
      submissionId: submission.id,
      submitterId: submitter.id,
      kind: 'signature_request',
      dedupeKey: `signature_request:${submitter.id}:${job.sending}`,
      from: deps.config.mailFrom,
      to: [submitter.email],
      replyTo: prefs.reply_to ?? submission.createdByUser?.email ?? null,
      subject: rendered.subject,
      textBody: rendered.text,
      htmlBody: rendered.html,
      provider: deps.mailer.name,
    });
    const result = await deliverEmail({ db, mailer: deps.mailer, logger: deps.logger }, row.id);
    if (result === 'sent') await recordSent(db, submitter, 'send_email', { email_message_id: row.id });
    return;
  }
  if (!submitter.phone) return;
  const row = await queueSms(db, {
    accountId: submitter.accountId,
    submissionId: submission.id,
    submitterId: submitter.id,
    kind: 'signature_request',
    dedupeKey: `signature_request:${submitter.id}:${job.sending}`,
    to: submitter.phone,
    body: buildSignatureRequestSms({ variables }),
    provider: deps.smsSender.name,
  });
  const result = await deliverSms({ db, smsSender: deps.smsSender, logger: deps.logger }, row.id);
  if (result === 'sent') await recordSent(db, submitter, 'send_sms', { sms_message_id: row.id });
}

async function recordSent(db: Db, submitter: { id: number; accountId: number; submissionId: number; sentAt: Date | null }, eventType: string, data: Record<string, unknown>) {
  await db.$transaction([
    db.submissionEvent.create({ data: { accountId: submitter.accountId, submissionId: submitter.submissionId, submitterId: submitter.id, eventType, data: data as never } }),
    ...(submitter.sentAt ? [] : [db.submitter.update({ where: { id: submitter.id }, data: { sentAt: new Date() } })]),
  ]);
}
