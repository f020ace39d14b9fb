/**
 * The field-type vocabulary: which types a template field, a text tag in a PDF or DOCX, and an
 * HTML field tag may name. Kept at the bottom, beside src/limits.ts, because the layers that read
 * documents (src/documents/text-tags.ts, src/rendering/) need it as much as the template rules
 * above them (src/templates/), and a document reader must not depend on templates.
 */

/**
 * The field types of the interface spec ("Template field": 14 types), plus `number`, which
 * DocuSeal also has (docs/compatibility.md).
 */
export const FIELD_TYPES = [
  'text',
  'signature',
  'initials',
  'date',
  'image',
  'file',
  'payment',
  'stamp',
  'select',
  'checkbox',
  'multiple',
  'radio',
  'cells',
  'phone',
  'number',
] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/**
 * Types a text tag or an HTML field tag may name: FIELD_TYPES plus `datenow`, DocuSeal's builder
 * type, kept as a readonly `date` whose default is "{{date}}" (reference §11).
 */
export const TAG_FIELD_TYPES = [...FIELD_TYPES, 'datenow'] as const;
export type TagFieldType = (typeof TAG_FIELD_TYPES)[number];

/** Types whose value is chosen from `options`. */
export const OPTION_FIELD_TYPES: ReadonlySet<string> = new Set(['select', 'radio', 'multiple']);

/** Types whose value is a file: an upload's uuid (a list of them for `file`), or a URL or data given over the API. */
export const ATTACHMENT_FIELD_TYPES: ReadonlySet<string> = new Set(['signature', 'initials', 'image', 'stamp', 'file']);
