/**
 * PDF facts and geometry for templates: what a document's pages look like as displayed, page
 * previews, and the conversions between the three coordinate systems an area passes through
 * (DESIGN.md "area coordinates" and "pages with /Rotate"; reference/docuseal-behaviour.md §12.1):
 *
 * - request points: PDF points (1/72 in) from the top-left of the page as displayed, page 1-based
 *   (what `POST /templates/pdf` takes);
 * - fractions: x, y, w, h in 0..1 of the displayed page, y from the top, page 0-based (what is
 *   stored and returned);
 * - PDF user space: the page's own unrotated coordinates, y up, origin wherever the page's boxes
 *   put it (what a content stream, and so pdf-lib's drawing calls, use).
 *
 * Parsing and rendering use mupdf (WASM, loaded on first use so the service starts without it), in
 * the parse pool (src/parse-pool/): the functions that read bytes (inspectPdf, readUploadedPdf,
 * rewritePdf, flattenPdfForm, the `…Here` ones) run inside its tasks, on a worker thread; callers on
 * the event loop use the pooled ones (renderPagePng, assertPdfEditable, uploaded-pdf.ts
 * prepareUploadedPdf). The geometry below is plain arithmetic and runs anywhere.
 */
import type { PDFDocument, PDFObject, PDFPage } from 'mupdf';
import { AppError } from '../errors.ts';
import { PDF_LIMITS } from '../limits.ts';
import { ownBytes, runParseTask } from '../parse-pool/pool.ts';
import { parseTask } from '../parse-pool/tasks.ts';

export type Mupdf = typeof import('mupdf');
let mupdfModule: Promise<Mupdf> | undefined;

/** The mupdf module, imported once on first use (its WASM start-up takes ~100 ms). */
export function loadMupdf(): Promise<Mupdf> {
  mupdfModule ??= import('mupdf');
  return mupdfModule;
}

export type PageRotation = 0 | 90 | 180 | 270;

/** A page as displayed: size in PDF points after /Rotate, and the /Rotate it has. */
export interface PdfPage {
  width: number;
  height: number;
  rotate: PageRotation;
}

/** [x0, y0, x1, y1] in PDF user space (points, y up), normalised so x0 < x1 and y0 < y1. */
export type PdfBox = [number, number, number, number];

/**
 * A page as `inspectPdf` reports it: the displayed size and rotation, plus the visible box in the
 * page's own user space (CropBox clipped to MediaBox, or MediaBox), which `fractionsToPdfRect`
 * needs when the box does not start at (0, 0).
 */
export interface PdfPageInfo extends PdfPage {
  cropBox: PdfBox;
}

export interface PdfInfo {
  pageCount: number;
  pages: PdfPageInfo[];
  /**
   * True when the file is encrypted but opens without a password (an owner password only
   * restricts permissions). Such a file can be read and rendered, but pdf-lib cannot edit it:
   * rewrite it with `rewritePdf` before storing it for completion.
   */
  encrypted: boolean;
  /** True when mupdf had to repair the file's structure (broken xref, truncated tail) to read it. */
  repaired: boolean;
}

/** An area in points or fractions; which one is said by the function taking it. */
export interface Area {
  x: number;
  y: number;
  w: number;
  h: number;
  page: number;
}

/** A rectangle in PDF user space as pdf-lib's `drawRectangle` takes it (points, y up). */
export interface PdfRect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** Slack for areas that touch a page edge after rounding (points, or fractions of a page). */
const EPSILON_POINTS = 0.5;

/** DocuSeal renders page previews 1400 px wide (reference/docuseal-behaviour.md §12.2). */
export const PREVIEW_WIDTH_PX = 1400;
/** Guards memory against extreme page shapes (a 1:20 strip at 1400 px wide is 28 000 px tall). */
const MAX_PREVIEW_HEIGHT_PX = 20_000;

/**
 * Reads page count, displayed page sizes (points) and /Rotate of a PDF.
 *
 * `label` names the document in messages ("documents[0]", a file name). Throws
 * `AppError('VALIDATION')` (422) when the bytes are empty, are not a PDF (no `%PDF-` header in the
 * first 1024 bytes, as PDF readers accept), are encrypted with a user password, or hold no pages;
 * and `<label> is not a valid PDF: …` when nothing is parsable or a page cannot be loaded.
 */
export async function inspectPdf(bytes: Uint8Array, label: string): Promise<PdfInfo> {
  const mupdf = await loadMupdf();
  const doc = openPdf(mupdf, bytes, label);
  try {
    const pageCount = doc.countPages();
    const repaired = doc.wasRepaired();
    if (pageCount === 0) {
      throw new AppError(
        'VALIDATION',
        repaired
          ? `${label} is not a valid PDF: it is damaged (truncated or corrupt) and no page can be read`
          : `${label} is a PDF with no pages`,
      );
    }
    const pages: PdfPageInfo[] = [];
    for (let index = 0; index < pageCount; index += 1) {
      let page: ReturnType<typeof doc.loadPage>;
      try {
        page = doc.loadPage(index);
      } catch (error) {
        throw new AppError('VALIDATION', `${label} is not a valid PDF: page ${index + 1} cannot be read`, {
          cause: error,
        });
      }
      try {
        pages.push(readPageGeometry(page));
      } finally {
        page.destroy();
      }
    }
    const encryption = doc.getMetaData('encryption'); // e.g. "Standard V2 R3 128-bit RC4", or "None"
    const encrypted = encryption !== undefined && encryption !== '' && encryption !== 'None';
    return { pageCount, pages, encrypted, repaired };
  } catch (error) {
    throw invalidPdf(label, error);
  } finally {
    doc.destroy();
  }
}

/**
 * Renders page `pageIndex` (0-based) as displayed (after /Rotate, CropBox) to a PNG exactly
 * `widthPx` pixels wide (DocuSeal's previews: 1400, §12.2), the height following the displayed
 * aspect ratio (rounded). Annotations and AcroForm field appearances are drawn into the image, so
 * form fields show flattened as in DocuSeal's preview copy. White background, RGB, no alpha.
 *
 * Throws `AppError('VALIDATION')` for a page index out of range, a page whose preview would be
 * over 20 000 px tall, or an unreadable document (callers normally ran `inspectPdf` first); the
 * parse pool's limits. mupdf renders in the parse pool (src/parse-pool/): a Letter page takes
 * ~30–150 ms depending on its content, a crafted one as long as the pool's time limit allows.
 * @param owner whose task it is in the parse pool's fair queue (an account id)
 */
export async function renderPagePng(
  bytes: Uint8Array,
  pageIndex: number,
  widthPx = PREVIEW_WIDTH_PX,
  owner: string | number = 'system',
): Promise<Buffer> {
  if (!Number.isInteger(widthPx) || widthPx < 1 || widthPx > 10_000) {
    throw new AppError('VALIDATION', `preview width must be an integer from 1 to 10000 pixels, got ${widthPx}`);
  }
  const png = await runParseTask(renderPagePngTask, [ownBytes(bytes), pageIndex, widthPx], {
    owner,
    subject: 'The document',
    verb: 'rendered',
  });
  return Buffer.from(png.buffer, png.byteOffset, png.byteLength);
}

/** renderPagePng on the calling thread: the parse pool's `renderPagePng` task (src/parse-worker/worker.ts). */
export async function renderPagePngHere(bytes: Uint8Array, pageIndex: number, widthPx: number): Promise<Uint8Array> {
  const mupdf = await loadMupdf();
  const doc = openPdf(mupdf, bytes, 'document');
  try {
    const pageCount = doc.countPages();
    if (!Number.isInteger(pageIndex) || pageIndex < 0 || pageIndex >= pageCount) {
      throw new AppError(
        'VALIDATION',
        `page ${pageIndex} is out of range: the document has ${pageCount} page(s) (0-based)`,
      );
    }
    const page = doc.loadPage(pageIndex);
    try {
      const [x0, y0, x1, y1] = page.getBounds();
      const scale = widthPx / (x1 - x0);
      const heightPx = Math.max(1, Math.round((y1 - y0) * scale));
      if (heightPx > MAX_PREVIEW_HEIGHT_PX) {
        throw new AppError(
          'VALIDATION',
          `page ${pageIndex + 1} is too tall to preview (${heightPx} px at ${widthPx} px wide)`,
        );
      }
      // A pixmap of exactly widthPx × heightPx, drawn into through a device: toPixmap would size
      // the image from the rounded-out bounds, which can come out a pixel wider.
      const pixmap = new mupdf.Pixmap(mupdf.ColorSpace.DeviceRGB, [0, 0, widthPx, heightPx], false);
      try {
        pixmap.clear(255);
        const device = new mupdf.DrawDevice(mupdf.Matrix.identity, pixmap);
        try {
          // run() draws contents, annotations and widgets (the form fields' appearances).
          page.run(device, mupdf.Matrix.concat(mupdf.Matrix.translate(-x0, -y0), mupdf.Matrix.scale(scale, scale)));
          device.close();
        } finally {
          device.destroy();
        }
        return pixmap.asPNG().slice();
      } finally {
        pixmap.destroy();
      }
    } finally {
      page.destroy();
    }
  } catch (error) {
    throw invalidPdf('The document', error);
  } finally {
    doc.destroy();
  }
}

/** The parse pool's `renderPagePng` task: renderPagePngHere in a worker (src/parse-pool/tasks.ts). */
export const renderPagePngTask = parseTask('renderPagePng', renderPagePngHere);

/**
 * The text of a PDF's first page, as mupdf's structured text reads it: the parse pool's
 * `firstPageText` task (src/parse-worker/worker.ts; /tools/verify reads the audit chain's head printed
 * on an audit log with it).
 * @throws AppError VALIDATION as openPdf, and `The document is not a valid PDF: …`
 */
export async function firstPageTextHere(bytes: Uint8Array): Promise<string> {
  const mupdf = await loadMupdf();
  const doc = openPdf(mupdf, bytes, 'The document');
  try {
    const page = doc.loadPage(0);
    try {
      return page.toStructuredText('').asText();
    } finally {
      page.destroy();
    }
  } catch (error) {
    throw invalidPdf('The document', error);
  } finally {
    doc.destroy();
  }
}

/** The parse pool's `firstPageText` task: firstPageTextHere in a worker (src/parse-pool/tasks.ts). */
export const firstPageTextTask = parseTask('firstPageText', firstPageTextHere);

/**
 * Rewrites a PDF through mupdf without encryption and with a rebuilt cross-reference table: for
 * files `inspectPdf` reports `encrypted` (owner password only) or `repaired`, so that pdf-lib can
 * edit them later. Content is not changed. Throws like `inspectPdf` for unreadable input.
 */
export async function rewritePdf(bytes: Uint8Array, label: string): Promise<Uint8Array> {
  const mupdf = await loadMupdf();
  const doc = openPdf(mupdf, bytes, label);
  try {
    return savePdf(doc, 'encrypt=none,garbage');
  } catch (error) {
    throw invalidPdf(label, error);
  } finally {
    doc.destroy();
  }
}

/**
 * Flattens a PDF's form (`flatten: true` of POST /templates/pdf and /submissions/pdf; OpenAPI:
 * "Remove PDF form fields from the documents."): every widget's appearance becomes page content and
 * the form fields and the AcroForm go (mupdf `bake`, widgets only; other annotations stay), as
 * DocuSeal's HexaPDF `acro_form.flatten` does (lib/templates/process_document.rb maybe_flatten_form).
 * A PDF without an AcroForm is returned unchanged (the same bytes).
 * @param label names the document in messages ("documents[0]")
 * @throws AppError VALIDATION as `openPdf`, and `<label> is not a valid PDF: …` when mupdf fails on it
 */
export async function flattenPdfForm(bytes: Uint8Array, label: string): Promise<Uint8Array> {
  const mupdf = await loadMupdf();
  const doc = openPdf(mupdf, bytes, label);
  try {
    if (doc.getTrailer().get('Root').get('AcroForm').isNull()) return bytes;
    doc.bake(false, true);
    // bake draws the widgets and drops them; the form dictionary itself is left: remove it.
    doc.getTrailer().get('Root').delete('AcroForm');
    return savePdf(doc, 'encrypt=none,garbage,compress');
  } catch (error) {
    throw invalidPdf(label, error);
  } finally {
    doc.destroy();
  }
}

/**
 * A PDF upload as it will be stored, checked the way every later step reads it (issue 12, "Broken
 * inputs → 4xx"): mupdf must open it and load every page (`inspectPdf`); a file mupdf had to
 * repair, or that is encrypted with an owner password only, is rewritten (`rewritePdf`) and the
 * rewrite must load every page again, as many as before (a truncated file can read as one page
 * whose object is gone once the broken tail is dropped: "cycle in page tree").
 * Pass the bytes finally kept (after text tags are removed) to `assertPdfEditable`.
 * @param label names the document in messages ("documents[0]")
 * @returns the bytes to keep (the input itself when it needed no rewrite) and their pages
 * @throws AppError VALIDATION (422) as `inspectPdf`, and `<label> is not a valid PDF: …` when the
 *   rewrite cannot be read
 */
export async function readUploadedPdf(bytes: Uint8Array, label: string): Promise<{ pdf: Uint8Array; info: PdfInfo }> {
  const info = await inspectPdf(bytes, label);
  if (!info.encrypted && !info.repaired) return { pdf: bytes, info };
  const pdf = await rewritePdf(bytes, label);
  let rewritten: PdfInfo;
  try {
    rewritten = await inspectPdf(pdf, label);
  } catch (error) {
    throw invalidPdf(label, error);
  }
  if (rewritten.pageCount !== info.pageCount) {
    throw new AppError(
      'VALIDATION',
      `${label} is not a valid PDF: ${info.pageCount} page(s) are listed but ${rewritten.pageCount} can be read`,
    );
  }
  return { pdf, info: rewritten };
}

/** What pdf-lib read: the pages of its page tree, or why it could not. */
export type PdfLibReading = { pageCount: number } | { error: string };

/**
 * Reads `bytes` with pdf-lib (`PDFDocument.load`, fastest parse, metadata untouched) on the calling
 * thread (within the parse pool's tasks: src/parse-worker/worker.ts). pdf-lib parses every object of
 * a file (about 30 ms per MB) and a damaged or crafted file can keep a JavaScript parser busy far
 * longer, so callers use assertPdfEditable, which runs in the pool.
 * @returns `{ pageCount }` (pages in pdf-lib's page tree), or `{ error }` when pdf-lib throws
 */
export async function readWithPdfLibHere(bytes: Uint8Array): Promise<PdfLibReading> {
  const { PDFDocument: PdfLibDocument, ParseSpeeds } = await import('pdf-lib');
  try {
    const doc = await PdfLibDocument.load(bytes, { updateMetadata: false, parseSpeed: ParseSpeeds.Fastest });
    return { pageCount: doc.getPages().length };
  } catch (error) {
    return { error: String((error as Error)?.message ?? error).split('\n')[0]! };
  }
}

/**
 * Checks that pdf-lib, which draws the values and signs at completion (src/signing/draw-values.ts,
 * sign-pdf.ts), reads the PDF and finds `pageCount` pages in its page tree: what mupdf accepts
 * pdf-lib may not, and a document that cannot be drawn on must be refused now, not fail every
 * completion later. Costs one parse (~30 ms for a 1 MB, 14-page file), in the parse pool
 * (src/parse-pool/: the event loop stays free, a read is bounded in time and memory).
 * @param owner whose task it is in the parse pool's fair queue (an account id)
 * @throws AppError VALIDATION as assertPdfEditableHere; the parse pool's limits
 */
export async function assertPdfEditable(
  bytes: Uint8Array,
  label: string,
  pageCount: number,
  owner: string | number,
): Promise<void> {
  await runParseTask(assertPdfEditableTask, [ownBytes(bytes), label, pageCount], { owner, subject: label });
}

/**
 * assertPdfEditable on the calling thread (the parse pool's `assertPdfEditable` task, and a part of
 * uploaded-pdf.ts's).
 * @throws AppError VALIDATION `<label> is not a valid PDF: <pdf-lib's reason>` / `… its page tree
 *   holds 4 page(s) where 5 can be read`
 */
export async function assertPdfEditableHere(bytes: Uint8Array, label: string, pageCount: number): Promise<void> {
  const reading = await readWithPdfLibHere(bytes);
  if ('error' in reading)
    throw new AppError(
      'VALIDATION',
      `${label} is not a valid PDF: ${reading.error.slice(0, 200) || 'it cannot be read'}`,
    );
  if (reading.pageCount !== pageCount) {
    throw new AppError(
      'VALIDATION',
      `${label} is not a valid PDF: its page tree holds ${reading.pageCount} page(s) where ${pageCount} can be read`,
    );
  }
}

/** The parse pool's `assertPdfEditable` task: assertPdfEditableHere in a worker (src/parse-pool/tasks.ts). */
export const assertPdfEditableTask = parseTask('assertPdfEditable', assertPdfEditableHere);

/** AppErrors pass; anything a PDF library threw becomes `<label> is not a valid PDF: <reason>` (422). */
export function invalidPdf(label: string, error: unknown): AppError {
  if (error instanceof AppError) return error;
  const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
  return new AppError('VALIDATION', `${label} is not a valid PDF: ${reason.slice(0, 200) || 'it cannot be read'}`, {
    cause: error,
  });
}

/**
 * Converts an area given in a request — PDF points from the top-left of the page as displayed,
 * `page` 1-based (DESIGN.md "area coordinates") — to fractions of that displayed page with `page`
 * 0-based (reference/docuseal-behaviour.md §12.1).
 *
 * Throws `AppError('VALIDATION')` naming `label` (e.g. `fields[0].areas[1]`) when a number is not
 * finite, x/y are negative, w/h are not positive, the page is not an integer within the document,
 * or the area does not fit on the page (half a point of slack for rounding).
 */
export function pointsToFractions(area: Area, pages: readonly PdfPage[], label: string): Area {
  for (const key of ['x', 'y', 'w', 'h', 'page'] as const) {
    if (typeof area[key] !== 'number' || !Number.isFinite(area[key])) {
      throw new AppError('VALIDATION', `${label}: ${key} must be a finite number`);
    }
  }
  if (!Number.isInteger(area.page) || area.page < 1 || area.page > pages.length) {
    throw new AppError(
      'VALIDATION',
      `${label}: page ${area.page} is out of range; the document has ${pages.length} page(s), numbered from 1`,
    );
  }
  if (area.x < 0 || area.y < 0) throw new AppError('VALIDATION', `${label}: x and y must not be negative`);
  if (area.w <= 0 || area.h <= 0) throw new AppError('VALIDATION', `${label}: w and h must be greater than 0`);
  const page = pages[area.page - 1];
  if (area.x + area.w > page.width + EPSILON_POINTS || area.y + area.h > page.height + EPSILON_POINTS) {
    throw new AppError(
      'VALIDATION',
      `${label}: the area (x ${area.x}, y ${area.y}, w ${area.w}, h ${area.h} points) does not fit on page ` +
        `${area.page}, ` +
        `which is ${round2(page.width)} × ${round2(page.height)} points as displayed`,
    );
  }
  // Clamp what the slack let through, so stored fractions stay within 0..1.
  const x = area.x / page.width;
  const y = area.y / page.height;
  return {
    x,
    y,
    w: Math.min(area.w / page.width, 1 - x),
    h: Math.min(area.h / page.height, 1 - y),
    page: area.page - 1,
  };
}

/**
 * The inverse of `pointsToFractions`: stored fractions (page 0-based) to points from the top-left
 * of the displayed page with `page` 1-based. Throws `AppError('VALIDATION')` naming `label` when
 * the page is not in `pages`.
 */
export function fractionsToPoints(area: Area, pages: readonly PdfPage[], label: string): Area {
  const page = pages[area.page];
  if (!Number.isInteger(area.page) || page === undefined) {
    throw new AppError(
      'VALIDATION',
      `${label}: page ${area.page} (0-based) is out of range; the document has ${pages.length} page(s)`,
    );
  }
  return {
    x: area.x * page.width,
    y: area.y * page.height,
    w: area.w * page.width,
    h: area.h * page.height,
    page: area.page + 1,
  };
}

/**
 * Maps an area in fractions of the displayed page (y from the top) to a rectangle in the page's
 * own unrotated PDF user space (points, y up) — what pdf-lib's `drawRectangle`/`drawText` take on
 * that page. Handles /Rotate 0/90/180/270 (the page turns clockwise when displayed, ISO 32000-1
 * §7.7.3.3) and visible boxes that do not start at (0, 0) (`cropBox`; without it the box is
 * taken to start at the origin). `area.page` is not used: the caller picks the page.
 */
export function fractionsToPdfRect(
  area: Omit<Area, 'page'> & { page?: number },
  page: PdfPage & { cropBox?: PdfBox },
): PdfRect {
  const toUser = displayToUserMatrix(page);
  const a = applyMatrix(toUser, area.x * page.width, area.y * page.height);
  const b = applyMatrix(toUser, (area.x + area.w) * page.width, (area.y + area.h) * page.height);
  return {
    x: Math.min(a[0], b[0]),
    y: Math.min(a[1], b[1]),
    width: Math.abs(b[0] - a[0]),
    height: Math.abs(b[1] - a[1]),
  };
}

/**
 * The affine matrix [a, b, c, d, e, f] (x' = a·x + c·y + e, y' = b·x + d·y + f) taking a point in
 * displayed-page points (origin top-left, y down) to the page's user space. With the visible box
 * [x0, y0, x1, y1]: /Rotate 0 → (x0 + x, y1 − y); 90 → (x0 + y, y0 + x); 180 → (x1 − x, y0 + y);
 * 270 → (x1 − y, y1 − x).
 */
export function displayToUserMatrix(
  page: PdfPage & { cropBox?: PdfBox },
): [number, number, number, number, number, number] {
  const quarterTurn = page.rotate === 90 || page.rotate === 270;
  const [x0, y0, x1, y1] = page.cropBox ?? [
    0,
    0,
    quarterTurn ? page.height : page.width,
    quarterTurn ? page.width : page.height,
  ];
  switch (page.rotate) {
    case 90:
      return [0, 1, 1, 0, x0, y0];
    case 180:
      return [-1, 0, 0, 1, x1, y0];
    case 270:
      return [0, -1, -1, 0, x1, y1];
    default:
      return [1, 0, 0, -1, x0, y1];
  }
}

function applyMatrix(m: readonly number[], x: number, y: number): [number, number] {
  return [m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]];
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

// --- mupdf helpers shared with text-tags.ts -------------------------------------------------

/**
 * A mupdf document written out as bytes of its own (copied out of mupdf's WASM heap, its buffer freed).
 * @param options mupdf's write options ("encrypt=none,garbage,compress")
 */
export function savePdf(doc: PDFDocument, options: string): Uint8Array {
  const buffer = doc.saveToBuffer(options);
  try {
    return buffer.asUint8Array().slice();
  } finally {
    buffer.destroy();
  }
}

/** Reads the streams of one file within a budget of bytes (PDF_LIMITS.streamBytes): see streamReader. */
export interface StreamReader {
  /** A stream's bytes as stored (still compressed). */
  raw(stream: PDFObject): Uint8Array;
  /** A stream's bytes decompressed. */
  decoded(stream: PDFObject): Uint8Array;
}

/**
 * A StreamReader charging every stream read to one budget: `limit` bytes in all, raw or
 * decompressed. A single stream is decompressed whole before it is counted; one larger than the
 * parse pool's memory limit fails on that limit first.
 * @param label names the file in messages (`file`)
 * @throws (from its reads) AppError VALIDATION `<label> holds more than 64 MB of stream data to
 *   read; at most 64 MB are read from one file.`
 */
export function streamReader(label: string, limit: number = PDF_LIMITS.streamBytes): StreamReader {
  let left = limit;
  const charge = (buffer: { asUint8Array(): Uint8Array; destroy(): void }) => {
    try {
      const bytes = buffer.asUint8Array();
      left -= bytes.length;
      if (left < 0) {
        const mb = Math.round(limit / 1024 / 1024);
        throw new AppError(
          'VALIDATION',
          `${label} holds more than ${mb} MB of stream data to read; at most ${mb} MB are read from one file.`,
        );
      }
      return bytes.slice();
    } finally {
      buffer.destroy();
    }
  };
  return { raw: (stream) => charge(stream.readRawStream()), decoded: (stream) => charge(stream.readStream()) };
}

/**
 * Opens PDF bytes with mupdf, or throws `AppError('VALIDATION')` naming `label` for empty input,
 * a missing `%PDF-` header, unparsable bytes, a user password, or more than PDF_LIMITS.objects
 * objects. The caller destroys the document. Runs in the parse pool's tasks (src/parse-pool/).
 */
export function openPdf(mupdf: Mupdf, bytes: Uint8Array, label: string): PDFDocument {
  if (!(bytes instanceof Uint8Array) || bytes.length === 0) {
    throw new AppError('VALIDATION', `${label} is empty`);
  }
  if (!hasPdfHeader(bytes)) {
    throw new AppError('VALIDATION', `${label} is not a PDF (no %PDF- header)`);
  }
  let doc: PDFDocument;
  try {
    doc = new mupdf.PDFDocument(bytes);
  } catch (error) {
    throw new AppError('VALIDATION', `${label} is not a valid PDF: its structure cannot be parsed`, { cause: error });
  }
  if (doc.needsPassword()) {
    doc.destroy();
    throw new AppError(
      'VALIDATION',
      `${label} is an encrypted PDF protected by a password; upload it without the password protection`,
    );
  }
  const objects = doc.countObjects();
  if (objects > PDF_LIMITS.objects) {
    doc.destroy();
    throw new AppError('VALIDATION', `${label} has ${objects} objects; at most ${PDF_LIMITS.objects} are accepted.`);
  }
  return doc;
}

/** ISO 32000-1 §7.5.2 puts `%PDF-` first; readers accept it within the first 1024 bytes. */
function hasPdfHeader(bytes: Uint8Array): boolean {
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 1024));
  return head.includes('%PDF-', 0, 'latin1');
}

/**
 * Displayed size, /Rotate and visible box of a loaded page, from its own dictionary: the CropBox
 * (inherited, clipped to the MediaBox) or the MediaBox, /Rotate normalised to 0/90/180/270.
 */
export function readPageGeometry(page: PDFPage): PdfPageInfo {
  const dict = page.getObject();
  const mediaBox = readBox(dict.getInheritable('MediaBox')) ?? ([0, 0, 612, 792] as PdfBox);
  const crop = readBox(dict.getInheritable('CropBox'));
  const clipped: PdfBox | undefined = crop && [
    Math.max(crop[0], mediaBox[0]),
    Math.max(crop[1], mediaBox[1]),
    Math.min(crop[2], mediaBox[2]),
    Math.min(crop[3], mediaBox[3]),
  ];
  const cropBox = clipped && clipped[2] > clipped[0] && clipped[3] > clipped[1] ? clipped : mediaBox;
  const rotate = normaliseRotate(dict.getInheritable('Rotate'));
  const w = cropBox[2] - cropBox[0];
  const h = cropBox[3] - cropBox[1];
  const quarterTurn = rotate === 90 || rotate === 270;
  return { width: quarterTurn ? h : w, height: quarterTurn ? w : h, rotate, cropBox };
}

function readBox(obj: PDFObject): PdfBox | undefined {
  if (obj.isNull()) return undefined; // a missing key (PDFObject.Null cannot be resolved)
  const box = obj.resolve();
  if (!box.isArray() || box.length !== 4) return undefined;
  const values: number[] = [];
  for (let i = 0; i < 4; i += 1) {
    const item = box.get(i).resolve();
    if (!item.isNumber()) return undefined;
    values.push(item.asNumber());
  }
  const [ax, ay, bx, by] = values;
  if (!values.every(Number.isFinite) || ax === bx || ay === by) return undefined;
  return [Math.min(ax, bx), Math.min(ay, by), Math.max(ax, bx), Math.max(ay, by)];
}

/** /Rotate must be a multiple of 90 (§7.7.3.3); other values are rounded to the nearest quarter. */
function normaliseRotate(obj: PDFObject): PageRotation {
  if (obj.isNull()) return 0;
  const value = obj.resolve();
  if (!value.isNumber()) return 0;
  const quarter = Math.round(value.asNumber() / 90);
  return ((((quarter % 4) + 4) % 4) * 90) as PageRotation;
}
