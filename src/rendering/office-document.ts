/**
 * Checks shared by both renderers before an office document is converted (createRenderer runs
 * them before a conversion takes its turn, whichever engine converts).
 *
 * A DOCX or ODT is a ZIP archive, and a small one can inflate to gigabytes (a "zip bomb": 1 MB
 * that became 1 GB of XML drove LibreOffice to 7.8 GB of memory, issue 12). Its entry count and
 * sizes are read from the central directory with yauzl — a maintained ZIP reader with no
 * dependencies, which reads the central directory rather than trusting local headers, handles
 * ZIP64, and, with `validateEntrySizes`, fails an entry as soon as its inflated bytes exceed the
 * size the directory declares. Every entry is then inflated (and thrown away) through that check,
 * so an archive whose directory lies about its sizes (the bench's bomb declares 0 bytes) is
 * caught after the declared bytes, never after gigabytes. The check runs in the parse pool
 * (src/parse-pool/: the directory's parsing and the streams' handling off the event loop; the
 * inflating itself on libuv's thread pool), the total bounded by the limit.
 */
import path from 'node:path';
import yauzl from 'yauzl';
import { AppError } from '../errors.ts';
import { ownBytes, runParseTask } from '../parse-pool/pool.ts';
import { parseTask } from '../parse-pool/tasks.ts';

const OFFICE_EXTENSIONS = new Set(['docx', 'doc', 'odt', 'rtf']);

/** DOCX_MAX_UNCOMPRESSED_MB and DOCX_MAX_ENTRIES (src/config.ts). */
export interface OfficeArchiveLimits {
  /** Largest sum of the entries' inflated sizes, in bytes. */
  maxUncompressedBytes: number;
  /** Most entries in the archive. */
  maxEntries: number;
}

/**
 * The extension a converter is handed the file under: the filename's when it is .docx, .doc,
 * .odt or .rtf (LibreOffice and Gotenberg pick the import filter by it), else "docx".
 */
export function officeExtension(filename: string): string {
  const extension = path.extname(filename).slice(1).toLowerCase();
  return OFFICE_EXTENSIONS.has(extension) ? extension : 'docx';
}

const isZip = (bytes: Buffer) => bytes.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x03, 0x04]));

/**
 * Refuses bytes that are no office document, or an archive over the limits, before a converter
 * starts: DOCX and ODT are ZIP packages (checked with `assertArchiveWithinLimits`), .doc an OLE
 * compound file, RTF starts with "{\rtf" (neither is compressed, so neither inflates). In the parse pool.
 * @param owner whose task it is in the parse pool's fair queue (an account id)
 * @throws AppError VALIDATION (422) naming `filename`; the parse pool's limits
 */
export async function assertOfficeDocument(
  bytes: Buffer,
  filename: string,
  limits: OfficeArchiveLimits,
  owner: string | number,
): Promise<void> {
  await runParseTask(assertOfficeDocumentTask, [ownBytes(bytes), filename, limits], {
    owner,
    subject: filename || 'The document',
  });
}

/** assertOfficeDocument on the calling thread: the parse pool's task of that name (src/parse-worker/worker.ts). */
export async function assertOfficeDocumentHere(
  input: Uint8Array,
  filename: string,
  limits: OfficeArchiveLimits,
): Promise<void> {
  const bytes = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  const name = filename || 'The document';
  if (bytes.length === 0) throw new AppError('VALIDATION', `${name} is empty.`);
  const ole = bytes.subarray(0, 8).equals(Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]));
  const rtf = bytes.subarray(0, 5).toString('latin1') === '{\\rtf';
  if (isZip(bytes)) return assertArchiveWithinLimits(bytes, name, limits);
  if (!ole && !rtf) throw new AppError('VALIDATION', `${name} is not a Word document (DOCX).`);
}

/** The parse pool's `assertOfficeDocument` task: assertOfficeDocumentHere in a worker (src/parse-pool/tasks.ts). */
export const assertOfficeDocumentTask = parseTask('assertOfficeDocument', assertOfficeDocumentHere);

/**
 * Checks a ZIP archive (DOCX, ODT) against the limits: the entry count and the declared inflated
 * sizes from the central directory first, then every entry inflated through yauzl's size check,
 * with a running total, so a directory that understates a size fails at that entry.
 *
 * Errors (AppError VALIDATION, 422; `name` is the file name):
 * - `<name> has <n> entries; at most <max> are accepted (DOCX_MAX_ENTRIES).`
 * - `<name> inflates to more than <mb> MB; at most <mb> MB are accepted (DOCX_MAX_UNCOMPRESSED_MB).`
 * - `<name> is not a valid DOCX archive: <reason>.` — unreadable directory, an entry whose data
 *   does not match its declared size ("too many bytes in the stream"), encryption or an unknown
 *   compression method.
 */
export async function assertArchiveWithinLimits(
  bytes: Buffer,
  name: string,
  limits: OfficeArchiveLimits,
): Promise<void> {
  const limitMb = formatMb(limits.maxUncompressedBytes);
  const tooLarge = () =>
    new AppError(
      'VALIDATION',
      `${name} inflates to more than ${limitMb} MB; at most ${limitMb} MB are accepted (DOCX_MAX_UNCOMPRESSED_MB).`,
      {
        details: { limit: 'DOCX_MAX_UNCOMPRESSED_MB', maxBytes: limits.maxUncompressedBytes },
      },
    );
  const invalid = (reason: string, cause?: unknown) =>
    new AppError('VALIDATION', `${name} is not a valid DOCX archive: ${reason.replace(/\.$/, '')}.`, { cause });

  let zip: yauzl.ZipFile;
  try {
    zip = await yauzl.fromBufferPromise(bytes, { validateEntrySizes: true, strictFileNames: false });
  } catch (error) {
    throw invalid((error as Error).message, error);
  }
  if (zip.entryCount > limits.maxEntries) {
    throw new AppError(
      'VALIDATION',
      `${name} has ${zip.entryCount} entries; at most ${limits.maxEntries} are accepted (DOCX_MAX_ENTRIES).`,
      {
        details: { limit: 'DOCX_MAX_ENTRIES', entries: zip.entryCount, maxEntries: limits.maxEntries },
      },
    );
  }
  // The whole directory first: a declared total over the limit is refused without inflating.
  const entries: yauzl.Entry[] = [];
  let declared = 0;
  try {
    for await (const entry of zip.eachEntry()) {
      entries.push(entry);
      declared += entry.uncompressedSize;
      if (declared > limits.maxUncompressedBytes) throw tooLarge();
    }
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw invalid((error as Error).message, error);
  }
  let inflated = 0;
  for (const entry of entries) {
    if (entry.fileName.endsWith('/')) continue; // a directory
    if (!entry.canDecodeFileData())
      throw invalid(`entry "${entry.fileName}" is encrypted or uses an unsupported compression method`);
    try {
      const stream = await zip.openReadStreamPromise(entry);
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        inflated += chunk.length;
        if (inflated > limits.maxUncompressedBytes) {
          stream.destroy();
          throw tooLarge();
        }
      }
    } catch (error) {
      if (error instanceof AppError) throw error;
      throw invalid(`entry "${entry.fileName}": ${(error as Error).message}`, error);
    }
  }
}

function formatMb(bytes: number): string {
  return String(Math.round((bytes / 1024 / 1024) * 10) / 10);
}
