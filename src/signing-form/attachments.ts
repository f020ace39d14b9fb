/**
 * Files a signer uploads from the form (POST /api/attachments, docs/signing-form.md "Uploads";
 * DocuSeal's `Submitters.create_attachment!`, reference/docuseal-behaviour.md §1.1): signature
 * and initials images (refused when blank), images and other files for image/file fields. Each
 * is a StoredFile of the signer's account whose `submitter_id` names the signer, so only that
 * signer's form can use its uuid as a value (field-values.ts checkAttachments). A typed
 * signature arrives as its text (`typed_text`) and is rendered here (createTypedSignatureAttachment).
 *
 * Bounded per signer (issue 23; docs/security.md "Signer uploads"): at most SIGNER_UPLOADS_MAX_FILES
 * files and SIGNER_UPLOADS_MAX_MB in all, counted under the submitter's row lock in the transaction
 * that inserts the row (src/db/queries/signer-uploads.ts), so uploads at once cannot pass together;
 * a file's type is read from its bytes (src/documents/content-types.ts); uploads no value uses are
 * removed by the sweep (./sweep-signer-uploads.ts).
 */
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import {
  countSignerUploads,
  lockAndCountSignerUploads,
  type SignerUploadTotals,
} from '../db/queries/signer-uploads.ts';
import { sniffUpload } from '../documents/content-types.ts';
import type { FileUrlSigner } from '../documents/file-urls.ts';
import type { FileStorage } from '../documents/storage.ts';
import { baseFilename, dangerousExtensionOf, extensionOf } from '../documents/file-names.ts';
import { storeFile, type StoreFileGuard } from '../documents/store-file.ts';
import { AppError } from '../errors.ts';
import { findSignerBySlug, formStateOf } from './form-state.ts';
import { readDrawableImage, UnreadableImageError, type ImageLimits } from '../documents/drawable-image.ts';
import { renderTypedSignature } from '../documents/typed-signature.ts';

/** SIGNER_UPLOADS_MAX_MB and SIGNER_UPLOADS_MAX_FILES (bytes, files). */
export type SignerUploadLimits = Pick<Config['signerUploads'], 'maxBytes' | 'maxFiles'>;

/** Upload purposes the page sends in `type`. */
export const ATTACHMENT_TYPES = ['signature', 'initials', 'image', 'file'] as const;
export type AttachmentType = (typeof ATTACHMENT_TYPES)[number];

export interface CreatedAttachment {
  uuid: string;
  created_at: string;
  url: string;
  filename: string;
  content_type: string;
}

/**
 * The signer an upload is for, when its form takes uploads.
 * @throws AppError NOT_FOUND (unknown slug); VALIDATION "Form has been archived." for every form
 *   that is not OPEN (DocuSeal answers uploads with that one message, §1.1)
 */
export async function findUploadingSigner(db: Db, slug: string) {
  const signer = await findSignerBySlug(db, slug);
  if (formStateOf({ submitter: signer, submission: signer.submission }) !== 'OPEN')
    throw new AppError('VALIDATION', 'Form has been archived.');
  return signer;
}

const MB = 1024 * 1024;
const megabytes = (bytes: number) => `${Number((bytes / MB).toFixed(1))} MB`;

/**
 * Refuses an upload of `size` bytes that would take the signer past a limit, given what it has
 * stored (`totals`).
 * @throws AppError VALIDATION "Upload limit reached: at most 1000 files per signer
 *   (SIGNER_UPLOADS_MAX_FILES)." / "Upload limit reached: at most 100 MB of files per signer
 *   (SIGNER_UPLOADS_MAX_MB); 90 MB stored, this file 45 MB." (`details`: the variable, its maximum, what is stored)
 */
function checkUploadLimits(limits: SignerUploadLimits, totals: SignerUploadTotals, size: number): void {
  if (totals.files + 1 > limits.maxFiles) {
    throw new AppError(
      'VALIDATION',
      `Upload limit reached: at most ${limits.maxFiles} files per signer (SIGNER_UPLOADS_MAX_FILES).`,
      { details: { limit: 'SIGNER_UPLOADS_MAX_FILES', maximum: limits.maxFiles, stored: totals.files } },
    );
  }
  if (totals.bytes + size > limits.maxBytes) {
    throw new AppError(
      'VALIDATION',
      `Upload limit reached: at most ${megabytes(limits.maxBytes)} of files per signer (SIGNER_UPLOADS_MAX_MB); ` +
        `${megabytes(totals.bytes)} stored, this file ${megabytes(size)}.`,
      { details: { limit: 'SIGNER_UPLOADS_MAX_MB', maximum: limits.maxBytes, stored: totals.bytes, size } },
    );
  }
}

/**
 * The quota, checked where it holds: in the transaction that inserts the upload's row, under the
 * submitter's row lock, with the size as stored (src/db/queries/signer-uploads.ts).
 */
function withinUploadLimits(limits: SignerUploadLimits, submitterId: number): StoreFileGuard {
  return {
    async beforeInsert(tx, put) {
      const totals = await lockAndCountSignerUploads(tx, submitterId);
      if (!totals) throw new AppError('NOT_FOUND', 'Submitter not found');
      checkUploadLimits(limits, totals, put.byteSize);
    },
  };
}

/** A file name safe to store and show: no directories, no control characters, at most 200 characters. */
function cleanFilename(name: string | undefined): string {
  const base = baseFilename(name ?? '');
  return base.length > 200 ? base.slice(base.length - 200) : base;
}

/**
 * Stores a signer's upload.
 * @param deps.images IMAGE_MAX_MB and IMAGE_MAX_MEGAPIXELS, for signature, initials and image uploads
 * @param deps.uploads the signer's limits (SIGNER_UPLOADS_MAX_MB, SIGNER_UPLOADS_MAX_FILES): checked
 *   before the file is read (against its size as sent) and again under the submitter's row lock
 *   before its row is written (as stored)
 * @param input.type signature/initials: an image with ink; image: any readable image; both kept as
 *   the completion draws them (readDrawableImage: JPEG as sent, anything else as PNG); file or none:
 *   any file of an allowed type, stored as the type its bytes are (sniffUpload,
 *   src/documents/content-types.ts: a claim its bytes belie is application/octet-stream), and as
 *   PNG or JPEG only when it can be drawn (only real images may be an image field's value)
 * @param input.contentType the part's declared MIME type (used for `file` uploads only)
 * @returns DocuSeal's body `{uuid, created_at, url, filename, content_type}`
 * @throws AppError NOT_FOUND (unknown slug); VALIDATION "Form has been archived." (for every form
 *   that is not OPEN, as DocuSeal), "File type '.exe' is not allowed." (by the name, or by the
 *   bytes of a `file`), "signature is empty", "signature error, try to sign on another device" (an
 *   undecodable signature), "file is empty", an unknown `type`, "image is not a readable image
 *   file", "<type> is larger than 10 MB (IMAGE_MAX_MB)" / "<type> is W × H pixels, over 25
 *   megapixels (IMAGE_MAX_MEGAPIXELS)", "Upload limit reached: …" (checkUploadLimits)
 */
export async function createSigningFormAttachment(
  deps: {
    db: Db;
    storage: FileStorage;
    files: Pick<FileUrlSigner, 'url'>;
    images: ImageLimits;
    uploads: SignerUploadLimits;
  },
  input: {
    slug: string;
    type?: string | undefined;
    filename?: string | undefined;
    contentType?: string | undefined;
    bytes: Uint8Array;
  },
): Promise<CreatedAttachment> {
  const signer = await findUploadingSigner(deps.db, input.slug);
  const type = input.type || undefined;
  if (type !== undefined && !(ATTACHMENT_TYPES as readonly string[]).includes(type)) {
    throw new AppError('VALIDATION', `type must be one of ${ATTACHMENT_TYPES.join(', ')}`);
  }
  let filename = cleanFilename(input.filename);
  const extension = dangerousExtensionOf(filename);
  if (extension) throw new AppError('VALIDATION', `File type '.${extension}' is not allowed.`);
  if (input.bytes.length === 0) throw new AppError('VALIDATION', 'file is empty');
  // Before the file is decoded or stored; checked again, as stored and under the lock, by storeFile.
  checkUploadLimits(deps.uploads, await countSignerUploads(deps.db, signer.id), input.bytes.length);

  let bytes = input.bytes;
  let contentType = /^[\w.+-]+\/[\w.+-]+$/.test(input.contentType ?? '')
    ? input.contentType!.toLowerCase()
    : 'application/octet-stream';
  if (type === 'signature' || type === 'initials' || type === 'image') {
    let image: Awaited<ReturnType<typeof readDrawableImage>>;
    try {
      image = await readDrawableImage(bytes, deps.images, { checkInk: type !== 'image', owner: signer.accountId });
    } catch (error) {
      if (!(error instanceof UnreadableImageError)) throw error;
      if (error.reason === 'too-large')
        throw new AppError('VALIDATION', `${type} ${error.message}`, { details: { field: type } });
      throw new AppError(
        'VALIDATION',
        type === 'image' ? 'image is not a readable image file' : 'signature error, try to sign on another device',
      );
    }
    if (image.hasInk === false) throw new AppError('VALIDATION', 'signature is empty');
    bytes = image.bytes;
    contentType = `image/${image.kind}`;
    const wanted = image.kind === 'png' ? 'png' : extension === 'jpeg' ? 'jpeg' : 'jpg';
    if (extensionOf(filename) !== wanted) filename = `${filename.replace(/\.[^.]*$/, '') || type}.${wanted}`;
  } else {
    const sniffed = await sniffUpload(bytes, { declared: contentType, filename });
    if (sniffed.refusedExtension)
      throw new AppError('VALIDATION', `File type '.${sniffed.refusedExtension}' is not allowed.`);
    contentType = sniffed.contentType;
    // A PNG or JPEG file could be named as an image field's value (field-values.ts checkAttachments
    // goes by this type): it keeps the type only if it can be drawn.
    if (
      (contentType === 'image/png' || contentType === 'image/jpeg') &&
      !(await readDrawableImage(bytes, deps.images, { owner: signer.accountId }).then(
        () => true,
        () => false,
      ))
    )
      contentType = 'application/octet-stream';
  }
  if (!filename) filename = 'file';

  const stored = await storeFile(
    { db: deps.db, storage: deps.storage },
    {
      accountId: signer.accountId,
      bytes,
      filename,
      contentType,
      metadata: type ? { type } : {},
      submitterId: signer.id,
    },
    withinUploadLimits(deps.uploads, signer.id),
  );
  return {
    uuid: stored.uuid,
    created_at: stored.createdAt.toISOString(),
    url: deps.files.url(stored),
    filename: stored.filename,
    content_type: stored.contentType,
  };
}

/**
 * Stores a signer's typed signature or initials: `text` rendered in the page's script font
 * (renderTypedSignature, src/documents/typed-signature.ts) to `signature.png` / `initials.png`,
 * with the text kept in `metadata.typed_text` (shown by `values` and the audit log). DocuSeal's
 * page renders the typed name on a canvas and uploads the PNG; Signet renders it on the server,
 * so that the text is known and the image is the same as for a typed signature given over the API
 * (docs/signing-form.md "Uploads").
 * @param deps.uploads the signer's limits, as for createSigningFormAttachment
 * @returns DocuSeal's body `{uuid, created_at, url, filename, content_type}`
 * @throws AppError NOT_FOUND (unknown slug); VALIDATION "Form has been archived." (a form that is
 *   not OPEN), "typed_text is only for type signature or initials", "signature is empty" (nothing
 *   visible), "typed signature is too long (maximum is 59 characters).", "Upload limit reached: …"
 */
export async function createTypedSignatureAttachment(
  deps: { db: Db; storage: FileStorage; files: Pick<FileUrlSigner, 'url'>; uploads: SignerUploadLimits },
  input: { slug: string; type?: string | undefined; text: string },
): Promise<CreatedAttachment> {
  const signer = await findUploadingSigner(deps.db, input.slug);
  const type = input.type;
  if (type !== 'signature' && type !== 'initials')
    throw new AppError('VALIDATION', 'typed_text is only for type signature or initials');
  const image = await renderTypedSignature(input.text);
  const stored = await storeFile(
    { db: deps.db, storage: deps.storage },
    {
      accountId: signer.accountId,
      bytes: image.png,
      filename: `${type}.png`,
      contentType: 'image/png',
      metadata: { type, typed_text: image.text },
      submitterId: signer.id,
    },
    withinUploadLimits(deps.uploads, signer.id),
  );
  return {
    uuid: stored.uuid,
    created_at: stored.createdAt.toISOString(),
    url: deps.files.url(stored),
    filename: stored.filename,
    content_type: stored.contentType,
  };
}
