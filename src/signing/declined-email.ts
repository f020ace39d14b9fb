/**
 * The declined notice: when a party declines, the user who created the submission is told, with
 * the reason the party gave (DocuSeal's SubmitterMailer#declined_email, sent by
 * SubmitFormDeclineController to `submission.created_by_user || template.author` unless that user
 * turned "receive declined email" off). Signet has no per-user settings: the notice follows the
 * rule of the completed email (src/signing/completed-emails.ts) — the request's `send_email` not
 * false, the user not archived — so an integration that asked for no emails gets none.
 *
 * Its language (issue 24): the sender is no signer, so the account's default language, else
 * English (DocuSeal writes it in the account's locale); the fixed texts are the `email`
 * namespace's `declined_*` keys. The subject is DocuSeal's `name_declined_by_submitter`; the
 * reason is the signer's own text, appended as plain text (no Markdown, no variables).
 *
 * One outbox row per declined party (dedupe key `declined:<submitterId>`), delivered once.
 */
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import { DEFAULT_LANGUAGE } from '../i18n/languages.ts';
import { accountDefaultLanguage } from '../i18n/signer-language.ts';
import type { JobQueue } from '../jobs/job-queue.ts';
import type { OutboxJob } from '../jobs/outbox.ts';
import { deliverEmail, queueEmail } from '../notifications/deliver.ts';
import { inProgressError, type NotificationLogger, sendRetry } from '../notifications/delivery-error.ts';
import type { Mailer } from '../notifications/mailer.ts';
import { emailText, renderMessageBody, renderTemplateText } from '../notifications/message-templates.ts';

export const SEND_DECLINED_EMAIL_JOB = 'send-declined-email';

export interface DeclinedEmailDeps {
  db: Db;
  mailer: Mailer;
  config: Pick<Config, 'appUrl' | 'mailFrom' | 'sendRetryBase'>;
  logger: NotificationLogger;
}

/** Registers the declined notice's job: retried as the completed emails are (SEND_RETRY_BASE_MS, doubling, 10 runs). */
export function defineDeclinedEmailJob(queue: JobQueue, deps: DeclinedEmailDeps): void {
  queue.define<{ submitterId: number }>(
    SEND_DECLINED_EMAIL_JOB,
    ({ submitterId }, run) => sendDeclinedEmail(deps, submitterId, { claimant: run.id }),
    {
      retry: sendRetry(deps.config.sendRetryBase),
    },
  );
}

/** The declined notice's job of a party, recorded by the transaction in which it declined; once per party. */
export function declinedEmailJob(submitterId: number): OutboxJob {
  return { name: SEND_DECLINED_EMAIL_JOB, data: { submitterId }, uniqueKey: String(submitterId) };
}

/**
 * Queues and delivers the declined notice of a party that declined (see the module comment);
 * nothing for a party that has not declined, a submission without a creator (nor a template
 * author), an archived user, or a request whose `send_email` was false.
 * @param options.claimant the job's id (deliverEmail's claimant)
 * @throws DeliveryError when the provider failed transiently, or another worker holds the message
 */
export async function sendDeclinedEmail(
  deps: DeclinedEmailDeps,
  submitterId: number,
  options: { claimant?: string } = {},
): Promise<void> {
  const { db } = deps;
  const party = await db.submitter.findUnique({
    where: { id: submitterId },
    select: {
      id: true,
      slug: true,
      email: true,
      name: true,
      phone: true,
      declinedAt: true,
      declineReason: true,
      submission: {
        select: {
          id: true,
          accountId: true,
          name: true,
          preferences: true,
          account: { select: { name: true, timezone: true, preferences: true } },
          template: {
            select: {
              id: true,
              name: true,
              author: { select: { email: true, firstName: true, lastName: true, archivedAt: true } },
            },
          },
          createdByUser: { select: { email: true, firstName: true, lastName: true, archivedAt: true } },
        },
      },
    },
  });
  if (!party?.declinedAt) return;
  const { submission } = party;
  const user = submission.createdByUser ?? submission.template.author;
  const sendEmail = (submission.preferences as { send_email?: unknown } | null)?.send_email;
  if (!user || user.archivedAt || sendEmail === false) return;

  const language = accountDefaultLanguage(submission.account.preferences) ?? DEFAULT_LANGUAGE;
  const variables = {
    account: { name: submission.account.name },
    template: { id: submission.template.id, name: submission.template.name },
    submission: { id: submission.id, name: submission.name },
    submitter: {
      id: party.id,
      slug: party.slug,
      email: party.email,
      name: party.name,
      phone: party.phone,
      link: `${deps.config.appUrl}/s/${party.slug}`,
    },
    sender: user,
    timeZone: submission.account.timezone,
  };
  const subject = renderTemplateText(emailText(language, 'declined_subject'), variables).replace(/\s+/g, ' ').trim();
  const body = renderMessageBody(
    [emailText(language, 'greeting'), emailText(language, 'declined_body'), emailText(language, 'sign_off')].join(
      '\n\n',
    ),
    variables,
    {
      language,
      // The signer's own words, before the sign-off.
      plainBeforeLast: party.declineReason
        ? [emailText(language, 'declined_reason', { reason: party.declineReason })]
        : [],
    },
  );
  const row = await queueEmail(db, {
    accountId: submission.accountId,
    submissionId: submission.id,
    submitterId: party.id,
    kind: 'declined',
    dedupeKey: `declined:${party.id}`,
    from: deps.config.mailFrom,
    to: [user.email],
    // As DocuSeal: a reply goes to the party who declined.
    replyTo: party.email,
    subject,
    textBody: body.text,
    htmlBody: body.html,
    provider: deps.mailer.name,
  });
  const outcome = await deliverEmail(
    { db, mailer: deps.mailer, logger: deps.logger, claimant: options.claimant },
    row.id,
  );
  if (outcome === 'in-progress') throw inProgressError(deps.mailer.name);
}
