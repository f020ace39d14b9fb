/**
 * Image values — signatures, initials, images, stamps — checked and made drawable before they are
 * stored, whichever way they come (a signer's upload, a `values`/`default_value` of the API; issue
 * 12 "Broken inputs → 4xx"): a junk value must be a 422 naming the field at the door, not a
 * completion that can never draw it.
 *
 * Decoding is mupdf's (WASM, already used for PDFs; loaded on first use): its image decoders read
 * PNG, JPEG, GIF, BMP, TIFF, PNM … and fail fast on damaged data. pdf-lib, which draws the images
 * at completion (src/signing/draw-values.ts), is not used to check PNGs: its PNG decoder is slow
 * (2.5 s for 12 megapixels, on the event loop) and never returns on some damaged files (a PNG cut
 * in half, a corrupt IDAT). So a PNG is kept as mupdf re-encodes it from the decoded pixels, and
 * pdf-lib only ever embeds PNGs that mupdf wrote; a JPEG is kept as sent (pdf-lib embeds its bytes
 * without decoding them, after reading its frame header, which is checked here with pdf-lib).
 *
 * It sits with the documents, below the layers that use it: the signing form's uploads
 * (src/signing-form/attachments.ts), the API's values (src/submissions/create-submissions.ts) and
 * the completion that embeds the images (src/signing/embed-image.ts). The decoding runs in the
 * parse pool (src/parse-pool/): a crafted image costs a worker's time within its limits, not the
 * event loop's.
 */
import type { Config } from '../config.ts';
import { ownBytes, runParseTask } from '../parse-pool/pool.ts';
import { parseTask } from '../parse-pool/tasks.ts';
import { loadMupdf } from './pdf.ts';

/**
 * How much darker than its background a pixel must be to count as ink, in 0..255 of
 * `alpha - value` (premultiplied): white and transparent pixels are 0, black ink 255. Leaves out
 * the faint anti-aliasing and JPEG noise of an empty canvas.
 */
const INK_THRESHOLD = 48;

export type ImageKind = 'png' | 'jpeg';

/** IMAGE_MAX_MB and IMAGE_MAX_MEGAPIXELS (src/config.ts). */
export interface ImageLimits {
  /** Largest image file, in bytes. */
  maxBytes: number;
  /** Most pixels, width × height. */
  maxPixels: number;
}

/** The limits of the configuration. */
export const imageLimits = (config: Pick<Config, 'images'>): ImageLimits => config.images;

/** PNG or JPEG by magic bytes, else null. */
export function imageKindOf(bytes: Uint8Array): ImageKind | null {
  if (bytes.length >= 8 && bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47)
    return 'png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpeg';
  return null;
}

/**
 * The image could not be decoded (`reason` "unreadable") or is over a limit ("too-large"). The
 * message is user-safe and says which limit ("… over 25 megapixels (IMAGE_MAX_MEGAPIXELS)").
 */
export class UnreadableImageError extends Error {
  override name = 'UnreadableImageError';
  constructor(
    readonly reason: 'unreadable' | 'too-large',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** An image value as it will be stored and drawn. */
export interface DrawableImage {
  /** PNG (re-encoded by mupdf) or JPEG (as sent). */
  bytes: Uint8Array;
  kind: ImageKind;
  /** Pixels. */
  width: number;
  height: number;
  /** Whether any pixel is ink (see INK_THRESHOLD); computed only when asked for (`checkInk`). */
  hasInk?: boolean;
}

/**
 * Checks an image value and returns it as the completion will draw it, decoding it in the parse pool.
 * - over `limits.maxBytes` bytes, or `limits.maxPixels` pixels as its header says (checked before
 *   the pixels are decoded): "too-large";
 * - not an image mupdf decodes completely, or a JPEG whose frame header pdf-lib cannot read:
 *   "unreadable";
 * - JPEG: the bytes as sent; anything else (PNG, GIF, BMP, TIFF …): PNG written by mupdf from the
 *   decoded pixels (alpha kept).
 * @param options.checkInk also tell whether the image has ink (a signature pad left blank has none)
 * @param options.owner whose task it is in the parse pool's fair queue (an account id)
 * @throws UnreadableImageError; the parse pool's limits (AppError VALIDATION `The image could not
 *   be read within 20 s (PARSE_TIMEOUT_SECONDS).`, …)
 */
export async function readDrawableImage(
  bytes: Uint8Array,
  limits: ImageLimits,
  options: { checkInk?: boolean; owner: string | number },
): Promise<DrawableImage> {
  if (bytes.length > limits.maxBytes) {
    throw new UnreadableImageError('too-large', `is larger than ${formatMb(limits.maxBytes)} MB (IMAGE_MAX_MB)`);
  }
  const read = await runParseTask(
    readDrawableImageTask,
    [ownBytes(bytes), limits, { checkInk: options.checkInk === true }],
    { owner: options.owner, subject: 'The image' },
  );
  if ('refused' in read) throw new UnreadableImageError(read.refused.reason, read.refused.message);
  return read.image;
}

/**
 * readDrawableImage on the calling thread: the parse pool's `readDrawableImage` task
 * (src/parse-worker/worker.ts). A refusal is answered, not thrown: an UnreadableImageError does not
 * cross from the worker as itself.
 */
export async function readDrawableImageHere(
  bytes: Uint8Array,
  limits: ImageLimits,
  options: { checkInk: boolean },
): Promise<{ image: DrawableImage } | { refused: Pick<UnreadableImageError, 'reason' | 'message'> }> {
  try {
    return { image: await decodeDrawableImage(bytes, limits, options) };
  } catch (error) {
    if (!(error instanceof UnreadableImageError)) throw error;
    return { refused: { reason: error.reason, message: error.message } };
  }
}

/** The parse pool's `readDrawableImage` task: readDrawableImageHere in a worker (src/parse-pool/tasks.ts). */
export const readDrawableImageTask = parseTask('readDrawableImage', readDrawableImageHere);

async function decodeDrawableImage(
  bytes: Uint8Array,
  limits: ImageLimits,
  options: { checkInk: boolean },
): Promise<DrawableImage> {
  const mupdf = await loadMupdf();
  let image: InstanceType<typeof mupdf.Image> | undefined;
  let pixmap: InstanceType<typeof mupdf.Pixmap> | undefined;
  try {
    try {
      image = new mupdf.Image(bytes);
    } catch (error) {
      const kind = imageKindOf(bytes);
      throw new UnreadableImageError(
        'unreadable',
        kind ? `is a damaged image: not a readable ${kind.toUpperCase()}` : 'is not an image (PNG or JPEG)',
        { cause: error },
      );
    }
    const width = image.getWidth();
    const height = image.getHeight();
    if (width * height > limits.maxPixels) {
      throw new UnreadableImageError(
        'too-large',
        `is ${width} × ${height} pixels, over ${limits.maxPixels / 1_000_000} megapixels (IMAGE_MAX_MEGAPIXELS)`,
      );
    }
    try {
      pixmap = image.toPixmap();
    } catch (error) {
      throw new UnreadableImageError('unreadable', 'is a damaged image: its pixels cannot be decoded', {
        cause: error,
      });
    }
    const hasInk = options.checkInk ? pixmapHasInk(mupdf, pixmap) : undefined;
    const kind = imageKindOf(bytes);
    if (kind === 'jpeg') {
      await assertJpegEmbeddable(bytes);
      return { bytes, kind, width, height, ...(hasInk === undefined ? {} : { hasInk }) };
    }
    return { bytes: pixmap.asPNG().slice(), kind: 'png', width, height, ...(hasInk === undefined ? {} : { hasInk }) };
  } finally {
    pixmap?.destroy();
    image?.destroy();
  }
}

/** pdf-lib reads a JPEG's frame header (size, colour space) to embed it; refuse what it cannot read. */
async function assertJpegEmbeddable(bytes: Uint8Array): Promise<void> {
  const { PDFDocument } = await import('pdf-lib');
  try {
    await (await PDFDocument.create()).embedJpg(ownBuffer(bytes));
  } catch (error) {
    throw new UnreadableImageError('unreadable', 'is a damaged JPEG image', { cause: error });
  }
}

/**
 * The bytes in an array of their own: pdf-lib's JPEG reader reads `bytes.buffer` from offset 0,
 * so a view into a larger buffer (Node's pooled Buffers) reads as "SOI not found in JPEG".
 */
export function ownBuffer(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes);
}

type Mupdf = Awaited<ReturnType<typeof loadMupdf>>;

/**
 * True when some pixel is ink: darker than its background by INK_THRESHOLD (gray and RGB read
 * directly, others converted).
 */
function pixmapHasInk(mupdf: Mupdf, decoded: InstanceType<Mupdf['Pixmap']>): boolean {
  const colorants = decoded.getNumberOfComponents() - decoded.getAlpha();
  // Gray and RGB read as "lower is darker"; anything else (CMYK, indexed) is converted first.
  const pixmap =
    colorants === 1 || colorants === 3 ? decoded : decoded.convertToColorSpace(mupdf.ColorSpace.DeviceRGB, true);
  try {
    const n = pixmap.getNumberOfComponents();
    const hasAlpha = pixmap.getAlpha() === 1;
    const stride = pixmap.getStride();
    const width = pixmap.getWidth();
    const height = pixmap.getHeight();
    const pixels = pixmap.getPixels();
    for (let y = 0; y < height; y += 1) {
      for (let x = 0, i = y * stride; x < width; x += 1, i += n) {
        const alpha = hasAlpha ? pixels[i + n - 1] : 255;
        for (let c = 0; c < n - (hasAlpha ? 1 : 0); c += 1) if (alpha - pixels[i + c] > INK_THRESHOLD) return true;
      }
    }
    return false;
  } finally {
    if (pixmap !== decoded) pixmap.destroy();
  }
}

function formatMb(bytes: number): string {
  return String(Math.round((bytes / 1024 / 1024) * 10) / 10);
}
