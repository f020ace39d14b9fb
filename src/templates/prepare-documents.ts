/**
 * From the `documents` of a create request to PreparedDocuments: load each file (base64 or URL),
 * convert DOCX/HTML to PDF, read the pages, find and remove text tags (or HTML field tags).
 * Every problem is a 422 naming the document, and nothing is stored here.
 */
import { z } from 'zod';
import type { Config } from '../config.ts';
import { loadFileInput } from '../documents/load-file-input.ts';
import { prepareUploadedPdf, type UploadedPdfOptions } from '../documents/uploaded-pdf.ts';
import { AppError } from '../errors.ts';
import { type HtmlFieldTag, type PaperSize, parsePaperSize, type Renderer } from '../rendering/renderer.ts';
import type { RequestFieldGroup, TaggedField } from './build-fields.ts';
import type { PreparedDocument } from './save-template.ts';
import { documentOrder } from './template-requests.ts';

/** A create request's options for its PDFs (`remove_tags`, `flatten`): uploaded-pdf.ts's. */
export type PdfOptions = UploadedPdfOptions;

export interface PrepareDeps {
  config: Pick<Config, 'downloadAllowPrivate' | 'downloadMaxBytes' | 'downloadTimeout'>;
  renderer: Renderer;
  /** The account the documents are for: its parses take their turns in the parse pool (src/parse-pool/). */
  accountId: number;
}

/**
 * The `documents` array of a request: present, non-empty, objects. `dynamic: true` (OpenAPI POST
 * /templates/docx: the DOCX stays editable in DocuSeal's editor, with [[variables]]) is refused:
 * Signet keeps every document as a PDF, so it could only be ignored.
 */
function documentList(documents: unknown): Record<string, unknown>[] {
  if (documents === undefined || documents === null) throw new AppError('VALIDATION', 'documents is required.');
  if (!Array.isArray(documents)) throw new AppError('VALIDATION', 'documents must be an array.');
  if (documents.length === 0) throw new AppError('VALIDATION', 'documents must not be empty.');
  return documents.map((doc, i) => {
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
      throw new AppError('VALIDATION', `\`documents[${i}]\` must be an object.`);
    if ((doc as { dynamic?: unknown }).dynamic === true)
      throw new AppError(
        'VALIDATION',
        `dynamic is not supported in \`documents[${i}]\`: documents are kept as PDF (no editable content, ` +
          'no [[variables]]).',
      );
    return doc as Record<string, unknown>;
  });
}

function documentName(doc: Record<string, unknown>, index: number, fallback: string): string {
  const name = doc.name;
  if (name === undefined || name === null || name === '') return fallback;
  if (typeof name !== 'string') throw new AppError('VALIDATION', `name must be a string in \`documents[${index}]\`.`);
  return name.trim().replace(/\.(pdf|docx)$/i, '') || fallback;
}

/**
 * HTML field tags as tagged fields; `<datenow-field>` is a readonly date defaulting to the signing
 * date, as DocuSeal stores `datenow` (reference §11).
 */
function htmlTagged(fields: HtmlFieldTag[]): TaggedField[] {
  return fields.map((f) => {
    const datenow = f.type === 'datenow';
    return {
      name: f.name,
      type: datenow ? 'date' : f.type,
      role: f.role,
      required: f.required,
      readonly: datenow || f.readonly,
      defaultValue: datenow ? '{{date}}' : f.defaultValue,
      options: f.options,
      preferences: {},
      areas: [f.area],
    };
  });
}

/**
 * A PDF's bytes to a PreparedDocument, in one task of the parse pool (uploaded-pdf.ts
 * prepareUploadedPdf): read and checked (a repaired or owner-password file is kept as a clean
 * rewrite), its form flattened when asked (PdfOptions), text tags found and removed (unless
 * `removeTags` is false), and the bytes kept checked with pdf-lib, which draws on them at completion.
 */
async function fromPdf(
  deps: Pick<PrepareDeps, 'accountId'>,
  original: Uint8Array,
  name: string,
  label: string,
  extraTagged: TaggedField[] = [],
  options: PdfOptions = {},
): Promise<PreparedDocument> {
  const { pdf, pages, fields } = await prepareUploadedPdf(original, label, options, deps.accountId);
  const tagged: TaggedField[] = fields.map((f) => ({
    name: f.name,
    type: f.type,
    role: f.role,
    required: f.required,
    readonly: f.readonly,
    defaultValue: f.defaultValue,
    options: f.options,
    preferences: f.preferences,
    areas: f.areas,
  }));
  return { name, label, pdf, pages, tagged: [...extraTagged, ...tagged] };
}

async function loadFile(deps: PrepareDeps, doc: Record<string, unknown>, index: number) {
  return loadFileInput(doc.file, {
    field: `file in \`documents[${index}]\``,
    allowPrivate: deps.config.downloadAllowPrivate,
    maxBytes: deps.config.downloadMaxBytes,
    timeoutMs: deps.config.downloadTimeout,
  });
}

/**
 * `POST /templates/pdf` documents: `[{name, file: base64 | URL, fields?}]`, in request order (see inDocumentOrder).
 * @throws AppError VALIDATION (missing/invalid documents, not a PDF, corrupt or encrypted, bad tags)
 */
export async function preparePdfDocuments(
  deps: PrepareDeps,
  documents: unknown,
  options: PdfOptions = {},
): Promise<PreparedDocument[]> {
  const list = documentList(documents);
  const prepared: PreparedDocument[] = [];
  for (const [i, doc] of list.entries()) {
    const { bytes } = await loadFile(deps, doc, i);
    prepared.push(
      await fromPdf(deps, bytes, documentName(doc, i, `Document ${i + 1}`), `documents[${i}]`, [], options),
    );
  }
  return prepared;
}

/**
 * `POST /templates/docx` documents: DOCX converted to PDF by the renderer, then as PDF.
 * @throws AppError VALIDATION (not a DOCX), UNAVAILABLE (no DOCX renderer)
 */
export async function prepareDocxDocuments(
  deps: PrepareDeps,
  documents: unknown,
  options: PdfOptions = {},
): Promise<PreparedDocument[]> {
  const list = documentList(documents);
  const prepared: PreparedDocument[] = [];
  for (const [i, doc] of list.entries()) {
    const { bytes, filename } = await loadFile(deps, doc, i);
    // A DOCX is a ZIP archive: "PK\x03\x04".
    if (bytes.length < 4 || bytes.readUInt32LE(0) !== 0x04034b50) {
      throw new AppError('VALIDATION', `file in \`documents[${i}]\` is not a DOCX document.`);
    }
    const name = documentName(doc, i, `Document ${i + 1}`);
    const pdf = await deps.renderer.docxToPdf({
      docx: bytes,
      filename: filename ?? `${name}.docx`,
      owner: deps.accountId,
    });
    prepared.push(await fromPdf(deps, pdf, name, `documents[${i}]`, [], options));
  }
  return prepared;
}

/** A document of `documents`; the one-off request's may carry its own header, footer and size (OpenAPI). */
const HtmlDocument = z.object({
  html: z.string({ error: 'html is required' }).min(1, 'html is required'),
  name: z.string().optional(),
  html_header: z.string().optional(),
  html_footer: z.string().optional(),
  size: z.string().optional(),
});

/**
 * `POST /templates/html`: top-level `html` (one document) or `documents[{html, name}]`; header and
 * footer on every page; paper size. HTML field tags become fields. A document's own
 * `html_header`, `html_footer` and `size` (`POST /submissions/html`) take the place of the
 * request's for that document.
 * @throws AppError VALIDATION (no html, bad field tags, an unknown size), UNAVAILABLE (no HTML renderer)
 */
export async function prepareHtmlDocuments(
  deps: PrepareDeps,
  input: {
    html?: unknown;
    documents?: unknown;
    header?: string | undefined;
    footer?: string | undefined;
    size: PaperSize;
    name: string;
  },
): Promise<PreparedDocument[]> {
  const sources: {
    html: string;
    name: string;
    label: string;
    header?: string | undefined;
    footer?: string | undefined;
    size?: PaperSize;
  }[] = [];
  if (
    input.documents !== undefined &&
    input.documents !== null &&
    !(Array.isArray(input.documents) && input.documents.length === 0)
  ) {
    documentList(input.documents).forEach((doc, i) => {
      const parsed = HtmlDocument.safeParse(doc);
      if (!parsed.success)
        throw new AppError('VALIDATION', `${parsed.error.issues[0]!.message} in \`documents[${i}]\`.`);
      sources.push({
        html: parsed.data.html,
        name: parsed.data.name?.trim() || `${input.name}${i ? ` ${i + 1}` : ''}`,
        label: `documents[${i}]`,
        header: parsed.data.html_header,
        footer: parsed.data.html_footer,
        ...(parsed.data.size !== undefined ? { size: parsePaperSize(parsed.data.size) } : {}),
      });
    });
  } else {
    if (typeof input.html !== 'string' || input.html.trim() === '')
      throw new AppError('VALIDATION', 'html is required.');
    sources.push({ html: input.html, name: input.name, label: 'html' });
  }
  const prepared: PreparedDocument[] = [];
  for (const source of sources) {
    const { pdf, fields } = await deps.renderer.htmlToPdf({
      html: source.html,
      header: source.header ?? input.header,
      footer: source.footer ?? input.footer,
      size: source.size ?? input.size,
    });
    prepared.push(await fromPdf(deps, pdf, source.name, source.label, htmlTagged(fields)));
  }
  return prepared;
}

/**
 * Prepared documents (in request order) and the request's fields put in the documents' order
 * (`documents[].position`, documentOrder): a document's own fields (`documents[i].fields`) go with
 * it; top-level `fields` count pages across the documents in their new order, as they are stored.
 * Messages keep naming the request's places (`documents[i]`).
 */
export function inDocumentOrder(
  prepared: PreparedDocument[],
  requested: readonly { position?: number | undefined }[],
  requestFields: RequestFieldGroup[] = [],
): { documents: PreparedDocument[]; requestFields: RequestFieldGroup[] } {
  // The top-level `html` of POST /templates/html is one document without an entry in `documents`.
  const order = documentOrder(prepared.map((_doc, i) => requested[i] ?? {}));
  const moved = new Map(order.map((from, to) => [from, to]));
  return {
    documents: order.map((from) => prepared[from]!),
    requestFields: requestFields.map((group) =>
      group.documentIndex === undefined ? group : { ...group, documentIndex: moved.get(group.documentIndex)! },
    ),
  };
}

/**
 * One document of `PUT /templates/{id}/documents`: `file` (a PDF or a DOCX, told apart by
 * content) or `html`. Name default: a random uuid (OpenAPI).
 * @throws AppError VALIDATION (neither file nor html, not a PDF or DOCX, bad tags), UNAVAILABLE
 */
export async function prepareChangedDocument(
  deps: PrepareDeps,
  doc: { name?: string | undefined; file?: string | undefined; html?: string | undefined },
  index: number,
): Promise<PreparedDocument> {
  const label = `documents[${index}]`;
  const name = doc.name?.trim().replace(/\.(pdf|docx)$/i, '') || crypto.randomUUID();
  if (doc.html) {
    const { pdf, fields } = await deps.renderer.htmlToPdf({ html: doc.html, size: 'Letter' });
    return fromPdf(deps, pdf, name, label, htmlTagged(fields));
  }
  if (!doc.file) throw new AppError('VALIDATION', `file or html is required in \`${label}\`.`);
  const { bytes, filename } = await loadFile(deps, doc as Record<string, unknown>, index);
  if (bytes.subarray(0, 1024).includes('%PDF-')) return fromPdf(deps, bytes, name, label);
  if (bytes.length >= 4 && bytes.readUInt32LE(0) === 0x04034b50) {
    const pdf = await deps.renderer.docxToPdf({
      docx: bytes,
      filename: filename ?? `${name}.docx`,
      owner: deps.accountId,
    });
    return fromPdf(deps, pdf, name, label);
  }
  throw new AppError('VALIDATION', `file in \`${label}\` is neither a PDF nor a DOCX document.`);
}
