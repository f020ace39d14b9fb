/**
 * Text tags: `{{Name;role=Buyer;type=date;required=false}}` written in a PDF (or a DOCX converted
 * to one) become template fields at the place the tag is printed, and the tags are removed from the
 * stored document (issue 3 "Text tags"; reference/docuseal-behaviour.md §12.3).
 *
 * Tags are found in mupdf's structured text, which gives every character's quad on the page as
 * displayed; each tag is then removed with a redaction annotation over a thin band through the
 * middle of its characters, applied with images and line art left alone, so that what sits under
 * or around the tag (table borders, shading, neighbouring words) stays as it was. The scan runs in
 * the parse pool, as part of an upload's task (uploaded-pdf.ts).
 */
import type { PDFPage, Quad, Rect } from 'mupdf';
import { AppError } from '../errors.ts';
import { TAG_FIELD_TYPES } from '../field-types.ts';
import { invalidPdf, loadMupdf, openPdf, readPageGeometry, savePdf, type PdfPageInfo } from './pdf.ts';

/** Field types a tag may name: the template field types plus `datenow` (src/field-types.ts). */
export const TEXT_TAG_TYPES = TAG_FIELD_TYPES;

/** The type a tag produces (`datenow` has become `date`). */
export type TextTagFieldType = Exclude<(typeof TEXT_TAG_TYPES)[number], 'datenow'>;

/** Types whose `options` attribute lists the choices (§12.3). */
const TYPES_WITH_OPTIONS = new Set<string>(['select', 'radio', 'multiple']);

/**
 * Attributes a tag may carry. The §12.3 set (type, role, default, required, readonly, options,
 * condition, width, height, font, font_size, color, align, format) plus the rendering preferences
 * DocuSeal stores for fields (§11): font_type, background, valign, mask, price, currency.
 */
const ATTRIBUTES = new Set([
  'type',
  'role',
  'default',
  'required',
  'readonly',
  'options',
  'condition',
  'width',
  'height',
  'font',
  'font_size',
  'font_type',
  'color',
  'background',
  'align',
  'valign',
  'format',
  'mask',
  'price',
  'currency',
]);

const FONTS: Record<string, string> = { times: 'Times', helvetica: 'Helvetica', courier: 'Courier' };
const CHOICES: Record<string, readonly string[]> = {
  font_type: ['bold', 'italic', 'bold_italic'],
  align: ['left', 'center', 'right'],
  valign: ['top', 'center', 'bottom'],
};

export const DEFAULT_ROLE = 'First Party';

/** A tag's meaning, before it has a place on a page. */
export interface ParsedTag {
  /** The first segment without `=`; '' when the tag has none (`{{type=checkbox}}`). */
  name: string;
  type: TextTagFieldType;
  role: string;
  required: boolean;
  readonly: boolean;
  defaultValue?: string;
  options?: string[];
  /** Area size in points when the tag gives one; otherwise the tag's own text box is used. */
  width?: number;
  height?: number;
  /** `condition=Field:value` (or `Field` alone: not empty), by field name; the template resolves it to a field uuid. */
  condition?: { field: string; value?: string };
  /**
   * DocuSeal field preferences (§11): font, font_size, font_type, color, background, align, valign,
   * format, mask, price, currency.
   */
  preferences: Record<string, unknown>;
}

/**
 * Parses one text tag (`{{...}}` or its inside) per reference/docuseal-behaviour.md §12.3:
 * segments split on `;`, the first without `=` is the name, the rest `key=value` (keys
 * case-insensitive). Defaults: type text, role "First Party", required true, readonly false.
 * `datenow` becomes a readonly date with default "{{date}}" (§11); `stamp` is always readonly.
 * `width`, `height`, `font_size` and `price` are numbers (points for sizes).
 *
 * Throws `AppError('VALIDATION')` whose message starts with `label` and quotes the tag, for an
 * empty tag, an unknown attribute or type, an attribute given twice or without a value, a second
 * name, a boolean other than true/false, a number that is not positive, `options` on a type that
 * takes none, or an unknown font/alignment.
 */
export function parseTextTag(raw: string, label: string): ParsedTag {
  const inner = raw.trim().replace(/^\{\{/, '').replace(/\}\}$/, '');
  const tagText = `{{${inner}}}`;
  const fail = (problem: string): never => {
    throw new AppError('VALIDATION', `${label}: text tag ${quote(tagText)}: ${problem}`);
  };
  const segments = inner
    .split(';')
    .map((segment) => segment.trim())
    .filter((segment) => segment !== '');
  if (segments.length === 0) fail('the tag is empty; write at least a field name, e.g. {{Name}}');

  let name: string | undefined;
  const attributes = new Map<string, string>();
  for (const segment of segments) {
    const eq = segment.indexOf('=');
    if (eq === -1) {
      if (name !== undefined)
        fail(`${quote(segment)} has no value (write key=value); the field name is already ${quote(name)}`);
      name = segment;
      continue;
    }
    const key = segment.slice(0, eq).trim().toLowerCase();
    const value = segment.slice(eq + 1).trim();
    if (!ATTRIBUTES.has(key)) fail(`unknown attribute ${quote(key)}; known attributes: ${[...ATTRIBUTES].join(', ')}`);
    if (attributes.has(key)) fail(`attribute ${quote(key)} is given twice`);
    if (value === '' && key !== 'default') fail(`attribute ${quote(key)} has no value`);
    attributes.set(key, value);
  }

  const typeValue = (attributes.get('type') ?? 'text').toLowerCase();
  if (!(TEXT_TAG_TYPES as readonly string[]).includes(typeValue)) {
    fail(`unknown type ${quote(typeValue)}; allowed types: ${TEXT_TAG_TYPES.join(', ')}`);
  }
  const isDateNow = typeValue === 'datenow';
  const type = (isDateNow ? 'date' : typeValue) as TextTagFieldType;

  const readBoolean = (key: string, fallback: boolean): boolean => {
    const value = attributes.get(key);
    if (value === undefined) return fallback;
    if (/^true$/i.test(value)) return true;
    if (/^false$/i.test(value)) return false;
    return fail(`${key} must be true or false, not ${quote(value)}`);
  };
  const readNumber = (key: string, { positive }: { positive: boolean }): number | undefined => {
    const value = attributes.get(key);
    if (value === undefined) return undefined;
    const number = /^[+]?(\d+(\.\d*)?|\.\d+)$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isFinite(number) || (positive ? number <= 0 : number < 0)) {
      return fail(
        `${key} must be a ${positive ? 'positive' : 'non-negative'} number` +
          `${key === 'width' || key === 'height' ? ' of points' : ''}, not ${quote(value)}`,
      );
    }
    return number;
  };

  const tag: ParsedTag = {
    name: name ?? '',
    type,
    role: attributes.get('role') ?? DEFAULT_ROLE,
    required: readBoolean('required', true),
    readonly: readBoolean('readonly', false) || isDateNow || type === 'stamp',
    preferences: {},
  };

  const defaultValue = attributes.get('default');
  if (defaultValue !== undefined) tag.defaultValue = defaultValue;
  else if (isDateNow) tag.defaultValue = '{{date}}';

  const options = attributes.get('options');
  if (options !== undefined) {
    if (!TYPES_WITH_OPTIONS.has(type))
      fail(`options are only for ${[...TYPES_WITH_OPTIONS].join(', ')} fields, not ${typeValue}`);
    const list = options
      .split(',')
      .map((option) => option.trim())
      .filter((option) => option !== '');
    if (list.length === 0) fail('options lists no option');
    tag.options = list;
  }

  const width = readNumber('width', { positive: true });
  const height = readNumber('height', { positive: true });
  if (width !== undefined) tag.width = width;
  if (height !== undefined) tag.height = height;

  const condition = attributes.get('condition');
  if (condition !== undefined) {
    const colon = condition.indexOf(':');
    const field = (colon === -1 ? condition : condition.slice(0, colon)).trim();
    if (field === '') fail('condition must name a field: condition=Field or condition=Field:value');
    tag.condition = colon === -1 ? { field } : { field, value: condition.slice(colon + 1).trim() };
  }

  const font = attributes.get('font');
  if (font !== undefined) {
    const known = FONTS[font.toLowerCase()];
    if (known === undefined) fail(`font must be one of Times, Helvetica, Courier, not ${quote(font)}`);
    tag.preferences.font = known;
  }
  const fontSize = readNumber('font_size', { positive: true });
  if (fontSize !== undefined) tag.preferences.font_size = fontSize;
  for (const key of ['font_type', 'align', 'valign'] as const) {
    const value = attributes.get(key)?.toLowerCase();
    if (value === undefined) continue;
    if (!CHOICES[key].includes(value)) fail(`${key} must be one of ${CHOICES[key].join(', ')}, not ${quote(value)}`);
    tag.preferences[key] = value;
  }
  for (const key of ['color', 'background', 'format', 'currency'] as const) {
    const value = attributes.get(key);
    if (value !== undefined) tag.preferences[key] = value;
  }
  const price = readNumber('price', { positive: false });
  if (price !== undefined) tag.preferences.price = price;
  const mask = attributes.get('mask');
  if (mask !== undefined) {
    // §11: true, or an integer N (N > 0 keeps the first N characters, N < 0 the last |N|).
    if (/^true$/i.test(mask)) tag.preferences.mask = true;
    else if (/^-?\d+$/.test(mask)) tag.preferences.mask = Number(mask);
    else fail(`mask must be true or an integer, not ${quote(mask)}`);
  }
  return tag;
}

/** An area in fractions of the displayed page, y from the top, page 0-based (§12.1). */
export interface TextTagArea {
  page: number;
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface TextTagField {
  name: string;
  type: TextTagFieldType;
  role: string;
  required: boolean;
  readonly: boolean;
  defaultValue?: string;
  options?: string[];
  condition?: { field: string; value?: string };
  preferences: Record<string, unknown>;
  areas: TextTagArea[];
}

export interface TextTagsResult {
  /** The document with every tag removed; the input bytes themselves when it has no tags. */
  pdf: Uint8Array;
  /** Role names in order of first appearance; empty when there are no tags. */
  roles: string[];
  fields: TextTagField[];
  /** Number of tags found (a field that repeats a name has several). */
  tagCount: number;
}

/**
 * Finds the text tags of a PDF, turns them into fields and removes them from the document.
 *
 * - Each tag's area is the box of its characters on the page as displayed (font ascent to
 *   descent, first to last character), or, when the tag gives `width`/`height` (points), a box of
 *   that size from the tag box's top-left corner; clipped to the page. Areas are fractions of the
 *   displayed page, y from the top, page 0-based.
 * - A tag may be split into several text runs (DOCX output: `{{Na` + `me}}`) and may wrap onto
 *   following lines of the same text block (a narrow table cell): its area is then the union of
 *   its pieces. Lines are joined without a separator, so a space lost at a wrap is not restored.
 *   Tags split across separate text blocks are not recognised.
 * - Tags with the same non-empty name and role become one field with one area per tag (DocuSeal
 *   behaviour); the first tag's attributes win, and a different type is an error. Unnamed tags are
 *   each their own field. Roles are listed in order of first appearance (default "First Party").
 * - The tags are removed from the content (not visible, not in the text layer); images and line
 *   art under them are kept. The returned PDF is rewritten by mupdf (unreferenced objects dropped,
 *   encryption without a user password removed). Redaction annotations already in the document are
 *   applied too on pages that carry tags. With `options.removeTags: false` (DocuSeal's `remove_tags: false`,
 *   for tags printed invisibly) the tags stay and the input bytes are returned.
 *
 * Throws `AppError('VALIDATION')` naming `options.label` for an unreadable, encrypted or empty
 * PDF (as `inspectPdf`) or a page mupdf cannot load (`<label> is not a valid PDF: …`), and
 * naming the tag and page for a tag `parseTextTag` refuses or a repeated
 * name with another type.
 */
export async function extractTextTags(
  bytes: Uint8Array,
  options: { label: string; removeTags?: boolean | undefined },
): Promise<TextTagsResult> {
  const { label } = options;
  const removeTags = options.removeTags !== false;
  const mupdf = await loadMupdf();
  const doc = openPdf(mupdf, bytes, label);
  try {
    const pageCount = doc.countPages();
    if (pageCount === 0) throw new AppError('VALIDATION', `${label} is a PDF with no pages`);

    const found: Array<{ tag: ParsedTag; area: TextTagArea; where: string }> = [];
    for (let pageIndex = 0; pageIndex < pageCount; pageIndex += 1) {
      const page = doc.loadPage(pageIndex);
      try {
        const where = `${label}, page ${pageIndex + 1}`;
        const located = locateTags(page);
        if (located.length === 0) continue;
        const geometry = readPageGeometry(page);
        const [originX, originY] = page.getBounds();
        for (const { text, box, bands } of located) {
          const tag = parseTextTag(text, where);
          found.push({ tag, area: toArea(tag, box, originX, originY, geometry, pageIndex), where });
          if (!removeTags) continue;
          for (const band of bands) {
            const annotation = page.createAnnotation('Redact');
            annotation.setRect(quadBounds(band));
            annotation.setQuadPoints([band]);
          }
        }
        if (!removeTags) continue;
        // No black boxes, images and line art untouched, only the glyphs the bands touch removed.
        page.applyRedactions(
          false,
          mupdf.PDFPage.REDACT_IMAGE_NONE,
          mupdf.PDFPage.REDACT_LINE_ART_NONE,
          mupdf.PDFPage.REDACT_TEXT_REMOVE,
        );
      } finally {
        page.destroy();
      }
    }
    if (found.length === 0) return { pdf: bytes, roles: [], fields: [], tagCount: 0 };

    const { fields, roles } = groupFields(found);
    if (!removeTags) return { pdf: bytes, roles, fields, tagCount: found.length };
    return { pdf: savePdf(doc, 'encrypt=none,garbage,compress'), roles, fields, tagCount: found.length };
  } catch (error) {
    // mupdf's own errors (a page it cannot load: "cycle in page tree") are the document's fault.
    throw invalidPdf(label, error);
  } finally {
    doc.destroy();
  }
}

interface StextChar {
  c: string;
  quad: Quad;
  line: number;
}

interface LocatedTag {
  text: string;
  /** Box of the tag's characters in mupdf page space (points, y down, page bounds origin). */
  box: Rect;
  /** One redaction quad per line the tag occupies. */
  bands: Quad[];
}

/** Tags on one page, in reading order, each with its box and redaction bands. */
function locateTags(page: PDFPage): LocatedTag[] {
  const stext = page.toStructuredText('');
  try {
    // Most pages have no tag: skip the per-character walk (the costly part) for them.
    if (!stext.asText().includes('{{')) return [];
    const tags: LocatedTag[] = [];
    let block: StextChar[] = [];
    let line = 0;
    stext.walk({
      beginTextBlock() {
        block = [];
      },
      beginLine() {
        line += 1;
      },
      onChar(c, _origin, _font, _size, quad) {
        block.push({ c, quad, line });
      },
      endTextBlock() {
        tags.push(...tagsInBlock(block));
      },
    });
    return tags;
  } finally {
    stext.destroy();
  }
}

// `[^{}]` keeps a stray `{{` from swallowing the next tag.
const TAG_PATTERN = /\{\{[^{}]*\}\}/g;

function tagsInBlock(chars: StextChar[]): LocatedTag[] {
  // mupdf gives one UTF-16 unit per character, so string indices are character indices.
  const text = chars.map((char) => char.c).join('');
  const tags: LocatedTag[] = [];
  for (const match of text.matchAll(TAG_PATTERN)) {
    const tagChars = chars.slice(match.index, match.index + match[0].length);
    const pieces: StextChar[][] = [];
    for (const char of tagChars) {
      const last = pieces.at(-1);
      if (last && last[0].line === char.line) last.push(char);
      else pieces.push([char]);
    }
    tags.push({
      text: match[0],
      box: unionRects(tagChars.map((char) => quadBounds(char.quad))),
      bands: pieces.map(redactionBand),
    });
  }
  return tags;
}

/**
 * A thin quad along the middle of a run of characters: from 30 % into the first character to 30 %
 * before the end of the last, and from 40 % to 60 % of the line's height. mupdf removes every glyph
 * whose box (advance × ascent..descent, not its ink) the redaction touches, so the band catches
 * every character of the tag — `_` and `.` included — while staying clear of the boxes of the
 * neighbouring words and of the lines above and below, which a full-height box would touch.
 */
function redactionBand(chars: StextChar[]): Quad {
  const first = chars[0].quad;
  const last = chars[chars.length - 1].quad;
  // Quad corners: upper-left (0,1), upper-right (2,3), lower-left (4,5), lower-right (6,7).
  const lerp = (ax: number, ay: number, bx: number, by: number, t: number): [number, number] => [
    ax + (bx - ax) * t,
    ay + (by - ay) * t,
  ];
  const upperStart = lerp(first[0], first[1], first[2], first[3], 0.3);
  const lowerStart = lerp(first[4], first[5], first[6], first[7], 0.3);
  const upperEnd = lerp(last[0], last[1], last[2], last[3], 0.7);
  const lowerEnd = lerp(last[4], last[5], last[6], last[7], 0.7);
  const ul = lerp(...upperStart, ...lowerStart, 0.4);
  const ll = lerp(...upperStart, ...lowerStart, 0.6);
  const ur = lerp(...upperEnd, ...lowerEnd, 0.4);
  const lr = lerp(...upperEnd, ...lowerEnd, 0.6);
  return [...ul, ...ur, ...ll, ...lr];
}

function quadBounds(quad: Quad): Rect {
  const xs = [quad[0], quad[2], quad[4], quad[6]];
  const ys = [quad[1], quad[3], quad[5], quad[7]];
  return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
}

function unionRects(rects: Rect[]): Rect {
  return [
    Math.min(...rects.map((r) => r[0])),
    Math.min(...rects.map((r) => r[1])),
    Math.max(...rects.map((r) => r[2])),
    Math.max(...rects.map((r) => r[3])),
  ];
}

/** The tag's area as fractions of the displayed page, clipped to it. */
function toArea(
  tag: ParsedTag,
  box: Rect,
  originX: number,
  originY: number,
  page: PdfPageInfo,
  pageIndex: number,
): TextTagArea {
  const clamp = (value: number, max: number) => Math.min(Math.max(value, 0), max);
  const x = clamp(box[0] - originX, page.width);
  const y = clamp(box[1] - originY, page.height);
  const w = clamp(tag.width ?? box[2] - box[0], page.width - x);
  const h = clamp(tag.height ?? box[3] - box[1], page.height - y);
  return { page: pageIndex, x: x / page.width, y: y / page.height, w: w / page.width, h: h / page.height };
}

function groupFields(found: Array<{ tag: ParsedTag; area: TextTagArea; where: string }>): {
  fields: TextTagField[];
  roles: string[];
} {
  const roles: string[] = [];
  const fields: TextTagField[] = [];
  const byKey = new Map<string, TextTagField>();
  for (const { tag, area, where } of found) {
    if (!roles.includes(tag.role)) roles.push(tag.role);
    const key = tag.name === '' ? undefined : JSON.stringify([tag.role, tag.name]);
    const existing = key === undefined ? undefined : byKey.get(key);
    if (existing) {
      if (existing.type !== tag.type) {
        throw new AppError(
          'VALIDATION',
          `${where}: text tag field ${quote(tag.name)} of role ${quote(tag.role)} is ${existing.type} in an ` +
            `earlier tag and ${tag.type} here; repeated tags of one field must have the same type`,
        );
      }
      existing.areas.push(area);
      continue;
    }
    const field: TextTagField = {
      name: tag.name,
      type: tag.type,
      role: tag.role,
      required: tag.required,
      readonly: tag.readonly,
      ...(tag.defaultValue !== undefined ? { defaultValue: tag.defaultValue } : {}),
      ...(tag.options !== undefined ? { options: tag.options } : {}),
      ...(tag.condition !== undefined ? { condition: tag.condition } : {}),
      preferences: tag.preferences,
      areas: [area],
    };
    fields.push(field);
    if (key !== undefined) byKey.set(key, field);
  }
  return { fields, roles };
}

function quote(text: string): string {
  return JSON.stringify(text.length > 120 ? `${text.slice(0, 117)}...` : text);
}
