/**
 * A PDF upload made ready to keep, in one task of the parse pool (src/parse-pool/): read and
 * checked the way every later step reads it (pdf.ts readUploadedPdf: mupdf opens it and loads
 * every page; a repaired or owner-password file is kept as mupdf's rewrite), its form flattened
 * when asked, its text tags found and removed (text-tags.ts extractTextTags), and the bytes kept
 * read by pdf-lib, which draws on them at completion (pdf.ts assertPdfEditableHere). One task, so
 * the bytes cross to the worker once and the whole read is bounded by one time and memory limit.
 */
import { ownBytes, runParseTask } from '../parse-pool/pool.ts';
import { parseTask } from '../parse-pool/tasks.ts';
import { assertPdfEditableHere, flattenPdfForm, type PdfPageInfo, readUploadedPdf } from './pdf.ts';
import { extractTextTags, type TextTagField } from './text-tags.ts';

/** What a create request asks of its PDFs (POST /templates/pdf, /templates/docx, /submissions/pdf, …; OpenAPI). */
export interface UploadedPdfOptions {
  /** `remove_tags`: false keeps the text tags printed (default true). */
  removeTags?: boolean | undefined;
  /** `flatten`: true draws the PDF form fields into the pages and removes them. */
  flatten?: boolean | undefined;
}

/** An upload as it will be stored. */
export interface UploadedPdf {
  /** The bytes to keep: the upload itself, or mupdf's rewrite (repaired, flattened, tags removed). */
  pdf: Uint8Array;
  /** The pages as displayed. */
  pages: PdfPageInfo[];
  /** The text tags found, as fields (text-tags.ts). */
  fields: TextTagField[];
}

/**
 * An uploaded PDF made ready to keep, in the parse pool (see the module comment).
 * @param bytes the upload, handed over to the parse pool's worker: the caller uses the answer's
 *   `pdf` afterwards, not these
 * @param label names the document in messages (`documents[0]`)
 * @param owner whose task it is in the parse pool's fair queue (an account id)
 * @throws AppError VALIDATION (422) as readUploadedPdf, flattenPdfForm, extractTextTags and
 *   `<label> is not a valid PDF: <pdf-lib's reason>` / `… its page tree holds 4 page(s) where 5 can be
 *   read`; the parse pool's limits (`<label> could not be read within 20 s (PARSE_TIMEOUT_SECONDS).`, …)
 */
export async function prepareUploadedPdf(
  bytes: Uint8Array,
  label: string,
  options: UploadedPdfOptions,
  owner: string | number,
): Promise<UploadedPdf> {
  const input = ownBytes(bytes);
  return runParseTask(prepareUploadedPdfTask, [input, label, options], { owner, subject: label, transfer: [input] });
}

/**
 * prepareUploadedPdf on the calling thread: the parse pool's `prepareUploadedPdf` task
 * (src/parse-worker/worker.ts).
 */
export async function prepareUploadedPdfHere(
  original: Uint8Array,
  label: string,
  options: UploadedPdfOptions,
): Promise<UploadedPdf> {
  const read = await readUploadedPdf(original, label);
  const { pages } = read.info;
  // Flattening keeps the pages as they are (their content gains the widgets' appearances).
  const pdf = options.flatten ? await flattenPdfForm(read.pdf, label) : read.pdf;
  const tags = await extractTextTags(pdf, { label, removeTags: options.removeTags });
  // The bytes kept are what pdf-lib will draw on.
  await assertPdfEditableHere(tags.pdf, label, pages.length);
  return { pdf: tags.pdf, pages, fields: tags.fields };
}

/** The parse pool's `prepareUploadedPdf` task: prepareUploadedPdfHere in a worker (src/parse-pool/tasks.ts). */
export const prepareUploadedPdfTask = parseTask('prepareUploadedPdf', prepareUploadedPdfHere);
