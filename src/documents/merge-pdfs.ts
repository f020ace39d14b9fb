/**
 * Several PDFs into one, pages in the order given: `POST /tools/merge` (DocuSeal's
 * app/controllers/api/tools_controller.rb#merge and lib/pdf_utils.rb, reference/docuseal-behaviour.md
 * §1.2), the GraphQL `mergePdfs` query, a template's `merge_documents` and a submission's merged
 * and combined PDFs.
 *
 * Library: mupdf's page grafting, the same parser every uploaded PDF goes through, so a damaged
 * file is read — or refused — as an upload would be. The pages of one file are grafted through one
 * graft map (pdf_graft_map: a source object already copied is not copied again), so what the pages
 * of a file share — a content stream, fonts, images — is copied once, not once per page: issue 23's
 * 50 files of 40 pages drawing one 600 KB stream copied 1.2 GB before, 30 MB now. The result is
 * written compressed and garbage-collected (objects of a source not used by any page are left out).
 * The merge runs in the parse pool (src/parse-pool/), bounded by its time and memory limits.
 */
import { AppError } from '../errors.ts';
import { bytesOf, ownBytes, runParseTask, type TaskBytes } from '../parse-pool/pool.ts';
import { parseTask } from '../parse-pool/tasks.ts';
import { loadMupdf, openPdf, savePdf } from './pdf.ts';

/** Files one merge takes. */
export const MAX_MERGED_FILES = 50;
/** Pages of the merged document: the size of work one request may cause. */
export const MAX_MERGED_PAGES = 2_000;

/**
 * Merges PDFs, in the parse pool.
 * @param files the PDFs, in order: bytes, or base64 decoded in the worker
 * @param options.owner whose task it is in the parse pool's fair queue (an account id); default `system`
 * @returns the merged PDF's bytes
 * @throws AppError VALIDATION (422) with DocuSeal's texts: `Files are required` (none),
 *   `At least 2 files are required` (one); `files[i] ...` for a file that is not a readable PDF or
 *   has more than PDF_LIMITS.objects objects, and for more than MAX_MERGED_FILES files or
 *   MAX_MERGED_PAGES pages; the parse pool's limits (`The files could not be merged within 20 s
 *   (PARSE_TIMEOUT_SECONDS).`, `… within 512 MB of memory (PARSE_MEMORY_MB).`)
 */
export async function mergePdfs(
  files: readonly TaskBytes[],
  options: { owner?: string | number } = {},
): Promise<Buffer> {
  if (files.length === 0) throw new AppError('VALIDATION', 'Files are required');
  if (files.length < 2) throw new AppError('VALIDATION', 'At least 2 files are required');
  if (files.length > MAX_MERGED_FILES)
    throw new AppError('VALIDATION', `At most ${MAX_MERGED_FILES} files can be merged at once`);
  const merged = await runParseTask(
    mergePdfsTask,
    [files.map((file) => (file instanceof Uint8Array ? ownBytes(file) : file))],
    { owner: options.owner ?? 'system', subject: 'The files', verb: 'merged' },
  );
  return Buffer.from(merged.buffer, merged.byteOffset, merged.byteLength);
}

/**
 * mergePdfs on the calling thread: the parse pool's `mergePdfs` task (src/parse-worker/worker.ts).
 * @throws as mergePdfs, but the pool's limits
 */
export async function mergePdfsHere(files: readonly TaskBytes[]): Promise<Uint8Array> {
  const mupdf = await loadMupdf();
  const merged = new mupdf.PDFDocument();
  try {
    let pages = 0;
    for (const [index, file] of files.entries()) {
      const label = `files[${index}]`;
      const source = openPdf(mupdf, bytesOf(file), label);
      // One map per source: objects its pages share are copied into the merged document once.
      const map = merged.newGraftMap();
      try {
        const count = source.countPages();
        if (count === 0) throw new AppError('VALIDATION', `${label} is a PDF with no pages`);
        pages += count;
        if (pages > MAX_MERGED_PAGES)
          throw new AppError('VALIDATION', `The merged document would have more than ${MAX_MERGED_PAGES} pages`);
        for (let page = 0; page < count; page += 1) map.graftPage(-1, source, page);
      } catch (error) {
        if (error instanceof AppError) throw error;
        throw new AppError('VALIDATION', `${label} is not a valid PDF: its pages cannot be read`, { cause: error });
      } finally {
        map.destroy();
        source.destroy();
      }
    }
    return savePdf(merged, 'compress,garbage');
  } finally {
    merged.destroy();
  }
}

/** The parse pool's `mergePdfs` task: mergePdfsHere in a worker (src/parse-pool/tasks.ts). */
export const mergePdfsTask = parseTask('mergePdfs', mergePdfsHere);
