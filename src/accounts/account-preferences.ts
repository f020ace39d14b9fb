/**
 * An account's settings (the `accounts.preferences` JSON column), in DocuSeal's terms: its
 * AccountConfig rows (app/models/account_config.rb), of which Signet keeps those it acts on.
 *
 * - `combine_pdf_result` (DocuSeal's COMBINE_PDF_RESULT_KEY, "combine PDF result" in its account
 *   settings): when the submission completes, the completion also makes one signed PDF of the
 *   final documents followed by the audit log, whose URL is `combined_document_url`
 *   (app/jobs/process_submitter_completion_job.rb, lib/submissions/generate_combined_attachment.rb).
 * - `reminders` (DocuSeal Pro's SUBMITTER_REMINDERS account config, app/models/account_config.rb):
 *   the reminder settings of the account's submissions that have none of their own
 *   (src/notifications/reminder-settings.ts; src/submissions/reminders.ts sends them).
 * - `default_language` (Signet's; DocuSeal's account locale is its users' UI language): the
 *   language of its signers for whom nothing else names one — no `language` of their own or of
 *   their submission, no `metadata.lang` (src/i18n/signer-language.ts, which reads it). A code of
 *   src/i18n/languages.ts; unset by default, so that a signer's browser language (Accept-Language)
 *   decides on the signing page.
 * - `signing_consent_text` (Signet's; DocuSeal has no consent step): the account's own
 *   electronic-signature disclosure, shown to its signers instead of Signet's default text —
 *   `{"default": text}` for every language, or per language (`{"de": …, "default": …}`);
 *   src/signing-form/signing-consent.ts reads it.
 *
 * One definition: the stored column is parsed through AccountPreferences; the GraphQL input of
 * `updateAccountPreferences` and the CLI's `account settings` options are derived from
 * AccountPreferencesChange.
 */
import { z } from 'zod';
import type { Db } from '../db/client.ts';
import { armReminders } from '../db/queries/reminders.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { LanguageTagInput, storedLanguage } from '../i18n/signer-language.ts';
import { SigningConsentTextInput, storedConsentText } from './consent-texts.ts';
import {
  checkReminderSettings,
  ReminderSettings,
  type Reminders,
  readReminders,
} from '../notifications/reminder-settings.ts';

/** The stored settings; keys Signet does not know are kept as they are. */
export const AccountPreferences = z.looseObject({
  combine_pdf_result: z.boolean().optional(),
  /** As stored (checked when set); read with accountReminders. */
  reminders: z.unknown().optional(),
  /** A code of src/i18n/languages.ts; read with accountDefaultLanguage (src/i18n/signer-language.ts). */
  default_language: z.unknown().optional(),
  /** `{default?, <code>?: text}`; read with accountConsentTexts (src/signing-form/signing-consent.ts). */
  signing_consent_text: z.unknown().optional(),
});
export type AccountPreferences = z.infer<typeof AccountPreferences>;

/** A change of settings: the keys given are set, the others kept. */
export const AccountPreferencesChange = z.object({
  combine_pdf_result: z
    .boolean()
    .optional()
    .meta({
      description:
        'Completion also makes one signed PDF of the final documents and the audit log ' +
        '(`combinedDocumentUrl`; DocuSeal "combine PDF result").',
    }),
  reminders: ReminderSettings.optional().meta({
    description:
      'Reminder settings of the submissions that have none of their own (`{maxCount: 0}`: none); the reminders ' +
      'still to come follow a change.',
  }),
  default_language: LanguageTagInput.optional().meta({
    description:
      'The language of its signers without one of their own, their submission’s or `metadata.lang` (a code: de, ' +
      'ar, …; a tag of one such as pt-BR is stored as its code); "" removes it, and the signer’s browser decides.',
  }),
  signing_consent_text: SigningConsentTextInput.optional().meta({
    description:
      'The account’s own electronic-signature disclosure, shown to its signers before they sign instead of ' +
      'Signet’s: one text for every language, or `{"de": "…", "default": "…"}` (language codes, `default` for the ' +
      'others); paragraphs split by a blank line; at most 20,000 characters each. "" or {} removes it ' +
      '(docs/signing-form.md "Consent").',
  }),
});
export type AccountPreferencesChange = z.infer<typeof AccountPreferencesChange>;

/**
 * The settings stored in an account's `preferences` column; a value of the wrong type reads as unset.
 * @param stored the column's JSON
 */
export function parseAccountPreferences(stored: unknown): AccountPreferences {
  const parsed = AccountPreferences.safeParse(stored ?? {});
  if (parsed.success) return parsed.data;
  const loose = (typeof stored === 'object' && stored !== null ? stored : {}) as Record<string, unknown>;
  return { ...loose, combine_pdf_result: undefined };
}

/** The account's default reminder settings, or null when it has none. */
export function accountReminders(preferences: AccountPreferences): Reminders | null {
  return readReminders(preferences.reminders);
}

/**
 * Sets the given settings of an account (the others are kept), read and written in one transaction.
 * New default reminder settings have the next reminder scan judge the parties of the submissions
 * without settings of their own again (armReminders), in the same transaction.
 * @returns the account's settings after the change
 * `default_language` is stored as its code ("" removes it); `signing_consent_text` as
 * `{default?, <code>?}` (storedConsentText; "" or {} removes it).
 * @throws AppError VALIDATION for reminder settings that make no sense (checkReminderSettings)
 */
export async function updateAccountPreferences(
  db: Db,
  options: { accountId: number; change: AccountPreferencesChange },
): Promise<AccountPreferences> {
  const reminders = options.change.reminders && checkReminderSettings(options.change.reminders);
  return db.$transaction(async (tx) => {
    const account = await tx.account.findUniqueOrThrow({
      where: { id: options.accountId },
      select: { preferences: true },
    });
    const next = { ...parseAccountPreferences(account.preferences) };
    for (const [key, value] of Object.entries(options.change)) if (value !== undefined) next[key] = value;
    if (reminders) next.reminders = reminders;
    if (options.change.signing_consent_text !== undefined) {
      const texts = storedConsentText(options.change.signing_consent_text);
      if (texts) next.signing_consent_text = texts;
      else delete next.signing_consent_text;
    }
    if (options.change.default_language !== undefined) {
      const language = storedLanguage(options.change.default_language);
      if (language) next.default_language = language;
      else delete next.default_language;
    }
    await tx.account.update({
      where: { id: options.accountId },
      data: { preferences: next as Prisma.InputJsonValue },
    });
    if (reminders)
      await armReminders(
        tx,
        { accountId: options.accountId, submissionId: null, withoutOwnSettings: true },
        new Date(),
      );
    return next;
  });
}
