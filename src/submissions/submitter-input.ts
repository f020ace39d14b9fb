/**
 * The submitter entries of a create request, validated with DocuSeal's rules and messages
 * (reference/docuseal-behaviour.md §7.1): "email or phone or name is required in `submitters[0]`.",
 * "email is invalid in `submitters[0]`.", "phone should start with +<country code> and contain only
 * digits in `submitters[0]`.", "role must be unique in `submitters`.".
 */
import { z } from 'zod';
import { AppError } from '../errors.ts';
import { jsonObject, list, MAX_ITEMS, MAX_JSON, MAX_LENGTH, record, text } from '../limits.ts';
import { LanguageTagInput } from '../i18n/signer-language.ts';
import { ReminderSettings } from '../notifications/reminder-settings.ts';

// Sizes: src/limits.ts (docs/security.md "Input limits"). Values (`values`, `default_value`) are
// measured once matched to their field (create-submissions.ts applyPrefill): an attachment's
// value is a file, checked as one.

/**
 * A submitter's setting for one field of its role (`submitters[].fields[]`). `value` (DocuSeal's
 * other name for `default_value`) comes with PUT /submitters/{id}'s `fields` JSON (internal: not in
 * GraphQL's `SubmitterFieldInput`). `validation` is merged into the field's, as DocuSeal's
 * assign_field_attrs does (lib/submissions/create_from_submitters.rb), `validation_pattern` on top.
 */
export const FieldConfig = z.object({
  name: text(MAX_LENGTH.name).optional(),
  uuid: text(MAX_LENGTH.name).optional(),
  default_value: z.unknown().optional(),
  value: z.unknown().optional().meta({ internal: true }),
  readonly: z.boolean().optional(),
  required: z.boolean().optional(),
  title: text(MAX_LENGTH.label).optional(),
  description: text(MAX_LENGTH.text).optional(),
  validation_pattern: text(MAX_LENGTH.pattern).optional(),
  invalid_message: text(MAX_LENGTH.label).optional(),
  validation: jsonObject(MAX_JSON.preferences)
    .optional()
    .meta({ description: '{pattern, message, min, max, step}: merged into the field’s validation.' }),
  preferences: jsonObject(MAX_JSON.preferences).optional(),
});
export type FieldConfig = z.infer<typeof FieldConfig>;

/** An e-mail's subject and body (GraphQL `EmailMessageInput`). */
export const MessageInput = z.object({
  subject: text(MAX_LENGTH.label).optional(),
  body: text(MAX_LENGTH.messageBody)
    .optional()
    .meta({ description: 'May use {{template.name}}, {{submitter.link}}, {{account.name}}, …' }),
});

/**
 * One submitter of a create request (GraphQL `SubmitterInput`, REST `submitters[]`). This is the
 * definition: GraphQL's input type (src/graphql/zod-input.ts) and the REST body reading
 * (rest-compat/params.ts) are derived from it.
 */
export const SubmitterInput = z.object({
  uuid: text(MAX_LENGTH.name).optional().meta({ description: 'Template role uuid.' }),
  role: text(MAX_LENGTH.name)
    .optional()
    .meta({ description: 'Template role name (case-insensitive); else the role at this position.' }),
  roles: list(text(MAX_LENGTH.name), MAX_ITEMS.roles)
    .optional()
    .meta({
      description:
        'Several template role names signed by this one person: they become one role with all their fields ' +
        '(named by `role`, else the names joined with " / ").',
    }),
  email: text(MAX_LENGTH.email).optional(),
  name: text(MAX_LENGTH.name).optional(),
  phone: text(MAX_LENGTH.phone).optional().meta({ description: 'E.164.' }),
  /** By field uuid or name: at most MAX_ITEMS.fields keys of at most MAX_LENGTH.name characters. */
  values: record(MAX_ITEMS.fields, MAX_LENGTH.name)
    .optional()
    .meta({ description: 'Prefilled values keyed by field name or uuid.' }),
  external_id: text(MAX_LENGTH.externalId).optional(),
  completed: z.boolean().optional().meta({ description: 'Mark completed now (an api_complete_form event).' }),
  metadata: jsonObject(MAX_JSON.metadata).optional(),
  send_email: z.boolean().optional(),
  send_sms: z.boolean().optional(),
  completed_redirect_url: text(MAX_LENGTH.url).optional(),
  reply_to: text(MAX_LENGTH.email).optional(),
  message: MessageInput.optional(),
  fields: list(FieldConfig, MAX_ITEMS.fields).optional(),
  readonly_fields: list(text(MAX_LENGTH.name), MAX_ITEMS.fields).optional(),
  order: z
    .number()
    .int()
    .optional()
    .meta({ description: 'Signing group: parties with the same number are sent together.' }),
  go_to_last: z
    .boolean()
    .optional()
    .meta({ description: 'The form opens at the first field still to fill (default: once opened before).' }),
  require_phone_2fa: z.boolean().optional().meta({ description: 'true is refused: no one-time codes.' }),
  require_email_2fa: z.boolean().optional().meta({ description: 'true is refused: no one-time codes.' }),
  invite_by: text(MAX_LENGTH.name)
    .optional()
    .meta({ description: 'Refused when given: a party cannot invite another from the signing form.' }),
  language: LanguageTagInput.optional().meta({
    description:
      "The party's language (a Signet extension): its signing form, emails, SMS, audit log and dates; a code " +
      '(de, ar, …) or a tag of one (pt-BR). Default: the submission’s, `metadata.lang`, the account’s, the browser’s.',
  }),
  /** The template role's position to use (when not by uuid or name); no request sets it (internal). */
  index: z.number().int().optional().meta({ internal: true }),
});
export type SubmitterInput = z.infer<typeof SubmitterInput>;

/** A further submission of the same request (GraphQL `SubmissionGroupInput`). */
export const SubmissionGroupInput = z.object({ submitters: z.array(SubmitterInput) });

/**
 * A create request (GraphQL `CreateSubmissionsInput`; REST POST /submissions, /submissions/init,
 * /templates/{id}/submissions, /submissions/emails). Counts of `submitters` and `more_submissions`
 * depend on the mode (MAX_ITEMS.submitters, or MAX_ITEMS.submissions with `emails_mode`) and are
 * checked by the resolver; each submitter is parsed with SubmitterInput at its path.
 */
export const CreateSubmissionsRequest = z.object({
  template_id: z.number().int(),
  submitters: z.array(SubmitterInput),
  send_email: z.boolean().optional().meta({ description: 'Default true.' }),
  send_sms: z.boolean().optional().meta({ description: 'Default false.' }),
  order: z.string().optional().meta({ description: 'preserved (default) or random.' }),
  completed_redirect_url: text(MAX_LENGTH.url).optional(),
  bcc_completed: text(MAX_LENGTH.email).optional(),
  reply_to: text(MAX_LENGTH.email).optional(),
  message: MessageInput.optional(),
  expire_at: z.date().optional(),
  name: text(MAX_LENGTH.name).optional(),
  variables: jsonObject(MAX_JSON.metadata).optional(),
  go_to_last: SubmitterInput.shape.go_to_last.meta({ description: 'Every submitter’s go_to_last, unless it has one.' }),
  require_phone_2fa: SubmitterInput.shape.require_phone_2fa,
  require_email_2fa: SubmitterInput.shape.require_email_2fa,
  emails_mode: z
    .boolean()
    .optional()
    .meta({ description: 'One submission per submitter, all to the first role (POST /submissions/emails).' }),
  more_submissions: z.array(SubmissionGroupInput).optional().meta({
    description: 'Further submissions of the same template in one call (the earlier shape `submissions: [...]`).',
  }),
  reminders: ReminderSettings.optional().meta({
    description:
      'Reminders to the parties who were sent a request and have not completed (a Signet extension); ' +
      "without them, the account's default.",
  }),
  language: LanguageTagInput.optional().meta({
    description: 'The language of the parties without one of their own (a Signet extension; see SubmitterInput).',
  }),
});

/** A create request's settings for all its submitters (part of CreateSubmissionsRequest). */
export const SubmissionSettingsInput = CreateSubmissionsRequest.pick({
  completed_redirect_url: true,
  bcc_completed: true,
  reply_to: true,
  message: true,
  name: true,
  variables: true,
  go_to_last: true,
  require_email_2fa: true,
  require_phone_2fa: true,
  reminders: true,
  language: true,
});

/** What PUT /submitters/{id} (GraphQL `updateSubmitter`) may change, in DocuSeal's keys. */
export const SubmitterChanges = SubmitterInput.pick({
  name: true,
  email: true,
  phone: true,
  values: true,
  external_id: true,
  metadata: true,
  completed_redirect_url: true,
  reply_to: true,
  message: true,
  fields: true,
  readonly_fields: true,
  language: true,
});

/**
 * A PUT /submitters/{id} request (GraphQL `UpdateSubmitterInput`, derived from it), in DocuSeal's
 * keys: every key of DocuSeal's `submitter_params` (app/controllers/api/submitters_controller.rb)
 * but `uuid` and `role`, which pick a party on create and mean nothing here. `message` and
 * `fields` arrive as JSON in DocuSeal's keys (GraphQL JSON); the service checks every change with
 * SubmitterChanges.
 */
export const UpdateSubmitterRequest = z.object({
  id: z.number().int(),
  name: SubmitterInput.shape.name,
  email: SubmitterInput.shape.email,
  phone: SubmitterInput.shape.phone.meta({ description: undefined }),
  values: SubmitterInput.shape.values.meta({ description: 'Merged into the existing values.' }),
  external_id: SubmitterInput.shape.external_id,
  metadata: SubmitterInput.shape.metadata.meta({ description: 'Replaces the stored metadata.' }),
  send_email: SubmitterInput.shape.send_email.meta({ description: 'true: send the request email again.' }),
  send_sms: SubmitterInput.shape.send_sms.meta({ description: 'true: send the request SMS again.' }),
  reply_to: SubmitterInput.shape.reply_to,
  completed_redirect_url: SubmitterInput.shape.completed_redirect_url,
  completed: z.boolean().optional().meta({ description: 'Complete now (an api_complete_form event).' }),
  go_to_last: SubmitterInput.shape.go_to_last,
  require_phone_2fa: SubmitterInput.shape.require_phone_2fa,
  require_email_2fa: SubmitterInput.shape.require_email_2fa,
  message: z.record(z.string(), z.unknown()).optional().meta({ description: '{subject, body}' }),
  fields: z.unknown().optional().meta({ description: 'Field settings as in createSubmissions (DocuSeal keys).' }),
  readonly_fields: SubmitterInput.shape.readonly_fields.meta({
    description: 'Names of this party’s fields to make read-only.',
  }),
  language: SubmitterInput.shape.language.meta({
    description: 'The party’s language (a Signet extension; see SubmitterInput); "" removes it.',
  }),
});

/**
 * DocuSeal's email check: split on `,` `;` `/` and validate each address (values with `<` skip
 * the check, as DocuSeal).
 */
export function isValidEmailList(value: string): boolean {
  if (value.includes('<')) return true;
  const parts = value
    .split(/[,;/]/)
    .map((p) => p.trim())
    .filter(Boolean);
  return parts.length > 0 && parts.every((p) => EMAIL.safeParse(p).success);
}

/** Made once: building a zod schema costs more than checking an address with it. */
const EMAIL = z.email();

const PHONE = /^\+\d+$/;

/**
 * Checks one submitter entry's contact data.
 * @param path where the entry is, for messages ("submitters[0]")
 * @throws AppError VALIDATION with DocuSeal's message
 */
export function checkSubmitterContact(submitter: SubmitterInput, path: string): void {
  if (!submitter.email && !submitter.phone && !submitter.name) {
    throw new AppError('VALIDATION', `email or phone or name is required in \`${path}\`.`);
  }
  checkEmailAndPhone(submitter, path);
  submitter.fields?.forEach((field, i) => {
    if (!field.name && !field.uuid)
      throw new AppError('VALIDATION', `name or uuid is required in \`${path}.fields[${i}]\`.`);
  });
}

/**
 * The formats of a submitter's email and phone, when given (§7.1).
 * @throws AppError VALIDATION with DocuSeal's message
 */
export function checkEmailAndPhone(submitter: Pick<SubmitterInput, 'email' | 'phone'>, path: string): void {
  if (submitter.email && !isValidEmailList(submitter.email))
    throw new AppError('VALIDATION', `email is invalid in \`${path}\`.`);
  if (submitter.phone && !PHONE.test(submitter.phone.replace(/[\s()-]/g, ''))) {
    throw new AppError('VALIDATION', `phone should start with +<country code> and contain only digits in \`${path}\`.`);
  }
}

/**
 * Refuses `require_email_2fa` / `require_phone_2fa` set to true (false is stored, as DocuSeal's
 * Submitters.normalize_preferences stores it). DocuSeal's form then asks for a one-time code
 * (Submitters::AuthorizedForForm); Signet's form has none, so such a party could either never open
 * its form or open it unverified: refused instead (docs/compatibility.md, PUT /submitters and POST /submissions).
 * @param path where the flags are, for messages ("submitters[0]"), or none (PUT /submitters' top level)
 * @throws AppError VALIDATION "require_email_2fa is not supported: the signing form has no one-time codes"
 */
export function refuseTwoFactor(
  input: { require_email_2fa?: boolean | undefined; require_phone_2fa?: boolean | undefined },
  path?: string,
): void {
  for (const key of ['require_email_2fa', 'require_phone_2fa'] as const)
    if (input[key] === true)
      throw new AppError(
        'VALIDATION',
        `${key} is not supported: the signing form has no one-time codes${path ? ` in \`${path}\`.` : ''}`,
      );
}

/** "role must be unique in `submitters`." — only non-blank roles count (§7.1). */
export function checkUniqueRoles(submitters: SubmitterInput[], path: string): void {
  const roles = submitters.map((s) => s.role?.trim().toLowerCase()).filter((r): r is string => Boolean(r));
  if (new Set(roles).size !== roles.length) throw new AppError('VALIDATION', `role must be unique in \`${path}\`.`);
}
