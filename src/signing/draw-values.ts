/**
 * Draws one party's values onto one document of a submission: the "draw that party's values onto
 * the documents" step of the completion pipeline (issue 5; DocuSeal's result documents,
 * reference/docuseal-behaviour.md §10.2, value formats §11).
 *
 * Everything is drawn in the page as displayed: each page's drawing is wrapped in one
 * transformation (from `displayToUserMatrix`, src/documents/pdf.ts) that maps the displayed page
 * — origin bottom-left, y up, points — onto the page's own user space, so text reads upright on
 * pages with /Rotate 90/180/270 and areas land where the signer saw them on pages whose CropBox
 * does not start at (0, 0). Pages keep their /Rotate (DocuSeal flattens rotation; we do not need
 * to), so the page geometry measured on the original document stays valid for every party.
 */
import {
  concatTransformationMatrix,
  LineCapStyle,
  ParseSpeeds,
  PDFDocument,
  popGraphicsState,
  pushGraphicsState,
  rgb,
  type Color,
  type PDFImage,
  type PDFPage,
} from 'pdf-lib';
import { displayToUserMatrix, type PdfPageInfo } from '../documents/pdf.ts';
import { AppError } from '../errors.ts';
import { hiddenByOwnValues } from '../templates/field-conditions.ts';
import type { Area, Field } from '../templates/fields.ts';
import { embedImageFile, type ImageFile } from './embed-image.ts';
import {
  drawRuns,
  type EmbeddedFace,
  embedDejaVu,
  lacksGlyphs,
  loadCjk,
  loadDejaVu,
  needsFallback,
  registerFontkit,
  runsWidth,
} from '../documents/fonts.ts';
import { bidiRuns, firstStrongDirection, hasRightToLeft } from '../i18n/bidi.ts';
import { type FormatOptions, formatFieldValue, maskText } from './format-values.ts';

export type { ImageFile } from './embed-image.ts';

export interface DrawValuesInput {
  /** The document as it is now: the original, or the previous party's output. */
  pdf: Uint8Array;
  /** Geometry of this document's pages (`inspectPdf(original).pages`), indexed by 0-based page. */
  pages: PdfPageInfo[];
  /** The document (schema item) to draw on: areas of other documents are skipped. */
  attachmentUuid: string;
  /**
   * The party's fields (a submission's copy); other parties' fields may be included: only fields
   * with a value are drawn.
   */
  fields: Field[];
  /** The party's values by field uuid, stored as reference §11 describes. */
  values: Record<string, unknown>;
  /** Attachment uuid → file, for signature/initials/image/stamp values (a typed signature is an image too). */
  images: Map<string, ImageFile>;
  /** IANA zone for date-times and `{{date}}` (the account's); default UTC. */
  timeZone?: string;
  /** The completion time `{{date}}` stands for; default the current time. */
  now?: Date;
  /** Locale for month names and the default date format (`MM/DD/YYYY` for `*US`, else `DD/MM/YYYY`); default `en`. */
  locale?: string;
  /**
   * The party's language (a code of src/i18n/languages.ts; src/i18n/signer-language.ts): month
   * names, the default date format and numbers' decimal separator (formatFieldValue); wins over
   * `locale`.
   */
  language?: string;
}

/** DocuSeal: 11 pt on a page whose shorter side is A4's width (595 pt), in proportion elsewhere (§10.2). */
const BASE_FONT_SIZE = 11;
const A4_WIDTH = 595;
/** Fitted text shrinks to this size before it is allowed to get smaller still (points). */
export const MIN_FONT_SIZE = 6;
/** Last resort for text that fits nowhere: it is drawn at this size even if it overflows. */
const FLOOR_FONT_SIZE = 1;
/** Step of the shrinking search (points). */
const SIZE_STEP = 0.25;
/** Distance between baselines, as a multiple of the font size. */
const LINE_SPACING = 1.2;
/** Gap between the area's edge and text (DocuSeal's TEXT_LEFT_MARGIN / TEXT_TOP_MARGIN, points). */
const TEXT_PADDING = 1;

/** Field types whose value is an image file (a typed signature's too: src/documents/typed-signature.ts). */
const IMAGE_TYPES = new Set(['signature', 'initials', 'image', 'stamp', 'kba']);
/** Field types drawn as nothing (DocuSeal draws a paperclip and the file name; not done here). */
const SKIPPED_TYPES = new Set(['file', 'payment']);

/** Unicode faces standing in for DocuSeal's `font` preference (Times/Helvetica/Courier) and `font_type`. */
const FONT_FILES: Record<string, Record<string, string>> = {
  Helvetica: {
    none: 'DejaVuSans',
    bold: 'DejaVuSans-Bold',
    italic: 'DejaVuSans-Oblique',
    bold_italic: 'DejaVuSans-BoldOblique',
  },
  Times: {
    none: 'DejaVuSerif',
    bold: 'DejaVuSerif-Bold',
    italic: 'DejaVuSerif-Italic',
    bold_italic: 'DejaVuSerif-BoldItalic',
  },
  Courier: {
    none: 'DejaVuSansMono',
    bold: 'DejaVuSansMono-Bold',
    italic: 'DejaVuSansMono-Oblique',
    bold_italic: 'DejaVuSansMono-BoldOblique',
  },
};

/** A few CSS names DocuSeal's builder offers for `color`/`background`; anything else must be hex. */
const NAMED_COLORS: Record<string, string> = {
  black: '000000',
  white: 'ffffff',
  red: 'ff0000',
  green: '008000',
  blue: '0000ff',
  gray: '808080',
  grey: '808080',
  yellow: 'ffff00',
  orange: 'ffa500',
  purple: '800080',
};

/** Hebrew or Arabic: right-aligned by default, as DocuSeal does; each line is drawn in bidi order (drawLine). */
const RTL = /[\p{Script=Hebrew}\p{Script=Arabic}]/u;

interface DrawJob {
  field: Field;
  area: Area;
  value: unknown;
}

/** A rectangle on the displayed page: points, origin bottom-left, y up. */
interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

/**
 * Draws every area of `fields` that lies on this document (`area.attachment_uuid ===
 * attachmentUuid`) and whose field has a value in `values`, on top of the existing content, and
 * returns the new PDF bytes (the input is returned unchanged when nothing is to be drawn). A
 * second party's call on the first party's output keeps both parties' values.
 *
 * By field type (stored values as in reference §11):
 * - text, number (`preferences.format`: comma/dot/space/usd/eur/gbp/percent/percent_space), date
 *   (`preferences.format`, default DD/MM/YYYY; `{{date}}` is `now` in `timeZone`), phone, select,
 *   radio and multiple without option areas, and any other type with a plain value: text in
 *   DejaVu Sans (Serif for `font: Times`, Sans Mono for `Courier`; `font_type` bold/italic/
 *   bold_italic), embedded as a subset so Greek, Cyrillic and most of Unicode render and extract.
 *   Size: `preferences.font_size` (points, kept even when the text overflows, as DocuSeal) or
 *   fitted — it starts at DocuSeal's size (11 pt when the page's shorter side is 595 pt, in
 *   proportion otherwise) capped so one line fits the area's height, and takes the largest size
 *   down from there (to 6 pt) at which the text fits the area, either on one line or wrapped at
 *   spaces (inside a word only when the word is longer than a line) — see `fitText`; below 6 pt
 *   only when nothing fits at 6 pt, so the whole value always stays inside its area (down to
 *   1 pt). `align` left (right for Hebrew/Arabic)/center/right, `valign` center (default)/top/
 *   bottom, `color`, `background`, `mask`.
 * - cells: one character per cell of width `area.cell_w` (fraction of the page width), from the
 *   left (from the right with `align: right`); without `cell_w` the area is split evenly by the
 *   number of characters. Each character is centred in its cell.
 * - signature, initials, image, stamp: the image scaled to fit the area keeping its aspect ratio,
 *   centred (a typed signature is such an image, rendered when it was given: src/documents/
 *   typed-signature.ts).
 * - checkbox (`true`), and radio/multiple areas with `option_uuid` whose option is chosen (an
 *   option without a value is "Option N", 1-based, §11): a check mark of two stroked lines in
 *   the largest centred square of the area, in `color`.
 * - file, payment: nothing.
 *
 * Errors: `AppError('VALIDATION')` when the PDF cannot be read by pdf-lib, an area's page is not
 * in the document, an image is neither PNG nor JPEG, or `timeZone` is unknown;
 * `AppError('NOT_FOUND')` when an image value's file is missing from `images`.
 *
 * Runs on the calling thread: pdf-lib parses and rewrites the whole file, holding the event loop
 * meanwhile. 30 text fields and 2 signature images on a 14-page 1 MB PDF take ~100–300 ms once
 * warm; the first call in a process ~0.6–0.9 s (JIT, font parsing). Fonts are read once per process.
 */
export async function drawValues(input: DrawValuesInput): Promise<Uint8Array> {
  assertTimeZone(input.timeZone ?? 'UTC');
  const jobs = collectJobs(input);
  // Nothing of this party on this document: the bytes stay as they are (no parse, no save).
  if (jobs.length === 0) return input.pdf;
  const doc = await loadPdfForDrawing(input.pdf, input.attachmentUuid);
  await drawJobs(doc, input, jobs);
  return saveDrawnPdf(doc);
}

/**
 * Saves a document values were drawn on (drawValuesOn), as drawValues does: several parties'
 * values drawn on one loaded document cost one save (the documents as filled so far,
 * src/signing/preview-documents.ts).
 * @returns the PDF's bytes
 */
export function saveDrawnPdf(doc: PDFDocument): Promise<Uint8Array> {
  // Fastest parse/write: blocks the event loop for tens of milliseconds, instead of yielding
  // every 50–100 objects (which made a 14-page file take ~4× longer). No object streams: faster
  // to write, ~5 % larger, and plain for the signer that appends to the file later. Form fields
  // are left as they are (no appearance regeneration, no flattening).
  return doc.save({ useObjectStreams: false, objectsPerTick: Number.POSITIVE_INFINITY, updateFieldAppearances: false });
}

/**
 * Draws a party's values, as drawValues does, on a document the caller has loaded with
 * loadPdfForDrawing (`input.pdf` is not read) and goes on with: e.g. the last party's document,
 * which signPdfDocument then saves once, signed, sparing a save and a parse of the whole file.
 * Draws nothing when the party has nothing on this document. Same errors as drawValues.
 */
export async function drawValuesOn(doc: PDFDocument, input: DrawValuesInput): Promise<void> {
  assertTimeZone(input.timeZone ?? 'UTC');
  await drawJobs(doc, input, collectJobs(input));
}

/** Draws the collected jobs of a party on a loaded document (time zone already checked). */
async function drawJobs(doc: PDFDocument, input: DrawValuesInput, jobs: DrawJob[]): Promise<void> {
  if (jobs.length === 0) return;
  const timeZone = input.timeZone ?? 'UTC';
  const pdfPages = doc.getPages();
  const context: DrawContext = {
    doc,
    fonts: new FontSet(doc),
    images: new Map(),
    input,
    dates: {
      timeZone,
      now: input.now ?? new Date(),
      locale: input.locale ?? 'en',
      ...(input.language ? { language: input.language } : {}),
    },
  };

  const byPage = new Map<number, DrawJob[]>();
  for (const job of jobs) {
    const list = byPage.get(job.area.page) ?? [];
    list.push(job);
    byPage.set(job.area.page, list);
  }
  for (const [pageIndex, pageJobs] of byPage) {
    if (!Number.isInteger(pageIndex) || !pdfPages[pageIndex] || !input.pages[pageIndex]) {
      throw new AppError(
        'VALIDATION',
        `field "${pageJobs[0].field.name}": an area is on page ${pageIndex} (0-based) ` +
          `but the document has ${pdfPages.length} page(s)`,
      );
    }
  }
  for (const [pageIndex, pageJobs] of byPage) {
    const page = pdfPages[pageIndex];
    const info = input.pages[pageIndex];
    // One transformation per page: from here on, coordinates are points on the displayed page.
    page.pushOperators(pushGraphicsState(), concatTransformationMatrix(...displayFrameMatrix(info)));
    for (const job of pageJobs) await drawJob(context, page, areaBox(job.area, info), job);
    page.pushOperators(popGraphicsState());
  }
}

interface DrawContext {
  doc: PDFDocument;
  fonts: FontSet;
  images: Map<string, PDFImage>;
  input: DrawValuesInput;
  dates: FormatOptions & { timeZone: string; now: Date; locale: string };
}

function collectJobs(input: DrawValuesInput): DrawJob[] {
  const jobs: DrawJob[] = [];
  // A field whose conditions on this party's values are not met is not drawn, whatever it holds
  // (completion drops such values already; src/templates/field-conditions.ts hiddenByOwnValues).
  const hidden = hiddenByOwnValues(input.fields, input.values);
  for (const field of input.fields) {
    const value = input.values[field.uuid];
    if (!hasValue(value) || SKIPPED_TYPES.has(field.type) || hidden.has(field.uuid)) continue;
    for (const area of field.areas ?? []) {
      if (area.attachment_uuid === input.attachmentUuid) jobs.push({ field, area, value });
    }
  }
  return jobs;
}

function hasValue(value: unknown): boolean {
  if (value === undefined || value === null || value === '' || value === false) return false;
  if (Array.isArray(value)) return value.some((item) => item !== null && item !== undefined && item !== '');
  return true;
}

/**
 * Loads a PDF for drawValuesOn (pdf-lib, fastest parse, fontkit registered).
 * @param attachmentUuid the document's uuid, named in the error
 * @throws AppError VALIDATION when pdf-lib cannot read the bytes
 */
export async function loadPdfForDrawing(bytes: Uint8Array, attachmentUuid: string): Promise<PDFDocument> {
  let doc: PDFDocument;
  try {
    doc = await PDFDocument.load(bytes, { updateMetadata: false, parseSpeed: ParseSpeeds.Fastest });
  } catch (error) {
    throw new AppError(
      'VALIDATION',
      `document ${attachmentUuid} cannot be opened for drawing values: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  registerFontkit(doc);
  return doc;
}

function assertTimeZone(timeZone: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
  } catch (error) {
    throw new AppError('VALIDATION', `unknown time zone: ${timeZone}`, { cause: error });
  }
}

// --- geometry --------------------------------------------------------------------------------

/**
 * The matrix from the displayed page with y up (origin bottom-left) to user space:
 * `displayToUserMatrix` ∘ (x, y) ↦ (x, height − y).
 */
function displayFrameMatrix(page: PdfPageInfo): [number, number, number, number, number, number] {
  const [a, b, c, d, e, f] = displayToUserMatrix(page);
  return [a, b, -c, -d, c * page.height + e, d * page.height + f];
}

/** An area (fractions of the displayed page, y from the top) as a box on the displayed page, y up. */
function areaBox(area: Area, page: PdfPageInfo): Box {
  const w = area.w * page.width;
  const h = area.h * page.height;
  return { x: area.x * page.width, y: page.height - area.y * page.height - h, w, h };
}

// --- dispatch --------------------------------------------------------------------------------

async function drawJob(context: DrawContext, page: PDFPage, box: Box, job: DrawJob): Promise<void> {
  const { field, area, value } = job;
  const preferences = field.preferences ?? {};
  const background = parseColor(preferences.background);

  if (field.type === 'checkbox' || (area.option_uuid && OPTION_MARK_TYPES.has(field.type))) {
    if (!isMarked(field, area, value)) return;
    if (background) page.drawRectangle({ ...rect(box), color: background });
    drawCheckMark(page, box, parseColor(preferences.color) ?? rgb(0, 0, 0));
    return;
  }
  if (IMAGE_TYPES.has(field.type)) {
    if (typeof value !== 'string') return;
    if (background) page.drawRectangle({ ...rect(box), color: background });
    const image = await embedImage(context, value, field);
    const scale = Math.min(box.w / image.width, box.h / image.height);
    const width = image.width * scale;
    const height = image.height * scale;
    page.drawImage(image, { x: box.x + (box.w - width) / 2, y: box.y + (box.h - height) / 2, width, height });
    return;
  }

  const text = maskText(displayText(field, value, context.dates), preferences.mask);
  if (text === '') return;
  if (background) page.drawRectangle({ ...rect(box), color: background });
  const font = await context.fonts.get(fontFile(preferences), text);
  const color = parseColor(preferences.color) ?? rgb(0, 0, 0);
  const fontSize = explicitFontSize(preferences.font_size);
  const baseSize = fontSize ?? baseFontSize(context.input.pages[area.page]);
  if (field.type === 'cells') {
    const pageWidth = context.input.pages[area.page].width;
    drawCells(page, box, area, pageWidth, font, text, {
      color,
      baseSize,
      fixed: fontSize !== undefined,
      align: preferences.align,
    });
    return;
  }
  drawText(page, box, font, text, {
    color,
    baseSize,
    fixed: fontSize !== undefined,
    align: alignment(preferences.align, text),
    valign: preferences.valign === 'top' || preferences.valign === 'bottom' ? preferences.valign : 'center',
  });
}

const OPTION_MARK_TYPES = new Set(['radio', 'multiple', 'select']);

/** Checkbox: true. Option area: its option (value, or "Option N") is the value or among the values. */
function isMarked(field: Field, area: Area, value: unknown): boolean {
  if (!area.option_uuid) return value === true || value === 'true';
  const options = field.options ?? [];
  const index = options.findIndex((option) => option.uuid === area.option_uuid);
  if (index < 0) return false;
  const name = options[index].value || `Option ${index + 1}`;
  return (Array.isArray(value) ? value : [value]).map(String).includes(name);
}

/** The text a value reads as on the document (§11 formats; lists joined with ", " as DocuSeal). */
function displayText(field: Field, value: unknown, dates: DrawContext['dates']): string {
  const formatted = formatFieldValue(field, value, dates);
  if (formatted !== undefined) return formatted;
  if (Array.isArray(value))
    return value
      .filter((item) => item !== null && item !== undefined && item !== '')
      .map(String)
      .join(', ');
  if (typeof value === 'object') return '';
  // No-break spaces become spaces so wrapping and every face behave (DocuSeal does the same).
  return String(value).replace(/\u00a0/g, ' ');
}

// --- text ------------------------------------------------------------------------------------

interface TextStyle {
  color: Color;
  /** Explicit `font_size`, or the page's base size. */
  baseSize: number;
  /** True when `font_size` was given: no shrinking. */
  fixed: boolean;
  align: 'left' | 'center' | 'right';
  valign: 'top' | 'center' | 'bottom';
}

interface Layout {
  size: number;
  lines: string[];
}

function drawText(page: PDFPage, box: Box, font: MeasuredFont, text: string, style: TextStyle): void {
  const padX = Math.min(TEXT_PADDING, box.w * 0.1);
  const padY = Math.min(TEXT_PADDING, box.h * 0.1);
  const inner: Box = { x: box.x + padX, y: box.y + padY, w: box.w - 2 * padX, h: box.h - 2 * padY };
  const { size, lines } = style.fixed
    ? { size: style.baseSize, lines: wrap(font, text, style.baseSize, inner.w).lines }
    : fitText(font, text, inner, style.baseSize);
  const blockHeight = textBlockHeight(font, size, lines.length);
  const top =
    style.valign === 'top'
      ? inner.y + inner.h
      : style.valign === 'bottom'
        ? inner.y + blockHeight
        : inner.y + (inner.h + blockHeight) / 2;
  lines.forEach((line, index) => {
    const width = font.width(line) * size;
    const x =
      style.align === 'left'
        ? inner.x
        : style.align === 'right'
          ? inner.x + inner.w - width
          : inner.x + (inner.w - width) / 2;
    const baseline = top - font.ascent * size - index * LINE_SPACING * size;
    if (line !== '') drawLine(page, line, x, baseline, size, font, style.color);
  });
}

/**
 * One line of a value at `x`: as it is, or — when it holds Hebrew or Arabic — in the order of the
 * Unicode Bidirectional Algorithm (src/i18n/bidi.ts), its base direction by its first strong
 * character (HTML's `dir="auto"`): so a date such as "28 نوفمبر 2026" keeps its numbers in order
 * (fontkit alone would reverse the whole string). A right-to-left run of letters goes to fontkit
 * as it is (it shapes it and lays it out from the right); one of neutrals only is reversed here.
 */
function drawLine(page: PDFPage, line: string, x: number, y: number, size: number, font: MeasuredFont, color: Color) {
  if (!hasRightToLeft(line)) {
    drawRuns(page, line, font.faces, { x, y, size, color });
    return;
  }
  let cursor = x;
  for (const run of bidiRuns(line, firstStrongDirection(line))) {
    const text = run.rtl && !hasRightToLeft(run.text) ? Array.from(run.text).reverse().join('') : run.text;
    drawRuns(page, text, font.faces, { x: cursor, y, size, color });
    cursor += font.width(run.text) * size;
  }
}

/** Height of `count` lines: first ascender to last descender (points). */
function textBlockHeight(font: MeasuredFont, size: number, count: number): number {
  return (font.ascent + font.descent) * size + (count - 1) * LINE_SPACING * size;
}

/**
 * The largest size ≤ the starting size at which the text fits `box`, wrapped or on one line. The
 * start is the base size capped so that one line fits the height. Wrapped layouts are tried down
 * in 0.25 pt steps; a single line is also tried at the exact size that fills the width (a name
 * shrinks smoothly rather than jumping to two lines). The larger of the two wins. Sizes below 6 pt
 * are used only when nothing fits at 6 pt, down to 1 pt, so the value stays inside its area; at
 * 1 pt it is drawn even if it still overflows.
 */
function fitText(font: MeasuredFont, text: string, box: Box, baseSize: number): Layout {
  const start = Math.max(FLOOR_FONT_SIZE, Math.min(baseSize, box.h / (font.ascent + font.descent)));
  const single = text.includes('\n') ? 0 : Math.min(start, box.w / Math.max(font.width(text), 1e-9));
  const largestWrapped = (from: number, to: number): Layout | undefined => {
    for (let size = from; size >= to - 1e-9; size -= SIZE_STEP) {
      const { lines, widest } = wrap(font, text, size, box.w);
      if (textBlockHeight(font, size, lines.length) <= box.h + 0.01 && widest * size <= box.w + 0.01)
        return { size, lines };
    }
    return undefined;
  };
  const pick = (wrapped: Layout | undefined, minimum: number): Layout | undefined => {
    const oneLine = single >= minimum ? { size: single, lines: [text] } : undefined;
    if (!wrapped) return oneLine;
    return oneLine && oneLine.size > wrapped.size ? oneLine : wrapped;
  };
  const minimum = Math.min(MIN_FONT_SIZE, start);
  const layout = pick(largestWrapped(start, minimum), minimum) ??
    pick(largestWrapped(minimum - SIZE_STEP, FLOOR_FONT_SIZE), FLOOR_FONT_SIZE) ?? {
      size: FLOOR_FONT_SIZE,
      lines: wrap(font, text, FLOOR_FONT_SIZE, box.w).lines,
    };
  // Wrapping adds up word widths; the shaped line can come out a hair wider (kerning around
  // spaces). Measure the chosen lines as drawn and shrink to the width if needed.
  const widest = Math.max(...layout.lines.map((line) => font.width(line)));
  if (widest * layout.size > box.w && widest > 0) layout.size = Math.max(FLOOR_FONT_SIZE, box.w / widest);
  return layout;
}

/**
 * Greedy wrapping at spaces within `width` points: paragraphs split at line breaks; a word
 * longer than a line is broken between characters (code points). `widest` is the widest line in
 * 1-pt units (sum of its words and spaces), over `width / size` only when one character is.
 */
function wrap(font: MeasuredFont, text: string, size: number, width: number): { lines: string[]; widest: number } {
  const limit = width / size; // in 1-pt units
  const space = font.width(' ');
  const lines: string[] = [];
  let widest = 0;
  for (const paragraph of text.replace(/\r\n?/g, '\n').split('\n')) {
    const words = paragraph.split(/[ \t]+/).filter((word, _index, all) => word !== '' || all.length === 1);
    let line = '';
    let lineWidth = 0;
    for (const word of words) {
      const wordWidth = font.width(word);
      if (line !== '' && lineWidth + space + wordWidth <= limit) {
        line += ` ${word}`;
        lineWidth += space + wordWidth;
        continue;
      }
      if (line !== '') lines.push(line);
      widest = Math.max(widest, lineWidth);
      if (wordWidth <= limit) {
        line = word;
        lineWidth = wordWidth;
        continue;
      }
      // A word wider than the line: break it between characters.
      line = '';
      lineWidth = 0;
      for (const char of Array.from(word)) {
        const charWidth = font.width(char);
        if (line !== '' && lineWidth + charWidth > limit) {
          lines.push(line);
          widest = Math.max(widest, lineWidth);
          line = '';
          lineWidth = 0;
        }
        line += char;
        lineWidth += charWidth;
      }
    }
    lines.push(line);
    widest = Math.max(widest, lineWidth);
  }
  return { lines, widest };
}

function drawCells(
  page: PDFPage,
  box: Box,
  area: Area,
  pageWidth: number,
  font: MeasuredFont,
  text: string,
  style: { color: Color; baseSize: number; fixed: boolean; align: unknown },
): void {
  const chars = Array.from(text);
  const cellWidth = area.cell_w && area.cell_w > 0 ? area.cell_w * pageWidth : box.w / chars.length;
  const lineHeight = font.ascent + font.descent;
  const widest = Math.max(...chars.map((char) => font.width(char)), 1e-9);
  const size = style.fixed
    ? style.baseSize
    : Math.max(
        FLOOR_FONT_SIZE,
        Math.min(
          style.baseSize,
          (box.h - 2 * Math.min(TEXT_PADDING, box.h * 0.1)) / lineHeight,
          (cellWidth * 0.9) / widest,
        ),
      );
  const baseline = box.y + box.h / 2 - (lineHeight * size) / 2 + font.descent * size;
  const fromRight = style.align === 'right';
  chars.forEach((char, index) => {
    if (char.trim() === '') return;
    const cellX = fromRight ? box.x + box.w - cellWidth * (chars.length - index) : box.x + cellWidth * index;
    const width = font.width(char) * size;
    drawRuns(page, char, font.faces, { x: cellX + (cellWidth - width) / 2, y: baseline, size, color: style.color });
  });
}

// --- marks and images ------------------------------------------------------------------------

/** A check mark in the largest square centred in the box, inset by 10 %, stroked with round caps. */
function drawCheckMark(page: PDFPage, box: Box, color: Color): void {
  const side = Math.min(box.w, box.h) * 0.8;
  const x0 = box.x + (box.w - side) / 2;
  const y0 = box.y + (box.h - side) / 2;
  const thickness = Math.max(0.5, side * 0.12);
  const point = (u: number, v: number) => ({ x: x0 + u * side, y: y0 + v * side });
  // (u, v) in the square, v up; the stroke's half thickness stays inside the square.
  const left = point(0.1, 0.5);
  const bottom = point(0.38, 0.18);
  const right = point(0.9, 0.85);
  page.drawLine({ start: left, end: bottom, thickness, color, lineCap: LineCapStyle.Round });
  page.drawLine({ start: bottom, end: right, thickness, color, lineCap: LineCapStyle.Round });
}

async function embedImage(context: DrawContext, uuid: string, field: Field): Promise<PDFImage> {
  const cached = context.images.get(uuid);
  if (cached) return cached;
  const file = context.input.images.get(uuid);
  if (!file) throw new AppError('NOT_FOUND', `field "${field.name}": the image ${uuid} of its value was not provided`);
  const image = await embedImageFile(context.doc, file, `field "${field.name}": the image ${uuid}`);
  context.images.set(uuid, image);
  return image;
}

// --- preferences -----------------------------------------------------------------------------

function fontFile(preferences: Record<string, unknown>): string {
  const family = typeof preferences.font === 'string' && FONT_FILES[preferences.font] ? preferences.font : 'Helvetica';
  const variant =
    typeof preferences.font_type === 'string' && FONT_FILES[family][preferences.font_type]
      ? preferences.font_type
      : 'none';
  return FONT_FILES[family][variant];
}

function explicitFontSize(value: unknown): number | undefined {
  const size =
    typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  return Number.isFinite(size) && size > 0 ? size : undefined;
}

/** DocuSeal's proportional default (§10.2): floor(11 × shorter side / 595), at least the minimum. */
function baseFontSize(page: PdfPageInfo): number {
  return Math.max(MIN_FONT_SIZE, Math.floor((Math.min(page.width, page.height) / A4_WIDTH) * BASE_FONT_SIZE));
}

function alignment(value: unknown, text: string): TextStyle['align'] {
  if (value === 'left' || value === 'center' || value === 'right') return value;
  return RTL.test(text) ? 'right' : 'left';
}

/** `#rrggbb`, `rrggbb`, `#rgb` or a few CSS names; undefined for anything else. */
function parseColor(value: unknown): Color | undefined {
  if (typeof value !== 'string') return undefined;
  let hex = value.trim().toLowerCase();
  hex = NAMED_COLORS[hex] ?? hex.replace(/^#/, '');
  if (/^[0-9a-f]{3}$/.test(hex)) hex = hex.replace(/./g, (c) => c + c);
  if (!/^[0-9a-f]{6}$/.test(hex)) return undefined;
  const channel = (i: number) => parseInt(hex.slice(i, i + 2), 16) / 255;
  return rgb(channel(0), channel(2), channel(4));
}

function rect(box: Box): { x: number; y: number; width: number; height: number } {
  return { x: box.x, y: box.y, width: box.w, height: box.h };
}

// --- fonts -----------------------------------------------------------------------------------

/**
 * An embedded face and its fallbacks (the CJK face, for a value that needs it), with their
 * vertical metrics and a memoised width measure (per 1 pt); drawn run by run (drawRuns).
 */
interface MeasuredFont {
  faces: readonly EmbeddedFace[];
  /** Ascender and descender (positive) per point of size: the largest of the faces'. */
  ascent: number;
  descent: number;
  width(text: string): number;
}

/**
 * The faces embedded in one document (each once, subset to the glyphs drawn; parsed once per
 * process, src/documents/fonts.ts). A text with characters DejaVu has no glyph for and the CJK
 * face has (loadCjk) gets that face as its fallback, embedded once per document and only then.
 */
class FontSet {
  private readonly faces = new Map<string, Promise<MeasuredFont>>();
  private cjk: Promise<EmbeddedFace> | undefined;
  constructor(private readonly doc: PDFDocument) {}

  /** The face `name` (a DejaVu file name) to draw `text` with, with the CJK fallback when `text` needs it. */
  async get(name: string, text: string): Promise<MeasuredFont> {
    const dejaVu = await loadDejaVu(name);
    // The CJK face only for a text that needs what DejaVu lacks.
    const cjk = lacksGlyphs([text], [dejaVu.face]) ? await loadCjk() : null;
    const fallback = cjk && needsFallback([text], dejaVu.face, cjk.face) ? cjk : null;
    const key = fallback ? `${name}+cjk` : name;
    let face = this.faces.get(key);
    if (!face) {
      face = (async () => {
        const primary = await embedDejaVu(this.doc, dejaVu);
        if (fallback) this.cjk ??= embedDejaVu(this.doc, fallback);
        const faces = fallback ? [primary, await this.cjk!] : [primary];
        const widths = new Map<string, number>();
        return {
          faces,
          ascent: Math.max(dejaVu.ascent, fallback?.ascent ?? 0),
          descent: Math.max(dejaVu.descent, fallback?.descent ?? 0),
          width(text: string): number {
            let measured = widths.get(text);
            if (measured === undefined) {
              measured = runsWidth(text, faces, 1);
              widths.set(text, measured);
            }
            return measured;
          },
        };
      })();
      this.faces.set(key, face);
    }
    return face;
  }
}
