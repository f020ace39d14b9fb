/**
 * The submitter entries of a create request, validated with DocuSeal's rules and messages
 * (reference/docuseal-behaviour.md §7.1): "email or phone or name is required in `submitters[0]`.",
 * "email is invalid in `submitters[0]`.", "phone should start with +<country code> and contain only
 * digits in `submitters[0]`.", "role must be unique in `submitters`.".
 */
import { z } from 'zod';
import { AppError } from '../errors.ts';

export const FieldConfig = z.object({
  name: z.string().optional(),
  uuid: z.string().optional(),
  default_value: z.unknown().optional(),
  value: z.unknown().optional(),
  readonly: z.boolean().optional(),
  required: z.boolean().optional(),
  title: z.string().optional(),
  description: z.string().optional(),
  validation_pattern: z.string().optional(),
  invalid_message: z.string().optional(),
  validation: z.record(z.string(), z.unknown()).optional(),
  preferences: z.record(z.string(), z.unknown()).optional(),
});
export type FieldConfig = z.infer<typeof FieldConfig>;

export const MessageInput = z.object({ subject: z.string().optional(), body: z.string().optional() });

export const SubmitterInput = z.object({
  uuid: z.string().optional(),
  role: z.string().optional(),
  email: z.string().optional(),
  name: z.string().optional(),
  phone: z.string().optional(),
  values: z.record(z.string(), z.unknown()).optional(),
  external_id: z.string().optional(),
  completed: z.boolean().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  send_email: z.boolean().optional(),
  send_sms: z.boolean().optional(),
  completed_redirect_url: z.string().optional(),
  reply_to: z.string().optional(),
  message: MessageInput.optional(),
  fields: z.array(FieldConfig).optional(),
  readonly_fields: z.array(z.string()).optional(),
  order: z.number().int().optional(),
  index: z.number().int().optional(),
});
export type SubmitterInput = z.infer<typeof SubmitterInput>;

/**
 * DocuSeal's email check: split on `,` `;` `/` and validate each address (values with `<` skip
 * the check, as DocuSeal).
 */
export function isValidEmailList(value: string): boolean {
  if (value.includes('<')) return true;
  const parts = value.split(/[,;/]/).map((p) => p.trim()).filter(Boolean);
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
    if (!field.name && !field.uuid) throw new AppError('VALIDATION', `name or uuid is required in \`${path}.fields[${i}]\`.`);
  });
}

/**
 * The formats of a submitter's email and phone, when given (§7.1).
 * @throws AppError VALIDATION with DocuSeal's message
 */
export function checkEmailAndPhone(submitter: Pick<SubmitterInput, 'email' | 'phone'>, path: string): void {
  if (submitter.email && !isValidEmailList(submitter.email)) throw new AppError('VALIDATION', `email is invalid in \`${path}\`.`);
  if (submitter.phone && !PHONE.test(submitter.phone.replace(/[\s()-]/g, ''))) {
    throw new AppError('VALIDATION', `phone should start with +<country code> and contain only digits in \`${path}\`.`);
  }
}

/** "role must be unique in `submitters`." — only non-blank roles count (§7.1). */
export function checkUniqueRoles(submitters: SubmitterInput[], path: string): void {
  const roles = submitters.map((s) => s.role?.trim().toLowerCase()).filter((r): r is string => Boolean(r));
  if (new Set(roles).size !== roles.length) throw new AppError('VALIDATION', `role must be unique in \`${path}\`.`);
}
