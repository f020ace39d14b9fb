/**
 * Several PDFs into one, pages in the order given: `POST /tools/merge` (DocuSeal's
 * app/controllers/api/tools_controller.rb#merge and lib/pdf_utils.rb, reference/docuseal-behaviour.md
 * §1.2) and the GraphQL `mergePdfs` query.
 *
 * Library: mupdf's page grafting (pdf_graft_page: each page is copied with the objects it uses,
 * shared resources once per source file), the same parser every uploaded PDF goes through, so a
 * damaged file is read — or refused — as an upload would be. The result is written compressed
 * and garbage-collected (objects of a source not used by any page are left out).
 */
import { AppError } from '../errors.ts';
import { loadMupdf, openPdf, savePdf } from './pdf.ts';

/** Files one merge takes. */
export const MAX_MERGED_FILES = 50;
/** Pages of the merged document: the size of work one request may cause. */
export const MAX_MERGED_PAGES = 2_000;

/**
 * Merges PDFs.
 * @param files the PDFs' bytes, in order
 * @returns the merged PDF's bytes
 * @throws AppError VALIDATION (422) with DocuSeal's texts: `Files are required` (none),
 *   `At least 2 files are required` (one); `files[i] ...` for a file that is not a readable PDF,
 *   and for more than MAX_MERGED_FILES files or MAX_MERGED_PAGES pages
 */
export async function mergePdfs(files: readonly Uint8Array[]): Promise<Buffer> {
  if (files.length === 0) throw new AppError('VALIDATION', 'Files are required');
  if (files.length < 2) throw new AppError('VALIDATION', 'At least 2 files are required');
  if (files.length > MAX_MERGED_FILES)
    throw new AppError('VALIDATION', `At most ${MAX_MERGED_FILES} files can be merged at once`);
  const mupdf = await loadMupdf();
  const merged = new mupdf.PDFDocument();
  try {
    let pages = 0;
    for (const [index, bytes] of files.entries()) {
      const label = `files[${index}]`;
      const source = openPdf(mupdf, bytes, label);
      try {
        const count = source.countPages();
        if (count === 0) throw new AppError('VALIDATION', `${label} is a PDF with no pages`);
        pages += count;
        if (pages > MAX_MERGED_PAGES)
          throw new AppError('VALIDATION', `The merged document would have more than ${MAX_MERGED_PAGES} pages`);
        for (let page = 0; page < count; page += 1) merged.graftPage(-1, source, page);
      } catch (error) {
        if (error instanceof AppError) throw error;
        throw new AppError('VALIDATION', `${label} is not a valid PDF: its pages cannot be read`, { cause: error });
      } finally {
        source.destroy();
      }
    }
    const bytes = savePdf(merged, 'compress,garbage');
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  } finally {
    merged.destroy();
  }
}
