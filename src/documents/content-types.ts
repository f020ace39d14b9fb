/**
 * The type of an uploaded file by its bytes, not by what the sender claims (issue 23; docs/security.md
 * "Signer uploads"): the signing form's uploads of type `file` (src/signing-form/attachments.ts).
 * Images meant to be drawn (signature, initials, image) are decoded instead
 * (./drawable-image.ts), which says more than a signature can.
 *
 * Library: `file-type` (sindresorhus; ESM, no native code), which reads a file's signature — its
 * magic bytes, and for ZIP and OLE containers the entries that tell DOCX from XLSX or a JAR —
 * from the first bytes it needs, for ~180 formats. DocuSeal stores what ActiveStorage's Marcel
 * finds the same way (magic bytes first, the declared type only where the bytes say nothing), so a
 * DocuSeal client sees the same kind of `content_type`; Signet differs in one point
 * (docs/compatibility.md): a file whose claimed type or extension is a format with a signature,
 * whose bytes do not carry it, is `application/octet-stream`, where Marcel keeps the claim.
 */
import { fileTypeFromBuffer, supportedExtensions, supportedMimeTypes } from 'file-type';
import { DANGEROUS_EXTENSIONS, extensionOf } from './file-names.ts';

const OCTET_STREAM = 'application/octet-stream';

/**
 * Containers whose detected type is less than the sender's: an OLE file is a .doc, .xls, .msg …
 * that file-type names only `application/x-cfb`; a ZIP may be a format it does not know.
 */
const CONTAINER_TYPES: ReadonlySet<string> = new Set(['application/zip', 'application/x-cfb']);

/** Other spellings of the extensions file-type names (it says `jpg` and `tif`). */
const EXTENSION_ALIASES: Readonly<Record<string, string>> = { jpeg: 'jpg', jpe: 'jpg', jfif: 'jpg', tiff: 'tif' };

/** What an upload's bytes are. */
export interface SniffedType {
  /** The MIME type to store and serve it as (module comment; sniffUpload). */
  contentType: string;
  /**
   * When the bytes are a program or a disk image (an extension of file-names.ts
   * DANGEROUS_EXTENSIONS, or a Mach-O binary, which macOS names without one): its extension, to
   * refuse the file as its name would be ("File type '.exe' is not allowed."); else null.
   */
  refusedExtension: string | null;
}

/**
 * The type of an uploaded file from its bytes:
 * - bytes file-type recognises: their type (`application/pdf`, `image/png`, DOCX's …), whatever
 *   was claimed; for an OLE or ZIP container, the declared type instead when it is a specific
 *   `application/` type file-type does not detect (`application/msword` for a .doc);
 * - bytes it does not recognise (text, CSV, unknown formats): the declared type, unless the
 *   declared type or the file name's extension claims a format file-type would have recognised
 *   (a `.png`, `application/pdf`, `image/gif` …): then `application/octet-stream`.
 * Reads at most the few kilobytes the format's signature needs; no decoding.
 * @param claim.declared the MIME type the sender declared (lower case), or application/octet-stream
 * @param claim.filename the file's name as it will be stored
 */
export async function sniffUpload(
  bytes: Uint8Array,
  claim: { declared: string; filename: string },
): Promise<SniffedType> {
  const detected = await fileTypeFromBuffer(bytes);
  if (detected) {
    const refused = DANGEROUS_EXTENSIONS.has(detected.ext) || detected.ext === 'macho' ? detected.ext : null;
    const keepDeclared =
      CONTAINER_TYPES.has(detected.mime) &&
      claim.declared !== OCTET_STREAM &&
      claim.declared.startsWith('application/') &&
      !supportedMimeTypes.has(claim.declared);
    return { contentType: keepDeclared ? claim.declared : detected.mime, refusedExtension: refused };
  }
  const extension = extensionOf(claim.filename);
  const claimsSignature =
    supportedMimeTypes.has(claim.declared) || supportedExtensions.has(EXTENSION_ALIASES[extension] ?? extension);
  return { contentType: claimsSignature ? OCTET_STREAM : claim.declared, refusedExtension: null };
}
