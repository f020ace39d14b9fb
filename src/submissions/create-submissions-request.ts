/**
 * One DocuSeal-style create request, read and carried out: the GraphQL `createSubmissions`
 * mutation and the REST create routes (POST /submissions, /submissions/init,
 * /templates/{id}/submissions, /submissions/emails; rest-compat's routes/submissions.ts) both call
 * createSubmissionsForRequest, so both apply the same limits and defaults
 * (reference/docuseal-behaviour.md §7.1, §7.6; src/limits.ts) and the same service.
 */
import type { z } from 'zod';
import { parseInput } from '../accounts/api-keys.ts';
import type { KeyFolders } from '../accounts/key-scopes.ts';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { storedLanguage } from '../i18n/signer-language.ts';
import { checkItems, MAX_ITEMS } from '../limits.ts';
import { checkReminderSettings } from '../notifications/reminder-settings.ts';
import {
  type CreateDeps,
  type CreatedSubmission,
  type CreateSubmissionsOptions,
  createSubmissions,
  type SubmissionRequest,
} from './create-submissions.ts';
import {
  type CreateSubmissionsRequest,
  refuseTwoFactor,
  SubmissionSettingsInput,
  SubmitterInput,
} from './submitter-input.ts';

/**
 * One submitter of the request, parsed with its definition.
 * @param at where it is in the request, for messages ("submitters[0]")
 */
function toSubmitterInput(raw: z.input<typeof SubmitterInput>, at: string): SubmitterInput {
  const submitter = parseInput(SubmitterInput, raw, { at });
  refuseTwoFactor(submitter, at);
  // DocuSeal (one-off routes, OpenAPI): "the role name of the previous party that should invite this
  // party via email"; its form then asks that party for this one's email. Signet's form has no such
  // step, so the party would wait for an invitation that never comes: refused.
  if (submitter.invite_by?.trim())
    throw new AppError(
      'VALIDATION',
      `invite_by is not supported in \`${at}\`: a party cannot invite another from the signing form; ` +
        'give this party its email or phone.',
    );
  return submitter;
}

export interface CreateSubmissionsForRequestDeps extends CreateDeps {
  config: Pick<Config, 'downloadAllowPrivate' | 'downloadMaxBytes' | 'downloadTimeout' | 'images'>;
}

/**
 * Reads a create request's submission part (all but its template): sizes first (counts, then each
 * part), the order, the settings, and each submitter parsed at its path; with `emails_mode`, one
 * submission per submitter, all to the first role, in random order (§7.6). Shared by the create
 * requests from a template and the one-off ones (src/submissions/create-one-off-submission.ts).
 * @param input the request in DocuSeal's keys (CreateSubmissionsRequest), not yet parsed
 * @returns createSubmissions' options but the account, user and template
 * @throws AppError VALIDATION (sizes, order, a message without body, a submitter's shape,
 *   `require_email_2fa`/`require_phone_2fa` true: refuseTwoFactor; a submitter's `invite_by`;
 *   `reminders` that make no sense: checkReminderSettings)
 */
export function readSubmissionsRequest(
  deps: Pick<CreateSubmissionsForRequestDeps, 'config'>,
  input: Omit<z.input<typeof CreateSubmissionsRequest>, 'template_id'>,
): Omit<CreateSubmissionsOptions, 'accountId' | 'userId' | 'templateId'> {
  const order = input.order || 'preserved';
  // DocuSeal's message, as REST has always answered it (no period).
  if (order !== 'preserved' && order !== 'random')
    throw new AppError('VALIDATION', 'order must be one of preserved, random');
  if (input.emails_mode) checkItems(input.submitters, MAX_ITEMS.submissions, 'emails');
  else checkItems(input.submitters, MAX_ITEMS.submitters, 'submitters');
  checkItems(input.more_submissions, MAX_ITEMS.submissions - 1, 'submissions');
  const settings = parseInput(SubmissionSettingsInput, input);
  if (settings.message && !settings.message.body && settings.message.subject)
    throw new AppError('VALIDATION', 'body is required in `message`.');
  refuseTwoFactor(settings);
  const submitters = input.submitters.map((s, i) =>
    toSubmitterInput(s, `${input.emails_mode ? 'emails' : 'submitters'}[${i}]`),
  );
  const submissions: SubmissionRequest[] = input.emails_mode
    ? submitters.map((s) => ({ submitters: [{ ...s, role: undefined, uuid: undefined }], path: 'submitters' }))
    : [
        { submitters, path: 'submitters' },
        ...(input.more_submissions ?? []).map((group, i) => {
          const path = `submissions[${i + 1}].submitters`;
          checkItems(group.submitters, MAX_ITEMS.submitters, path);
          return {
            submitters: group.submitters.map((s, j) => toSubmitterInput(s, `${path}[${j}]`)),
            path,
          };
        }),
      ];
  const { config } = deps;
  return {
    source: 'api',
    settings: {
      sendEmail: input.send_email ?? true,
      sendSms: input.send_sms ?? false,
      order: input.emails_mode ? 'random' : order,
      completedRedirectUrl: settings.completed_redirect_url,
      bccCompleted: settings.bcc_completed,
      replyTo: settings.reply_to,
      message: settings.message,
      expireAt: input.expire_at,
      name: settings.name,
      variables: settings.variables,
      goToLast: settings.go_to_last,
      requireEmail2fa: settings.require_email_2fa,
      requirePhone2fa: settings.require_phone_2fa,
      reminders: settings.reminders ? checkReminderSettings(settings.reminders) : undefined,
      language: settings.language === undefined ? undefined : storedLanguage(settings.language),
    },
    submissions,
    download: {
      allowPrivate: config.downloadAllowPrivate,
      maxBytes: config.downloadMaxBytes,
      timeoutMs: config.downloadTimeout,
    },
    images: config.images,
  };
}

/**
 * Creates the submissions a create request asks for, acting for `viewer`; the requests (emails,
 * SMS), expiry, completions and `submission.created` are written with them (createSubmissions).
 * The request is read by readSubmissionsRequest.
 * @param input the request in DocuSeal's keys (CreateSubmissionsRequest), not yet parsed
 * @param options.source the submissions' `source` (default "api"; "link" for a template's shared
 *   link, src/signing-form/start-template-form.ts, which sends no request)
 * @returns the submissions made, in request order, with their submitters as stored
 * @throws AppError VALIDATION (sizes, order, a message without body, each submitter's rules with
 *   DocuSeal's messages), and what createSubmissions throws (NOT_FOUND / FORBIDDEN template, …)
 */
export async function createSubmissionsForRequest(
  deps: CreateSubmissionsForRequestDeps,
  viewer: { accountId: number; userId: number; folders?: KeyFolders | null | undefined },
  input: z.input<typeof CreateSubmissionsRequest>,
  options: { source?: 'api' | 'link' } = {},
): Promise<CreatedSubmission[]> {
  const request = readSubmissionsRequest(deps, input);
  return createSubmissions(deps, {
    accountId: viewer.accountId,
    userId: viewer.userId,
    folders: viewer.folders,
    templateId: input.template_id,
    ...request,
    source: options.source ?? request.source,
  });
}
