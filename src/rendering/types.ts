/**
 * The renderer's vocabulary: paper sizes, HTML field tags, and the Renderer interface that the
 * local and Gotenberg implementations share (re-exported by renderer.ts, which picks one).
 */
import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../errors.ts';
import { TAG_FIELD_TYPES } from '../field-types.ts';

/**
 * Paper sizes of POST /templates/html (interface-spec "POST /templates/html"), in PDF points
 * (1/72 in), portrait except Ledger, which is Tabloid turned landscape. ISO A sizes are exact
 * millimetre values (A4 = 210 × 297 mm = 595.28 × 841.89 pt).
 */
export const PAPER_SIZES = {
  Letter: { width: 612, height: 792 },
  Legal: { width: 612, height: 1008 },
  Tabloid: { width: 792, height: 1224 },
  Ledger: { width: 1224, height: 792 },
  A0: mm(841, 1189),
  A1: mm(594, 841),
  A2: mm(420, 594),
  A3: mm(297, 420),
  A4: mm(210, 297),
  A5: mm(148, 210),
  A6: mm(105, 148),
} as const satisfies Record<string, { width: number; height: number }>;

function mm(width: number, height: number) {
  return { width: (width * 72) / 25.4, height: (height * 72) / 25.4 };
}

export type PaperSize = keyof typeof PAPER_SIZES;
export const DEFAULT_PAPER_SIZE: PaperSize = 'Letter';

/**
 * Reads the `size` of POST /templates/html.
 * @param value undefined, null or '' → Letter (the spec's default); otherwise one of
 *   PAPER_SIZES' names in any letter case ("a4", "LEDGER").
 * @throws AppError VALIDATION listing the accepted sizes.
 */
export function parsePaperSize(value: unknown): PaperSize {
  if (value === undefined || value === null || value === '') return DEFAULT_PAPER_SIZE;
  if (typeof value === 'string') {
    const wanted = value.trim().toLowerCase();
    const match = (Object.keys(PAPER_SIZES) as PaperSize[]).find((size) => size.toLowerCase() === wanted);
    if (match) return match;
  }
  throw new AppError('VALIDATION', `size must be one of ${Object.keys(PAPER_SIZES).join(', ')}.`, {
    details: { field: 'size' },
  });
}

/**
 * Field types an HTML field tag `<type-field>` may name: the template field types plus `datenow`
 * (reference/docuseal-behaviour.md §12.3–12.4; src/field-types.ts).
 */
export const HTML_FIELD_TYPES = TAG_FIELD_TYPES;
export type HtmlFieldType = (typeof HTML_FIELD_TYPES)[number];

/**
 * One field tag of an HTML template, with its rendered box.
 * Attributes (reference/docuseal-behaviour.md §12.4): `name` ('' when absent), `role` (the earlier
 * shape's `submitter` is read too), `required` (default **true**, as for text tags §12.3; a bare
 * attribute is true), `readonly` (default false), `default`, `options` (comma-separated; select,
 * radio and multiple only). `attributes` holds every attribute as written (names lower-cased,
 * values decoded), for the template service to read more (style, class, format …).
 */
export interface HtmlFieldTag {
  name: string;
  type: string;
  role?: string;
  required: boolean;
  readonly: boolean;
  defaultValue?: string;
  options?: string[];
  attributes: Record<string, string>;
  /** Fractions (0..1) of the page, y from the top; `page` 0-based (DESIGN.md "area coordinates"). */
  area: { page: number; x: number; y: number; w: number; h: number };
}

export interface HtmlToPdfInput {
  /** The template's HTML: a whole document or a fragment, with field tags. */
  html: string;
  /** html_header / html_footer: shown on every page (no field tags there). */
  header?: string | undefined;
  footer?: string | undefined;
  size: PaperSize;
}

export interface DocxToPdfInput {
  docx: Buffer;
  /** The uploaded name; only its extension (.docx, .doc, .odt, .rtf) is used. */
  filename: string;
  /** Whose document it is (an account id): its archive check takes its turn in the parse pool. Default `system`. */
  owner?: string | number | undefined;
}

/**
 * Converts documents to PDF. Errors are AppError: VALIDATION (422) for input that cannot be
 * converted (bad field tags, a file that is not a document), UNAVAILABLE (503) when the engine is
 * missing, down or too slow.
 */
export interface Renderer {
  /** "gotenberg" or "local". */
  name: string;
  /** HTML → PDF of the given size, with the field tags' areas; the PDF has no trace of the tags. */
  htmlToPdf(input: HtmlToPdfInput): Promise<{ pdf: Buffer; fields: HtmlFieldTag[] }>;
  /** DOCX → PDF, text (text tags included) kept in the text layer. */
  docxToPdf(input: DocxToPdfInput): Promise<Buffer>;
  /** Stops the browser and removes temporary profiles; the renderer may not be used afterwards. */
  close(): Promise<void>;
}

/** Just the logger methods renderers use (pino's and Fastify's loggers fit). */
export type RenderLogger = Pick<FastifyBaseLogger, 'debug' | 'info' | 'warn' | 'error'>;
