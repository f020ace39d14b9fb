/**
 * A PUT /submissions/{id} request (GraphQL `UpdateSubmissionInput`), defined once in DocuSeal's
 * keys (DESIGN.md "Each input is defined once"; reference/docuseal-behaviour.md §7.7): GraphQL's
 * input type is derived from it (src/graphql/zod-input.ts) and so is the REST body reading
 * (rest-compat/params.ts restInput). Sizes: src/limits.ts.
 */
import { z } from 'zod';
import { LanguageTagInput, storedLanguage } from '../i18n/signer-language.ts';
import { MAX_LENGTH, text } from '../limits.ts';
import { checkReminderSettings, ReminderSettings, type Reminders } from '../notifications/reminder-settings.ts';

export const UpdateSubmissionRequest = z.object({
  id: z.number().int(),
  name: text(MAX_LENGTH.name).optional(),
  expire_at: z.date().optional(),
  /** DocuSeal clears the expiry with `expire_at: null` (or ""); GraphQL, where null means absent, says it so. */
  clear_expire_at: z.boolean().optional().meta({ description: 'Remove the expiry.' }),
  archived: z.boolean().optional(),
  reminders: ReminderSettings.optional().meta({
    description:
      "The submission's reminder settings from now on (a Signet extension): the reminders still to come follow them.",
  }),
  language: LanguageTagInput.optional().meta({
    description:
      'The language of its parties without one of their own, from now on (a Signet extension; see ' +
      'SubmitterInput); "" removes it.',
  }),
});

/**
 * A parsed request's changes as updateSubmission (submission-actions.ts) takes them:
 * `clear_expire_at: true` wins over `expire_at` and gives `expireAt: null`; `reminders` are checked
 * (checkReminderSettings); `language` is stored as its code (storedLanguage: null for "").
 * @throws AppError VALIDATION for reminder settings that make no sense
 */
export function submissionChanges(request: Omit<z.output<typeof UpdateSubmissionRequest>, 'id'>): {
  name?: string;
  expireAt?: Date | null;
  archived?: boolean;
  reminders?: Reminders;
  language?: string | null;
} {
  return {
    ...(request.name !== undefined ? { name: request.name } : {}),
    ...(request.clear_expire_at ? { expireAt: null } : request.expire_at ? { expireAt: request.expire_at } : {}),
    ...(request.archived !== undefined ? { archived: request.archived } : {}),
    ...(request.reminders !== undefined ? { reminders: checkReminderSettings(request.reminders) } : {}),
    ...(request.language !== undefined ? { language: storedLanguage(request.language) } : {}),
  };
}
