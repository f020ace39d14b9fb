/**
 * What the audit log shows of each party's answers: every field with a value, in template order,
 * as DocuSeal's audit log lists them (lib/submissions/generate_audit_trail.rb in
 * docusealco/docuseal, the submitter section). Pure: the caller loads the files.
 */
import { hiddenByOwnValues } from '../templates/field-conditions.ts';
import type { Field } from '../templates/fields.ts';
import type { ImageFile } from './embed-image.ts';
import { type FormatOptions, formatFieldValue, maskText } from './format-values.ts';

/** One field of a party as the audit log prints it. */
export interface AuditLogValue {
  /**
   * The field's title, else its name, else DocuSeal's "<Type> Field N" (N counts that type's
   * fields over the whole template, 1-based). Signature and initials fields of one party that hold
   * the same value are one entry named "A, B" (DocuSeal groups them so an image is shown once).
   */
  name: string;
  /** The field type (`text`, `signature`, …). */
  type: string;
  /**
   * The value as text: dates in the field's format, numbers in its number format, lists joined
   * with ", ", the field's mask applied, a checkbox as "True"; file fields list their file names.
   * Line breaks are kept. Absent for an image.
   */
  text?: string;
  /** A signature, initials, image or stamp file: the uuid it is stored under (one embedding per uuid) and its bytes. */
  image?: { uuid: string; file: ImageFile };
  /**
   * A signature or initials typed rather than drawn: the text its image was rendered from
   * (the stored file's `metadata.typed_text`, src/documents/typed-signature.ts). Set with `image`.
   */
  typed?: string;
}

/** A stored file a value refers to (by uuid): its name, and its bytes for image values. */
export interface AuditLogFile {
  filename: string;
  contentType: string;
  /** Loaded for signature, initials, image and stamp values only. */
  bytes?: Uint8Array;
  /** A typed signature's text (`metadata.typed_text` of its image). */
  typedText?: string;
}

/** Field types whose value is an image file (a typed signature's too): DocuSeal's image branch. */
export const AUDIT_LOG_IMAGE_TYPES: ReadonlySet<string> = new Set(['signature', 'initials', 'image', 'stamp', 'kba']);
/** Field types whose value is a list of file uuids, shown by file name. */
export const AUDIT_LOG_FILE_TYPES: ReadonlySet<string> = new Set(['file', 'payment']);
/** Types DocuSeal leaves out of the audit log (they hold no answer). */
const SKIPPED_TYPES = new Set(['heading', 'strikethrough']);

const TYPE_NAMES: Record<string, string> = {
  signature: 'Signature',
  initials: 'Initials',
  image: 'Image',
  stamp: 'Stamp',
  file: 'File',
};

/**
 * The values of one party (the submitter of role `roleUuid`) for the audit log, following
 * DocuSeal's generate_audit_trail.rb: fields of that role in template order; headings,
 * strikethroughs and empty values (null, '', false, [], blanks only) left out; signature and
 * initials fields holding the same value shown once under their joined names; fields whose
 * conditions on this party's values are not met left out (completion drops their values already).
 * @param fields the submission's fields (all roles: the "Field N" numbering counts them all)
 * @param values the party's values by field uuid (reference/docuseal-behaviour.md §11)
 * @param files stored files by uuid; an image value whose file is missing prints its uuid as text
 * @param options.timeZone IANA zone for date-times and `{{date}}`; options.now the party's completion time;
 *   options.language the party's language (dates and numbers as its documents show them: formatFieldValue)
 */
export function listAuditLogValues(
  fields: readonly Field[],
  roleUuid: string,
  values: Record<string, unknown>,
  files: ReadonlyMap<string, AuditLogFile>,
  options: FormatOptions = {},
): AuditLogValue[] {
  const counters = new Map<string, number>();
  const count = (type: string) => {
    const n = (counters.get(type) ?? 0) + 1;
    counters.set(type, n);
    return n;
  };
  const fallbackName = (field: Field, n: number) => `${TYPE_NAMES[field.type] ?? capitalize(field.type)} Field ${n}`;

  // Signatures and initials of this party that share a value: one entry, named after all of them.
  const groupedNames = new Map<string, string>();
  const skipped = new Set<string>();
  for (const field of fields) {
    if (field.type !== 'signature' && field.type !== 'initials') continue;
    const n = count(field.type);
    if (field.submitter_uuid !== roleUuid) continue;
    const value = values[field.uuid];
    if (typeof value !== 'string' || value === '') continue;
    const name = field.title || field.name || fallbackName(field, n);
    const group = groupedNames.get(value);
    if (group === undefined) groupedNames.set(value, name);
    else {
      groupedNames.set(value, `${group}, ${name}`);
      skipped.add(field.uuid);
    }
  }

  counters.clear();
  const list: AuditLogValue[] = [];
  // Fields hidden by their conditions are not listed (src/templates/field-conditions.ts hiddenByOwnValues).
  const hidden = hiddenByOwnValues(
    fields.filter((f) => f.submitter_uuid === roleUuid),
    values,
  );
  for (const field of fields) {
    const n = count(field.type);
    if (field.submitter_uuid !== roleUuid || SKIPPED_TYPES.has(field.type) || skipped.has(field.uuid)) continue;
    if (hidden.has(field.uuid)) continue;
    const value = values[field.uuid];
    if (isBlank(value)) continue;
    const grouped =
      typeof value === 'string' && (field.type === 'signature' || field.type === 'initials')
        ? groupedNames.get(value)
        : undefined;
    const name = grouped || field.title || field.name || fallbackName(field, n);
    const entry = { name, type: field.type };

    if (AUDIT_LOG_IMAGE_TYPES.has(field.type) && typeof value === 'string') {
      const file = files.get(value);
      if (file?.bytes) {
        list.push({
          ...entry,
          image: { uuid: value, file: { bytes: file.bytes, contentType: file.contentType } },
          ...(file.typedText ? { typed: file.typedText } : {}),
        });
        continue;
      }
      list.push({ ...entry, text: file?.filename ?? value });
      continue;
    }
    if (AUDIT_LOG_FILE_TYPES.has(field.type)) {
      const uuids = (Array.isArray(value) ? value : [value]).filter(
        (v): v is string => typeof v === 'string' && v !== '',
      );
      list.push({ ...entry, text: uuids.map((uuid) => files.get(uuid)?.filename ?? uuid).join('\n') });
      continue;
    }
    list.push({ ...entry, text: displayText(field, value, options) || 'n/a' });
  }
  return list;
}

/** DocuSeal's `Array.wrap(value).compact_blank.blank?`: nothing, or only blanks and `false`. */
function isBlank(value: unknown): boolean {
  const items = Array.isArray(value) ? value : [value];
  return items.every(
    (item) => item === null || item === undefined || item === false || (typeof item === 'string' && item.trim() === ''),
  );
}

/** A text value as the documents show it (src/signing/draw-values.ts displayText, plus DocuSeal's checkbox "True"). */
function displayText(field: Field, value: unknown, options: FormatOptions): string {
  let text: string;
  const formatted = formatFieldValue(field, value, options);
  if (field.type === 'checkbox') text = value === true || value === 'true' ? 'True' : capitalize(String(value));
  else if (formatted !== undefined) text = formatted;
  else if (Array.isArray(value))
    text = value
      .filter((item) => item !== null && item !== undefined && item !== '')
      .map(String)
      .join(', ');
  else if (typeof value === 'object') text = JSON.stringify(value);
  else text = String(value);
  return maskText(text, field.preferences?.mask);
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
