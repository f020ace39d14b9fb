/**
 * The message that asks a party to sign, on one channel: rendered from the party's request
 * (src/db/queries/signature-requests.ts), stored in the email/SMS outbox under a dedupe key and
 * delivered once (src/notifications/deliver.ts), its outcome recorded as submission events in the
 * statement that stores it. The signature request job (send-requests.ts) and the reminder job
 * (reminders.ts) both send it: a reminder is the request again (DocuSeal's default reminder email,
 * SUBMITTER_INVITATION_REMINDER_EMAIL_KEY in app/models/account_config.rb, has the invitation's
 * subject and body), under its own dedupe key, kind and event types.
 */
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import { abandonMessage } from '../db/queries/notification-events.ts';
import type { SignatureRequestRow } from '../db/queries/signature-requests.ts';
import type { SideEffects } from '../events/events.ts';
import {
  type DeliveryEvents,
  type DeliveryOutcome,
  deliverSms,
  queueAndDeliverEmail,
  queueSms,
} from '../notifications/deliver.ts';
import { inProgressError, type NotificationLogger, SEND_MAX_ATTEMPTS } from '../notifications/delivery-error.ts';
import type { Mailer } from '../notifications/mailer.ts';
import {
  buildSignatureRequestEmail,
  buildSignatureRequestSms,
  type MessageVariables,
} from '../notifications/message-templates.ts';
import type { SmsSender } from '../notifications/sms.ts';
import type { LanguageCode } from '../i18n/languages.ts';
import { signerLanguage } from '../i18n/signer-language.ts';
import type { Clock } from '../util/clock.ts';
import type { EmailClickTags } from './signing-links.ts';

/** What the jobs that send requests and reminders need. */
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
  /** The time reminders are judged by (src/util/clock.ts). */
  clock: Clock;
}

/** One message to send: where, under which key, recorded how. */
export interface RequestMessage {
  channel: 'email' | 'sms';
  /** Unique over the channel's outbox table: the same key again sends nothing more. */
  dedupeKey: string;
  /** The outbox row's kind: `signature_request`, `reminder`. */
  kind: string;
  /** The submission events of its outcome (`send_email` / `fail_email`, …). */
  events: Required<DeliveryEvents>;
  /** The job run's id: the delivery's claimant (src/notifications/deliver.ts). */
  runId: string;
}

/** The party's language as the request's row names it (src/i18n/signer-language.ts; no request, so no browser). */
export function requestLanguage(
  request: Pick<SignatureRequestRow, 'language' | 'metadataLang' | 'submissionLanguage' | 'accountLanguage'>,
): LanguageCode {
  return signerLanguage({
    submitter: { language: request.language, metadata: { lang: request.metadataLang } },
    submission: { language: request.submissionLanguage },
    account: { preferences: { default_language: request.accountLanguage } },
  });
}

/**
 * Renders and sends the request message of `request` (a party's request as readSignatureRequest
 * reads it) on one channel, once per dedupe key, to the party's email or phone as they are now,
 * in the party's language (requestLanguage) unless the sender wrote the message.
 * @returns the delivery's outcome; 'skipped' when the party has no address on that channel
 * @throws DeliveryError (retryable) when the provider failed, or another worker holds the message
 */
export async function deliverRequestMessage(
  deps: Pick<SendDeps, 'db' | 'mailer' | 'smsSender' | 'config' | 'logger' | 'emailClicks'>,
  request: SignatureRequestRow,
  message: RequestMessage,
): Promise<DeliveryOutcome | 'skipped'> {
  const { db } = deps;
  const prefs = request.preferences ?? {};
  const submissionPrefs = request.submissionPreferences ?? {};
  const link = `${deps.config.appUrl}/s/${request.slug}`;
  const language = requestLanguage(request);
  const sender = request.hasSender
    ? { firstName: request.senderFirstName, lastName: request.senderLastName, email: request.senderEmail }
    : null;
  const variables: MessageVariables = {
    account: { name: request.accountName },
    template: { id: request.templateId, name: request.templateName },
    submission: {
      id: request.submissionId,
      name: request.submissionName,
      expireAt: request.expireAt,
      submitters: request.parties,
    },
    submitter: {
      id: request.id,
      slug: request.slug,
      email: request.email,
      name: request.name,
      phone: request.phone,
      link,
    },
    sender,
    timeZone: request.timezone,
  };

  if (message.channel === 'email') {
    if (!request.email) return 'skipped';
    // Email links carry the click tag (DocuSeal's `t`); SMS links stay short.
    const emailLink = `${link}?t=${deps.emailClicks.tag(request.slug)}`;
    const ownTypes = new Set(request.ownTypes);
    const purpose =
      ownTypes.size === 0 ? 'view' : ownTypes.has('signature') || ownTypes.has('initials') ? 'sign' : 'submit';
    const rendered = buildSignatureRequestEmail({
      variables: { ...variables, submitter: { ...variables.submitter, link: emailLink } },
      message: prefs.message ?? submissionPrefs.message ?? null,
      purpose,
      language,
    });
    const { outcome } = await queueAndDeliverEmail(
      { db, mailer: deps.mailer, logger: deps.logger, claimant: message.runId, maxAttempts: SEND_MAX_ATTEMPTS },
      {
        accountId: request.accountId,
        submissionId: request.submissionId,
        submitterId: request.id,
        kind: message.kind,
        dedupeKey: message.dedupeKey,
        from: deps.config.mailFrom,
        to: [request.email],
        replyTo: prefs.reply_to ?? sender?.email ?? null,
        subject: rendered.subject,
        textBody: rendered.text,
        htmlBody: rendered.html,
        provider: deps.mailer.name,
      },
      // Recorded with each outcome: the sent event (and the first sent_at), or the failed one.
      message.events,
    );
    if (outcome === 'in-progress') throw inProgressError('email');
    return outcome;
  }
  if (!request.phone) return 'skipped';
  const row = await queueSms(db, {
    accountId: request.accountId,
    submissionId: request.submissionId,
    submitterId: request.id,
    kind: message.kind,
    dedupeKey: message.dedupeKey,
    to: request.phone,
    body: buildSignatureRequestSms({ variables, language }),
    provider: deps.smsSender.name,
  });
  const outcome = await deliverSms(
    {
      db,
      smsSender: deps.smsSender,
      logger: deps.logger,
      claimant: message.runId,
      maxAttempts: SEND_MAX_ATTEMPTS,
    },
    row.id,
    message.events,
  );
  if (outcome === 'in-progress') throw inProgressError('sms');
  return outcome;
}

/**
 * Gives up a message that failed before and waits for a retry no longer wanted, recording why as
 * its failed event (`retrying: false`, `reason`); nothing when there is no such message.
 */
export async function abandonRequestMessage(
  db: Db,
  message: Pick<RequestMessage, 'channel' | 'dedupeKey' | 'events'>,
  reason: string,
  now: Date,
): Promise<void> {
  await abandonMessage(db, message.channel, {
    dedupeKey: message.dedupeKey,
    eventType: message.events.failureEvent,
    now: now.toISOString(),
    reason,
    maxAttempts: SEND_MAX_ATTEMPTS,
  });
}
