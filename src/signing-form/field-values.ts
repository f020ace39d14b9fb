/**
 * The checks on values a signer sends from the form (issue "Signing"; docs/signing-form.md).
 *
 * While saving (the signer is still typing) only what is always wrong is refused: a key that is
 * no field ("Missing field"), another party's field ("Invalid field"), a readonly one
 * ("Read-only field") — DocuSeal's three messages (reference/docuseal-behaviour.md §11) — a JSON
 * value of the wrong kind for the field's type, and an attachment uuid that is not this signer's.
 * On completion every own field is checked: required ones must have a value, text values must
 * match `validation.pattern`, and each value must make sense for its type (§11 "Stored value
 * formats"). DocuSeal checks only `required` on the server; the rest is our addition
 * (docs/compatibility.md "Signing form"). Sizes (src/limits.ts, docs/security.md "Input limits"):
 * a text value of at most MAX_LENGTH.text characters, a multiple value of at most
 * MAX_ITEMS.options options, and a party's values at most MAX_JSON.values together.
 */
import { isValidPhoneNumber, parsePhoneNumberFromString } from 'libphonenumber-js';
import type { Db } from '../db/client.ts';
import { AppError } from '../errors.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { checkValuesSize, valueSizeMessage } from '../limits.ts';
import type { Field } from '../templates/fields.ts';
import { hiddenOwnFields } from '../templates/field-conditions.ts';
import { compileFieldPattern } from '../templates/field-pattern.ts';
import { parseFieldValue, UnparsableValue } from '../signing/format-values.ts';

/** A refusal about one field: the GraphQL error carries `extensions.fieldUuid` (the page marks the field). */
export class SigningFieldError extends AppError {
  readonly fieldUuid: string;

  constructor(fieldUuid: string, message: string) {
    super('VALIDATION', message, { details: { fieldUuid } });
    this.fieldUuid = fieldUuid;
  }

  override get extensions(): Record<string, unknown> {
    return { ...super.extensions, fieldUuid: this.fieldUuid };
  }
}

/** Types whose value is one attachment uuid (a stored file). */
export const SINGLE_ATTACHMENT_TYPES: ReadonlySet<string> = new Set(['signature', 'initials', 'image', 'stamp']);
/**
 * Types the completion pipeline draws as an image: their attachments must be PNG or JPEG
 * (src/signing/draw-values.ts).
 */
export const DRAWN_IMAGE_TYPES: ReadonlySet<string> = new Set(['signature', 'initials', 'image', 'stamp']);
/** Types that are readonly whatever the template says (reference §11). */
const ALWAYS_READONLY_TYPES: ReadonlySet<string> = new Set(['stamp', 'heading', 'strikethrough']);
/** Types whose value is text that `validation.pattern` applies to. */
const PATTERN_TYPES: ReadonlySet<string> = new Set(['text', 'cells', 'number', 'phone', 'date']);
/** Stored file uuids as gen_random_uuid() makes them (checked before any query: the column is UUID). */
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a signer may set this field: its own and not readonly. */
export function isReadonlyField(field: Field): boolean {
  return field.readonly === true || ALWAYS_READONLY_TYPES.has(field.type);
}

/** A value that counts as filled: not null/undefined, not blank text, not an empty list, not an unchecked checkbox. */
export function hasValue(field: Field, value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === 'string') return value.trim() !== '';
  if (Array.isArray(value)) return value.length > 0;
  if (field.type === 'checkbox') return value === true;
  return true;
}

const displayName = (field: Field) => field.title || field.name || field.type;

/**
 * Checks the keys and the kind of each value a signer sends, and returns them ready to merge:
 * null clears a value, a `file` field's single uuid becomes a list.
 * @param values what the request sent (must be a JSON object keyed by field uuid)
 * @throws SigningFieldError VALIDATION "Missing field" / "Invalid field" / "Read-only field", or
 *   "<name> ..." for a value of the wrong kind; AppError VALIDATION when `values` is not an object
 */
export function checkSentValues(fields: Field[], roleUuid: string, values: unknown): Record<string, unknown> {
  if (values === null || typeof values !== 'object' || Array.isArray(values)) {
    throw new AppError('VALIDATION', 'values must be an object keyed by field uuid');
  }
  const out: Record<string, unknown> = {};
  for (const [uuid, raw] of Object.entries(values as Record<string, unknown>)) {
    const field = fields.find((f) => f.uuid === uuid);
    if (!field) throw new SigningFieldError(uuid, 'Missing field');
    if (field.submitter_uuid !== roleUuid) throw new SigningFieldError(uuid, 'Invalid field');
    if (isReadonlyField(field)) throw new SigningFieldError(uuid, 'Read-only field');
    out[uuid] = checkKind(field, raw);
  }
  return out;
}

function checkKind(field: Field, raw: unknown): unknown {
  if (raw === null) return null;
  const name = displayName(field);
  const fail = (what: string): never => {
    throw new SigningFieldError(field.uuid, `${name} ${what}`);
  };
  checkValueSize(field, raw);
  switch (field.type) {
    case 'payment':
      // Nothing can be paid here (docs/compatibility.md "Signing form").
      return fail('cannot be paid: payments are not available on this server');
    case 'checkbox':
      return typeof raw === 'boolean' ? raw : fail('must be true or false');
    case 'number':
      return (typeof raw === 'number' && Number.isFinite(raw)) || typeof raw === 'string'
        ? raw
        : fail('must be a number');
    case 'multiple':
      return Array.isArray(raw) && raw.every((v) => typeof v === 'string') ? raw : fail('must be a list of options');
    case 'file': {
      const list = typeof raw === 'string' ? [raw] : raw;
      if (!Array.isArray(list) || !list.every((v) => typeof v === 'string' && UUID_PATTERN.test(v))) {
        return fail('must be a list of attachment uuids (POST /api/attachments)');
      }
      return list.map((v: string) => v.toLowerCase());
    }
    default:
      if (SINGLE_ATTACHMENT_TYPES.has(field.type)) {
        return typeof raw === 'string' && UUID_PATTERN.test(raw)
          ? raw.toLowerCase()
          : fail('must be an attachment uuid (POST /api/attachments)');
      }
      return typeof raw === 'string' ? raw : fail('must be text');
  }
}

/**
 * A signer's value's size (valueSizeMessage), checked before anything else looks at the value.
 * @throws SigningFieldError VALIDATION "<name> is too long (maximum is N characters)." /
 *   "<name> has too many entries (maximum is N)."
 */
export function checkValueSize(field: Field, value: unknown): void {
  const message = valueSizeMessage(value, displayName(field));
  if (message) throw new SigningFieldError(field.uuid, message);
}

/** The attachment uuids values name, per field uuid. */
function attachmentUuids(fields: Field[], values: Record<string, unknown>): { fieldUuid: string; uuid: string }[] {
  const out: { fieldUuid: string; uuid: string }[] = [];
  for (const [fieldUuid, value] of Object.entries(values)) {
    const field = fields.find((f) => f.uuid === fieldUuid);
    if (!field || !(SINGLE_ATTACHMENT_TYPES.has(field.type) || field.type === 'file')) continue;
    for (const uuid of Array.isArray(value) ? value : [value])
      if (typeof uuid === 'string' && UUID_PATTERN.test(uuid)) out.push({ fieldUuid, uuid });
  }
  return out;
}

/**
 * Attachments a signer names must be files uploaded through its own form (POST /api/attachments
 * records the row's `submitter_id`), or ones its values already held (prefilled through the API):
 * a slug must not reach another signer's or another account's files. Signatures and initials must
 * have been uploaded as such (so the blank check ran); images the completion draws must be PNG or
 * JPEG.
 * @param sent the checked values of this request; `saved` the signer's values before it
 * @throws SigningFieldError VALIDATION "Unknown attachment <uuid>" / "<name> must be uploaded as a
 *   signature" / "<name> must be a PNG or JPEG image"
 */
export async function checkAttachments(
  db: Db | Prisma.TransactionClient,
  signer: { id: number; accountId: number },
  fields: Field[],
  sent: Record<string, unknown>,
  saved: Record<string, unknown>,
): Promise<void> {
  const named = attachmentUuids(fields, sent);
  if (named.length === 0) return;
  const held = new Set(attachmentUuids(fields, saved).map((a) => a.uuid));
  const files = await db.storedFile.findMany({
    where: { uuid: { in: [...new Set(named.map((a) => a.uuid))] } },
    select: { uuid: true, accountId: true, submitterId: true, contentType: true, metadata: true },
  });
  for (const { fieldUuid, uuid } of named) {
    const file = files.find((f) => f.uuid === uuid);
    const metadata = (file?.metadata ?? {}) as { type?: unknown };
    if (!file || file.accountId !== signer.accountId || (file.submitterId !== signer.id && !held.has(uuid))) {
      throw new SigningFieldError(fieldUuid, `Unknown attachment ${uuid}`);
    }
    const field = fields.find((f) => f.uuid === fieldUuid)!;
    // A signature must have gone through the blank check of a signature upload.
    if (
      (field.type === 'signature' || field.type === 'initials') &&
      !held.has(uuid) &&
      metadata.type !== 'signature' &&
      metadata.type !== 'initials'
    ) {
      throw new SigningFieldError(
        fieldUuid,
        `${displayName(field)} must be uploaded as a signature (type=${field.type})`,
      );
    }
    if (DRAWN_IMAGE_TYPES.has(field.type) && !/^image\/(png|jpeg)$/.test(file.contentType)) {
      throw new SigningFieldError(fieldUuid, `${displayName(field)} must be a PNG or JPEG image`);
    }
  }
}

/**
 * The values a signer completes with: its saved values, plus the default of each own field left
 * empty (the form shows defaults as values, so they are what the signer agreed to; `{{date}}`
 * becomes the completion date when drawn), with numbers as numbers and phones in E.164; then,
 * as DocuSeal's completion, without the values of fields whose conditions are not met
 * (dropHiddenValues, src/templates/field-conditions.ts: such a field is neither required nor kept).
 * Every other own field is checked: required ones filled, text matching `validation.pattern` (the
 * whole value, as the HTML `pattern` attribute DocuSeal's form uses, run on RE2: field-pattern.ts),
 * values sensible for the type and within their size (checkValueSize; src/limits.ts checkValuesSize).
 * @param otherValues the other parties' values merged (otherPartiesValues), which conditions may name
 * @throws SigningFieldError VALIDATION with the field's `validation.message`, "<name> is required"
 *   or "<name> is invalid" (and a clearer message where the type says more), "<name> is too long
 *   (maximum is N characters)."; AppError VALIDATION "values is too large …"
 */
export function completionValues(
  fields: Field[],
  roleUuid: string,
  saved: Record<string, unknown>,
  otherValues: Record<string, unknown> = {},
): Record<string, unknown> {
  checkValuesSize(saved);
  const withDefaults = { ...saved };
  const own = fields.filter((f) => f.submitter_uuid === roleUuid);
  for (const field of own) {
    if (
      !hasValue(field, withDefaults[field.uuid]) &&
      field.default_value !== undefined &&
      field.default_value !== null &&
      field.default_value !== ''
    ) {
      withDefaults[field.uuid] = field.default_value;
    }
  }
  const hidden = hiddenOwnFields(fields, roleUuid, withDefaults, otherValues);
  const values = { ...withDefaults };
  for (const uuid of hidden) delete values[uuid];
  for (const field of own) {
    if (hidden.has(field.uuid)) continue;
    const value = values[field.uuid];
    const name = displayName(field);
    if (!hasValue(field, value)) {
      if (field.required && field.type === 'payment') {
        throw new SigningFieldError(
          field.uuid,
          `${name} requires a payment, and payments are not available on this server: the form cannot be completed`,
        );
      }
      // A readonly field (stamp, a prefilled readonly value) is not the signer's to fill: DocuSeal
      // skips it too (reference §11: stamp, heading and strikethrough are always readonly).
      if (field.required && !isReadonlyField(field)) throw new SigningFieldError(field.uuid, `${name} is required`);
      continue;
    }
    // Readonly values come from the template or the API, not from the signer: not the signer's to fix.
    if (isReadonlyField(field)) continue;
    values[field.uuid] = checkCompletedValue(field, value);
  }
  return values;
}

function checkCompletedValue(field: Field, value: unknown): unknown {
  checkValueSize(field, value);
  const name = displayName(field);
  const invalid = (detail: string): never => {
    throw new SigningFieldError(field.uuid, `${name} is invalid: ${detail}`);
  };
  let checked = value;
  switch (field.type) {
    case 'number':
    case 'date':
      // Read with the field's format and stored as DocuSeal stores it (src/signing/format-values.ts).
      try {
        checked = parseFieldValue(field, value);
      } catch (error) {
        if (!(error instanceof UnparsableValue)) throw error;
        invalid(field.type === 'number' ? `not a number (${error.message})` : `not a date (${error.message})`);
      }
      break;
    case 'phone': {
      const text = String(value).replace(/[\s().-]/g, '');
      if (!text.startsWith('+') || !isValidPhoneNumber(text))
        invalid('not a phone number in international format (+<country code><number>)');
      checked = parsePhoneNumberFromString(text)!.number;
      break;
    }
    case 'radio':
    case 'select':
      if (field.options?.length && !field.options.some((o) => o.value === value))
        invalid(`"${String(value)}" is not one of its options`);
      break;
    case 'multiple':
      if (field.options?.length) {
        const unknown = (value as string[]).find((v) => !field.options!.some((o) => o.value === v));
        if (unknown !== undefined) invalid(`"${unknown}" is not one of its options`);
      }
      break;
    default:
      break;
  }
  const pattern = typeof field.validation?.pattern === 'string' ? field.validation.pattern : '';
  if (pattern && PATTERN_TYPES.has(field.type) && typeof value !== 'object') {
    const regexp = compileFieldPattern(pattern);
    if (regexp && !regexp.test(String(value))) {
      const custom =
        typeof field.validation?.message === 'string' && field.validation.message
          ? field.validation.message
          : undefined;
      throw new SigningFieldError(field.uuid, custom ?? `${name} is invalid`);
    }
  }
  return checked;
}
