/**
 * The emails sent once a submission is completed (reference/docuseal-behaviour.md §10.1 step 3;
 * DocuSeal's ProcessSubmitterCompletionJob#enqueue_completed_emails and SubmitterMailer):
 *
 * - **Completed email** to the user who created the submission: "<template> has been completed by
 *   <parties>", with the signed documents and the audit log attached — DocuSeal's rule: only when
 *   the request's `send_email` was not false (kept as the submission's `preferences.send_email`;
 *   absent on submissions made before it was kept, which counts as true), the template's
 *   `completed_notification_email_enabled` preference is not false, and the user is not archived;
 *   and not when the user is also a party that may be emailed (the copy reaches them as a party) —
 *   a party whose own send_email is false does get it.
 * - The same email to each address of `bcc_completed` (the submission's, else the template's
 *   preference; §7.4), one message per address, under the same conditions but the last, and not
 *   twice to the owner.
 * - **Document copy** ("Your document copy") to each party with an email whose send_email is not
 *   false, unless the template's `documents_copy_email_enabled` preference is false, with the same
 *   attachments and a link to its form (`/s/{slug}`), which offers the signed copies for download
 *   once completed. DocuSeal sends one message to all parties together; one each keeps the
 *   addresses apart and gives each party its own link.
 *
 * The bodies name the submission (its name, else its template's: DocuSeal's views use
 * `submission.name || submission.template.name`); the completed email's subject keeps
 * `{template.name}`, DocuSeal's default subject.
 *
 * Languages (issue 24): each party's copy is in that party's language (src/i18n/signer-language.ts);
 * the completed email goes to the sender and the bcc addresses, who are no signers, in the
 * account's default language (else English; DocuSeal writes them in the account's locale). The
 * fixed texts are the `email` namespace of src/i18n/locales/<code>.json (message-templates.ts
 * emailText).
 *
 * Attachments: the audit log first, then the final documents in order, while the total stays
 * under 10 MB (DocuSeal's MAX_ATTACHMENTS_SIZE); the text says so when some are left out.
 *
 * Each message is an outbox row with a dedupe key (`completed:<submissionId>:owner`,
 * `completed:<submissionId>:bcc:<address>`, `documents_copy:<submitterId>`) delivered at most once
 * (src/notifications/deliver.ts), so the job may run again (retry, restart) without sending twice.
 */
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import type { FileStorage } from '../documents/storage.ts';
import type { JobQueue } from '../jobs/job-queue.ts';
import type { OutboxJob } from '../jobs/outbox.ts';
import { deliverEmail, queueEmail } from '../notifications/deliver.ts';
import { inProgressError, type NotificationLogger, sendRetry } from '../notifications/delivery-error.ts';
import type { EmailAttachment, Mailer } from '../notifications/mailer.ts';
import { DEFAULT_LANGUAGE, type LanguageCode } from '../i18n/languages.ts';
import { accountDefaultLanguage, signerLanguage } from '../i18n/signer-language.ts';
import {
  emailText,
  renderMessageBody,
  renderTemplateText,
  type MessageVariables,
} from '../notifications/message-templates.ts';

export const SEND_COMPLETED_EMAILS_JOB = 'send-completed-emails';

/** DocuSeal's SubmitterMailer::MAX_ATTACHMENTS_SIZE: attachments stop before the total reaches it. */
export const MAX_ATTACHMENTS_BYTES = 10 * 1024 * 1024;

export interface CompletedEmailDeps {
  db: Db;
  storage: FileStorage;
  mailer: Mailer;
  config: Pick<Config, 'appUrl' | 'mailFrom' | 'sendRetryBase'>;
  logger: NotificationLogger;
}

/** Registers the completed emails' job: retried as signature requests are (SEND_RETRY_BASE_MS, doubling, 10 runs). */
export function defineCompletedEmailsJob(queue: JobQueue, deps: CompletedEmailDeps): void {
  queue.define<{ submissionId: number }>(
    SEND_COMPLETED_EMAILS_JOB,
    ({ submissionId }, run) => sendCompletedEmails(deps, submissionId, { claimant: run.id }),
    {
      retry: sendRetry(deps.config.sendRetryBase),
    },
  );
}

/** The completed emails' job of a submission, recorded by the transaction that completed it; once per submission. */
export function completedEmailsJob(submissionId: number): OutboxJob {
  return { name: SEND_COMPLETED_EMAILS_JOB, data: { submissionId }, uniqueKey: String(submissionId) };
}

interface PlannedAttachment {
  filename: string;
  storageKey: string;
  contentType: string;
  bytes: number;
}

/**
 * Queues and delivers the completed emails of a completed submission (see the module comment);
 * does nothing for a submission that is not completed or has no audit log yet.
 * @param options.claimant the job's id (deliverEmail's claimant)
 * @throws DeliveryError when a provider failed transiently, or another worker holds a message
 *   (the job retries; sent messages are not sent again)
 */
export async function sendCompletedEmails(
  deps: CompletedEmailDeps,
  submissionId: number,
  options: { claimant?: string } = {},
): Promise<void> {
  const { db } = deps;
  const submission = await db.submission.findUnique({
    where: { id: submissionId },
    include: {
      template: { select: { id: true, name: true, preferences: true } },
      account: { select: { name: true, timezone: true, preferences: true } },
      createdByUser: { select: { firstName: true, lastName: true, email: true, archivedAt: true } },
      submitters: { orderBy: [{ completedAt: 'asc' }, { id: 'asc' }] },
      completedDocuments: {
        include: { file: { select: { filename: true, storageKey: true, contentType: true, byteSize: true } } },
        orderBy: { position: 'asc' },
      },
    },
  });
  if (!submission?.completedAt) return;
  const auditLog = submission.completedDocuments.find((d) => d.kind === 'audit_log');
  if (!auditLog) return;
  const last = submission.submitters.at(-1);
  if (!last) return;

  // What the API returns as `documents`: the last party's set, which carries everyone's values.
  const finals = submission.completedDocuments.filter((d) => d.kind === 'document' && d.submitterId === last.id);
  const planned: PlannedAttachment[] = [];
  let total = 0;
  let leftOut = 0;
  const title = submission.name || submission.template.name;
  for (const doc of [
    { ...auditLog, filename: `Audit Log - ${title}.pdf` },
    ...finals.map((d) => ({ ...d, filename: d.file.filename })),
  ]) {
    const bytes = Number(doc.file.byteSize);
    if (total + bytes >= MAX_ATTACHMENTS_BYTES) {
      leftOut += 1;
      continue;
    }
    total += bytes;
    planned.push({
      filename: doc.filename.replace(/"/g, "'"),
      storageKey: doc.file.storageKey,
      contentType: doc.file.contentType,
      bytes,
    });
  }
  // Read once per run, and only if a message is sent now.
  let loaded: Promise<EmailAttachment[]> | undefined;
  const attachments = () =>
    (loaded ??= Promise.all(
      planned.map(async (a) => ({
        filename: a.filename,
        contentType: a.contentType,
        content: await deps.storage.read(a.storageKey),
      })),
    ));

  const variablesFor = (party: (typeof submission.submitters)[number]): MessageVariables => ({
    account: { name: submission.account.name },
    template: { id: submission.template.id, name: submission.template.name },
    submission: {
      id: submission.id,
      name: submission.name,
      submitters: submission.submitters.map((s) => ({
        id: s.id,
        slug: s.slug,
        email: s.email,
        name: s.name,
        phone: s.phone,
      })),
    },
    submitter: {
      id: party.id,
      slug: party.slug,
      email: party.email,
      name: party.name,
      phone: party.phone,
      link: `${deps.config.appUrl}/s/${party.slug}`,
    },
    sender: submission.createdByUser,
    timeZone: submission.account.timezone,
  });
  /** "One file is too large to attach (over 10 MB in all)." in `language`, or '' when every file is attached. */
  const tooLarge = (language: LanguageCode) =>
    leftOut > 0 ? emailText(language, 'too_large', { count: leftOut }) : '';

  const messages: Array<{
    kind: string;
    dedupeKey: string;
    submitterId: number | null;
    to: string;
    replyTo: string | null;
    subject: string;
    text: string;
    html: string;
  }> = [];
  // DocuSeal's ProcessSubmitterCompletionJob#enqueue_completed_emails (module comment).
  const submissionPrefs = (submission.preferences ?? {}) as { send_email?: unknown; bcc_completed?: unknown };
  const templatePrefs = (submission.template.preferences ?? {}) as {
    completed_notification_email_enabled?: unknown;
    documents_copy_email_enabled?: unknown;
    bcc_completed?: unknown;
  };
  const owner = submission.createdByUser;
  const notifyOwner =
    owner !== null &&
    owner.archivedAt === null &&
    submissionPrefs.send_email !== false &&
    templatePrefs.completed_notification_email_enabled !== false;

  if (notifyOwner) {
    const variables = variablesFor(last);
    const language = accountDefaultLanguage(submission.account.preferences) ?? DEFAULT_LANGUAGE;
    const subject = oneLine(renderTemplateText(emailText(language, 'completed_subject'), variables));
    const note = tooLarge(language)
      ? `${tooLarge(language)} ${emailText(language, 'completed_download')}`
      : emailText(language, 'completed_attached');
    const body = renderMessageBody(
      [
        emailText(language, 'greeting'),
        emailText(language, 'completed_body'),
        note,
        emailText(language, 'sign_off'),
      ].join('\n\n'),
      variables,
      { language },
    );
    const ownerAsParty = submission.submitters.find((s) => s.email?.toLowerCase() === owner.email.toLowerCase());
    const toOwner = !ownerAsParty || preferencesOf(ownerAsParty).send_email === false ? owner.email : null;
    if (toOwner)
      messages.push({
        kind: 'completed',
        dedupeKey: `completed:${submission.id}:owner`,
        submitterId: null,
        to: toOwner,
        replyTo: null,
        subject,
        ...body,
      });
    const bcc = emailAddressesIn(submissionPrefs.bcc_completed);
    for (const address of bcc.length > 0 ? bcc : emailAddressesIn(templatePrefs.bcc_completed)) {
      if (toOwner && address === toOwner.toLowerCase()) continue;
      messages.push({
        kind: 'completed',
        dedupeKey: `completed:${submission.id}:bcc:${address}`,
        submitterId: null,
        to: address,
        replyTo: null,
        subject,
        ...body,
      });
    }
  }

  for (const party of templatePrefs.documents_copy_email_enabled === false ? [] : submission.submitters) {
    const prefs = preferencesOf(party);
    if (!party.email || prefs.send_email === false) continue;
    const variables = variablesFor(party);
    const language = signerLanguage({ submitter: party, submission, account: submission.account });
    const copy = emailText(language, 'copy_body');
    const body = renderMessageBody(
      [
        emailText(language, 'greeting'),
        tooLarge(language) ? `${copy} ${tooLarge(language)}` : copy,
        `${emailText(language, 'copy_link')} [{submission.name}]({submitter.link})`,
        emailText(language, 'sign_off'),
      ].join('\n\n'),
      variables,
      { language },
    );
    messages.push({
      kind: 'documents_copy',
      dedupeKey: `documents_copy:${party.id}`,
      submitterId: party.id,
      to: party.email,
      replyTo: prefs.reply_to ?? submission.createdByUser?.email ?? null,
      subject: emailText(language, 'copy_subject'),
      ...body,
    });
  }

  // Every row first, so a failure on one message leaves the others queued for the retry.
  const rows = [];
  for (const message of messages) {
    rows.push(
      await queueEmail(db, {
        accountId: submission.accountId,
        submissionId: submission.id,
        submitterId: message.submitterId,
        kind: message.kind,
        dedupeKey: message.dedupeKey,
        from: deps.config.mailFrom,
        to: [message.to],
        replyTo: message.replyTo,
        subject: message.subject,
        textBody: message.text,
        htmlBody: message.html,
        provider: deps.mailer.name,
      }),
    );
  }
  let failure: unknown;
  for (const row of rows) {
    try {
      const outcome = await deliverEmail(
        { db, mailer: deps.mailer, logger: deps.logger, attachments, claimant: options.claimant },
        row.id,
      );
      if (outcome === 'in-progress') throw inProgressError(deps.mailer.name);
    } catch (error) {
      failure ??= error;
    }
  }
  if (failure) throw failure;
}

function preferencesOf(submitter: { preferences: unknown }): { send_email?: boolean; reply_to?: string } {
  return (submitter.preferences ?? {}) as { send_email?: boolean; reply_to?: string };
}

/** The email addresses in a bcc_completed value ("a@x.test, b@y.test"), lower-case, each once. */
function emailAddressesIn(value: unknown): string[] {
  if (typeof value !== 'string') return [];
  return [...new Set((value.match(/[^\s@,;<>"']+@[^\s@,;<>"']+\.[^\s@,;<>"']+/g) ?? []).map((a) => a.toLowerCase()))];
}

function oneLine(s: string): string {
  return s.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}
