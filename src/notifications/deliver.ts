/**
 * Outbox-backed delivery of emails and SMS, used by jobs.
 *
 * A message is first queued as a row (email_messages / sms_messages) whose unique dedupe_key makes
 * queuing it again a no-op; a job then delivers the row. Delivery claims the row with one
 * conditional UPDATE (status 'queued' → 'sending'), so of two workers on the same row only one
 * sends; the row then ends 'sent' (sent_at, provider_message_id), goes back to 'queued' with
 * last_error when the provider failed transiently (the error is rethrown so the job retries with
 * backoff), or ends 'failed' when the provider refused it or attempts ran out. This is how "a
 * provider outage never fails the API call and never sends twice" (issue 4) holds: the API only
 * writes rows and enqueues jobs; sending happens here, once per row.
 *
 * Row statuses: 'queued' → 'sending' → 'sent' | 'failed' (| back to 'queued' for a retry).
 *
 * A row left 'sending' by a worker that died is taken back after the lease, or at once by a later
 * run of the job that claimed it (`claimant`: the job's id; a job runs on one instance at a time,
 * so its later run knows the earlier one is gone). The one case where a message can go out twice
 * is a death between the provider accepting it and the row being marked sent; the message then
 * carries the same Message-ID both times (RFC 5322 §3.6.4, made from the dedupe key), which is
 * how mail systems recognise a repeated message.
 */
import { createHash } from 'node:crypto';
import type { Db, Prisma } from '../db/client.ts';
import { recordMessageFailed, recordMessageSent, type NotificationChannel } from '../db/queries/notification-events.ts';
import {
  emailIdByDedupeKey,
  insertClaimedEmail,
  insertSentOutboxEmailAndRecord,
  updateEmailState,
} from '../db/queries/notifications.ts';
import { AppError } from '../errors.ts';
import type { EmailMessage, SmsMessage } from '../generated/prisma/client.ts';
import { DeliveryError, type NotificationLogger } from './delivery-error.ts';
import type { EmailAttachment, Mailer, OutgoingEmail } from './mailer.ts';
import type { SmsSender } from './sms.ts';

export type DeliveryStatus = 'queued' | 'sending' | 'sent' | 'failed';

/**
 * The outcome of one delivery call:
 * - 'sent': this call handed the message to the provider.
 * - 'already-sent': the row was sent before; nothing was done.
 * - 'in-progress': another worker holds the row (claimed less than `leaseMs` ago); nothing was done.
 * - 'failed-permanently': the provider refused it, now or before, or attempts ran out; it will not be sent.
 */
export type DeliveryOutcome = 'sent' | 'already-sent' | 'in-progress' | 'failed-permanently';

/** Options shared by deliverEmail and deliverSms. */
export interface DeliveryOptions {
  logger?: NotificationLogger;
  /** Provider attempts before a row is given up as failed (default 12, as webhook sends). */
  maxAttempts?: number;
  /**
   * Milliseconds after which a row left 'sending' (a worker died mid-send) may be claimed again
   * (default 10 minutes, far above any provider timeout). Reclaiming such a row can send twice
   * if the dead worker's send had in fact gone through: the one case where at-least-once wins.
   */
  leaseMs?: number;
  /**
   * Who claims the row: the job run's id (JobRun.id). A row this claimant left 'sending' (an
   * earlier run of the same job, on an instance that died) is claimed again at once.
   */
  claimant?: string;
}

const DEFAULT_MAX_ATTEMPTS = 12;
const DEFAULT_LEASE_MS = 10 * 60_000;

export interface QueueEmailInput {
  accountId: number;
  submissionId?: number | null;
  submitterId?: number | null;
  /** What the message is: 'signature_request', 'completed', … */
  kind: string;
  /** Unique over all emails; the same key again returns the first row unchanged. */
  dedupeKey: string;
  /** RFC 5322 mailboxes ("Name <a@b.c>" or "a@b.c"). */
  from: string;
  to: string[];
  cc?: string[];
  bcc?: string[];
  replyTo?: string | null;
  subject: string;
  textBody: string;
  htmlBody?: string | null;
  /** The mailer expected to send it (`mailer.name`); delivery records the one that did. */
  provider: Mailer['name'];
}

/**
 * Stores an email in the outbox, once per dedupe key. Safe inside a transaction: a repeated key
 * does not abort it (INSERT … ON CONFLICT DO NOTHING, then a read).
 * @returns the new row, or the existing row for that dedupe key (its content unchanged)
 * @throws AppError VALIDATION when there is no recipient or no dedupe key
 */
export async function queueEmail(
  db: Pick<Prisma.TransactionClient, 'emailMessage'>,
  input: QueueEmailInput,
): Promise<EmailMessage> {
  if (!input.dedupeKey) throw new AppError('VALIDATION', 'dedupeKey is required');
  if (input.to.length === 0) throw new AppError('VALIDATION', 'an email needs at least one recipient in to');
  await db.emailMessage.createMany({
    data: [
      {
        accountId: input.accountId,
        submissionId: input.submissionId ?? null,
        submitterId: input.submitterId ?? null,
        kind: input.kind,
        dedupeKey: input.dedupeKey,
        from: input.from,
        to: input.to,
        cc: input.cc ?? [],
        bcc: input.bcc ?? [],
        replyTo: input.replyTo ?? null,
        subject: input.subject,
        textBody: input.textBody,
        htmlBody: input.htmlBody ?? null,
        provider: input.provider,
        status: 'queued',
      },
    ],
    skipDuplicates: true,
  });
  return db.emailMessage.findUniqueOrThrow({ where: { dedupeKey: input.dedupeKey } });
}

/** What deliverEmail needs: the email rows, a mailer, and the attachments loader if any. */
type EmailDeliveryDeps = {
  db: Pick<Db, 'emailMessage'>;
  mailer: Mailer;
  attachments?: () => Promise<EmailAttachment[]>;
} & DeliveryOptions;

/**
 * Sends one queued email at most once, however many workers call this for the row.
 * `deps.attachments`, when given, is called only when this call sends the message: the files
 * are not kept in the outbox row, so the caller loads them (e.g. signed documents from storage).
 * @param emailMessageId id of an email_messages row
 * @returns see DeliveryOutcome
 * @throws DeliveryError (retryable) when the provider failed transiently: the row is back in
 *   'queued' with last_error, and the job should retry later
 * @throws AppError NOT_FOUND when there is no such row
 */
export async function deliverEmail(deps: EmailDeliveryDeps, emailMessageId: number): Promise<DeliveryOutcome> {
  return deliverOnce<EmailMessage>(deps, emailTable(deps, emailMessageId));
}

/** deliverEmail's claim, read, update and send of one email_messages row, through Prisma. */
function emailTable(deps: EmailDeliveryDeps, emailMessageId: number): OutboxTable<EmailMessage> {
  const { db, mailer } = deps;
  const table = db.emailMessage;
  return {
    label: 'email',
    id: emailMessageId,
    claim: (staleBefore) =>
      table.updateMany({
        where: { id: emailMessageId, OR: claimableWhere(staleBefore, deps.claimant) },
        data: {
          status: 'sending',
          attemptCount: { increment: 1 },
          provider: mailer.name,
          claimedBy: deps.claimant ?? null,
        },
      }),
    find: () => table.findUnique({ where: { id: emailMessageId } }),
    update: (data) => table.update({ where: { id: emailMessageId }, data, select: { id: true } }),
    send: async (row) =>
      mailer.send({ ...outgoingEmail(row), ...(deps.attachments ? { attachments: await deps.attachments() } : {}) }),
  };
}

/**
 * The submission events that record a message's delivery, written by the statement that stores
 * its outcome on the row (src/db/queries/notification-events.ts gives their data). Only for a
 * message of a submission; none by default.
 */
export interface DeliveryEvents {
  /**
   * When this call sends the message (or, with the outbox, keeps it): an event of this type
   * (`send_email`, `send_sms`) with the provider and attempt, and the submitter's sent_at when unset.
   */
  submissionEvent?: string;
  /**
   * When an attempt fails: an event of this type (`fail_email`,
   * `fail_sms`) with the error and whether it will be retried.
   */
  failureEvent?: string;
}

/**
 * An outbox table's `update` that records `events` with the outcome (sent, or a failed attempt)
 * in the same statement, and otherwise does what `plain` does.
 */
function recordingUpdate(
  db: Db,
  channel: NotificationChannel,
  id: number,
  events: DeliveryEvents,
  options: DeliveryOptions,
  plain: OutboxTable<OutboxRow>['update'],
): OutboxTable<OutboxRow>['update'] {
  return async (data) => {
    const now = (data.sentAt ?? new Date()).toISOString();
    if (data.status === 'sent' && events.submissionEvent) {
      return recordMessageSent(db, channel, {
        id,
        eventType: events.submissionEvent,
        now,
        providerMessageId: data.providerMessageId ?? null,
      });
    }
    if ((data.status === 'queued' || data.status === 'failed') && data.lastError != null && events.failureEvent) {
      const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
      return recordMessageFailed(db, channel, {
        id,
        eventType: events.failureEvent,
        now,
        status: data.status,
        error: data.lastError,
        maxAttempts,
      });
    }
    return plain(data);
  };
}

/** Rows a claim may take: queued, or left 'sending' longer than the lease, or by this claimant. */
function claimableWhere(staleBefore: Date, claimant: string | undefined) {
  return [
    { status: 'queued' },
    { status: 'sending', updatedAt: { lt: staleBefore } },
    ...(claimant ? [{ status: 'sending', claimedBy: claimant }] : []),
  ];
}

/**
 * The Message-ID of an email (RFC 5322 §3.6.4), the same on every send of one outbox row: made
 * from its dedupe key, at the sender's domain.
 */
export function messageIdFor(dedupeKey: string, from: string): string {
  const domain = /@([^\s>]+)>?\s*$/.exec(from)?.[1] ?? 'signet.local';
  return `<${createHash('sha256').update(dedupeKey).digest('hex').slice(0, 32)}@${domain}>`;
}

/** The message a mailer sends for a stored or to-be-stored email. */
function outgoingEmail(
  email: Pick<QueueEmailInput, 'from' | 'to' | 'cc' | 'bcc' | 'replyTo' | 'subject' | 'textBody' | 'htmlBody'> & {
    dedupeKey: string | null;
  },
): OutgoingEmail {
  return {
    ...(email.dedupeKey ? { messageId: messageIdFor(email.dedupeKey, email.from) } : {}),
    from: email.from,
    to: email.to,
    cc: email.cc ?? [],
    bcc: email.bcc ?? [],
    replyTo: email.replyTo ?? undefined,
    subject: email.subject,
    text: email.textBody,
    html: email.htmlBody ?? undefined,
  };
}

/**
 * queueEmail then deliverEmail, in fewer statements for the usual case (a job's first run, the
 * key not stored yet): the row is inserted already claimed by this call (status 'sending',
 * attempt 1) and sent from `input`, with no read-back; then marked as deliverEmail marks it. A
 * stored key (a re-run, or another worker) goes through deliverEmail on the stored row, so the
 * outcomes and guarantees are deliverEmail's: at most one send per dedupe key, whoever calls.
 * Plain SQL (src/db/queries/notifications.ts): a hot path (the signature request job). With
 * the outbox mailer and a submission event, storing is sending: one statement inserts the row
 * sent and records it (insertSentOutboxEmailAndRecord), then the outbox logs it.
 * @param options the submission events recorded with the outcome, in the statement that stores it
 *   on the row (DeliveryEvents: the signature request's `send_email` and `fail_email`)
 * @returns the outcome (see DeliveryOutcome) and the row's id
 * @throws as queueEmail (VALIDATION) and deliverEmail (DeliveryError when the provider failed transiently)
 */
export async function queueAndDeliverEmail(
  deps: { db: Db; mailer: Mailer } & DeliveryOptions,
  input: QueueEmailInput,
  options: DeliveryEvents = {},
): Promise<{ outcome: DeliveryOutcome; emailMessageId: number }> {
  if (!input.dedupeKey) throw new AppError('VALIDATION', 'dedupeKey is required');
  if (input.to.length === 0) throw new AppError('VALIDATION', 'an email needs at least one recipient in to');
  const { db, mailer } = deps;
  const { submissionEvent } = options;
  /** The row the key already has (a re-run, or another worker): deliverEmail's outcome on it. */
  const deliverStored = async () => {
    const id = (await emailIdByDedupeKey(db, input.dedupeKey!))!;
    const table = emailTable(deps, id);
    const outcome = await deliverOnce<EmailMessage>(deps, {
      ...table,
      update: recordingUpdate(db, 'email', id, options, deps, table.update),
    });
    return { outcome, emailMessageId: id };
  };
  if (mailer.name === 'outbox' && submissionEvent) {
    // The outbox's sending is the storing: one statement, then its log line.
    const stored = await insertSentOutboxEmailAndRecord(db, input, {
      eventType: submissionEvent,
      now: new Date().toISOString(),
    });
    if (stored === undefined) return deliverStored();
    await mailer.send(outgoingEmail(input));
    return { outcome: 'sent', emailMessageId: stored };
  }
  const inserted = await insertClaimedEmail(db, input, {
    provider: mailer.name,
    now: new Date().toISOString(),
    claimant: deps.claimant ?? null,
  });
  if (inserted === undefined) return deliverStored();
  const id = inserted;
  const outcome = await sendClaimed<OutboxRow>(
    deps,
    {
      label: 'email',
      id,
      update: recordingUpdate(db, 'email', id, options, deps, ({ status, sentAt, providerMessageId, lastError }) =>
        updateEmailState(db, id, {
          status,
          at: (sentAt ?? new Date()).toISOString(),
          sent: sentAt !== undefined,
          providerMessageId: providerMessageId ?? null,
          lastError: lastError ?? null,
        }),
      ),
      send: () => mailer.send(outgoingEmail(input)),
    },
    { id, status: 'sending', attemptCount: 1 },
  );
  return { outcome, emailMessageId: id };
}

export interface QueueSmsInput {
  accountId: number;
  submissionId?: number | null;
  submitterId?: number | null;
  kind: string;
  /** Unique over all SMS; the same key again returns the first row unchanged. */
  dedupeKey: string;
  /** Sender number (E.164); the provider's configured one when absent. */
  from?: string | null;
  /** E.164. */
  to: string;
  body: string;
  provider: SmsSender['name'];
}

/**
 * Stores an SMS in the outbox, once per dedupe key (as queueEmail).
 * @returns the new row, or the existing row for that dedupe key
 * @throws AppError VALIDATION when there is no number or no dedupe key
 */
export async function queueSms(
  db: Pick<Prisma.TransactionClient, 'smsMessage'>,
  input: QueueSmsInput,
): Promise<SmsMessage> {
  if (!input.dedupeKey) throw new AppError('VALIDATION', 'dedupeKey is required');
  if (!input.to) throw new AppError('VALIDATION', 'an SMS needs a number in to');
  await db.smsMessage.createMany({
    data: [
      {
        accountId: input.accountId,
        submissionId: input.submissionId ?? null,
        submitterId: input.submitterId ?? null,
        kind: input.kind,
        dedupeKey: input.dedupeKey,
        from: input.from ?? null,
        to: input.to,
        body: input.body,
        provider: input.provider,
        status: 'queued',
      },
    ],
    skipDuplicates: true,
  });
  return db.smsMessage.findUniqueOrThrow({ where: { dedupeKey: input.dedupeKey } });
}

/**
 * Sends one queued SMS at most once (as deliverEmail).
 * @param events the submission events recorded with the outcome (DeliveryEvents: the signature
 *   request's `send_sms` and `fail_sms`), in the statement that stores it on the row
 * @throws DeliveryError (retryable) when the provider failed transiently; AppError NOT_FOUND
 */
export async function deliverSms(
  deps: { db: Db; smsSender: SmsSender } & DeliveryOptions,
  smsMessageId: number,
  events: DeliveryEvents = {},
): Promise<DeliveryOutcome> {
  const { db, smsSender } = deps;
  const table = db.smsMessage;
  const update: OutboxTable<SmsMessage>['update'] = (data) =>
    table.update({ where: { id: smsMessageId }, data, select: { id: true } });
  return deliverOnce<SmsMessage>(deps, {
    label: 'SMS',
    id: smsMessageId,
    claim: (staleBefore) =>
      table.updateMany({
        where: { id: smsMessageId, OR: claimableWhere(staleBefore, deps.claimant) },
        data: {
          status: 'sending',
          attemptCount: { increment: 1 },
          provider: smsSender.name,
          claimedBy: deps.claimant ?? null,
        },
      }),
    find: () => table.findUnique({ where: { id: smsMessageId } }),
    update:
      events.submissionEvent || events.failureEvent
        ? recordingUpdate(db, 'sms', smsMessageId, events, deps, update)
        : update,
    send: (row) => smsSender.send({ to: row.to, from: row.from ?? undefined, body: row.body }),
  });
}

interface OutboxRow {
  id: number;
  status: string;
  attemptCount: number;
}

interface OutboxTable<Row extends OutboxRow> {
  label: string;
  id: number;
  /** The conditional UPDATE to 'sending'; count 1 means this call owns the row. */
  claim(staleBefore: Date): Promise<{ count: number }>;
  find(): Promise<Row | null>;
  update(data: {
    status: DeliveryStatus;
    sentAt?: Date;
    providerMessageId?: string | null;
    lastError?: string | null;
  }): Promise<unknown>;
  send(row: Row): Promise<{ providerMessageId?: string }>;
}

async function deliverOnce<Row extends OutboxRow>(
  options: DeliveryOptions,
  table: OutboxTable<Row>,
): Promise<DeliveryOutcome> {
  const staleBefore = new Date(Date.now() - (options.leaseMs ?? DEFAULT_LEASE_MS));
  const { count } = await table.claim(staleBefore);
  const row = await table.find();
  if (!row) throw new AppError('NOT_FOUND', `${table.label} message ${table.id} not found`);
  if (count === 0) {
    if (row.status === 'sent') return 'already-sent';
    if (row.status === 'failed') return 'failed-permanently';
    return 'in-progress';
  }
  return sendClaimed(options, table, row);
}

/** Sends a row this call has claimed, and records the outcome (see the module comment). */
async function sendClaimed<Row extends OutboxRow>(
  options: DeliveryOptions,
  table: Pick<OutboxTable<Row>, 'label' | 'id' | 'update' | 'send'>,
  row: Row,
): Promise<DeliveryOutcome> {
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  let result: { providerMessageId?: string };
  try {
    result = await table.send(row);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // Anything that is not a provider's typed error (a bug, a broken connection to us) is
    // retried: losing a message is worse than trying it again.
    const retryable = error instanceof DeliveryError ? error.retryable : true;
    const log = { messageId: table.id, attempt: row.attemptCount, error: message };
    if (retryable && row.attemptCount < maxAttempts) {
      await table.update({ status: 'queued', lastError: message });
      options.logger?.warn(log, `${table.label} delivery failed; it will be retried`);
      throw error;
    }
    await table.update({ status: 'failed', lastError: message });
    options.logger?.error(log, `${table.label} delivery failed for good`);
    return 'failed-permanently';
  }

  // The provider has it now: recording that must not be lost, or a later reclaim would send again.
  const sent = {
    status: 'sent' as const,
    sentAt: new Date(),
    providerMessageId: result.providerMessageId ?? null,
    lastError: null,
  };
  for (let attempt = 1; ; attempt++) {
    try {
      await table.update(sent);
      break;
    } catch (error) {
      if (attempt >= 3) {
        options.logger?.error(
          { messageId: table.id, providerMessageId: result.providerMessageId, error: String(error) },
          `${table.label} was sent but could not be marked sent`,
        );
        throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }
  options.logger?.debug({ messageId: table.id, providerMessageId: result.providerMessageId }, `${table.label} sent`);
  return 'sent';
}
