/**
 * Reading uploaded images: whether a drawn signature has any ink (DocuSeal refuses a blank one,
 * "signature is empty", reference/docuseal-behaviour.md §1.1) and turning images the completion
 * pipeline cannot draw (it takes PNG and JPEG, src/signing/draw-values.ts) into PNG. Decoding is
 * mupdf's (WASM, already used for PDFs; loaded on first use).
 */
import { loadMupdf } from '../documents/pdf.ts';

/** Larger images are refused before decoding (a small compressed file can expand to gigabytes). */
const MAX_PIXELS = 40_000_000;
/**
 * How much darker than its background a pixel must be to count as ink, in 0..255 of
 * `alpha - value` (premultiplied): white and transparent pixels are 0, black ink 255. Leaves out
 * the faint anti-aliasing and JPEG noise of an empty canvas.
 */
const INK_THRESHOLD = 48;

export type ImageKind = 'png' | 'jpeg';

/** PNG or JPEG by magic bytes, else null. */
export function imageKindOf(bytes: Uint8Array): ImageKind | null {
  if (bytes.length >= 8 && bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47) return 'png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpeg';
  return null;
}

/** The image could not be decoded, or is too large to. */
export class UnreadableImageError extends Error {
  override name = 'UnreadableImageError';
}

type Mupdf = Awaited<ReturnType<typeof loadMupdf>>;

async function decode(bytes: Uint8Array): Promise<{ mupdf: Mupdf; pixmap: InstanceType<Mupdf['Pixmap']> }> {
  const mupdf = await loadMupdf();
  let image: InstanceType<Mupdf['Image']> | undefined;
  try {
    image = new mupdf.Image(bytes);
    if (image.getWidth() * image.getHeight() > MAX_PIXELS) throw new UnreadableImageError(`image over ${MAX_PIXELS} pixels`);
    return { mupdf, pixmap: image.toPixmap() };
  } catch (error) {
    if (error instanceof UnreadableImageError) throw error;
    throw new UnreadableImageError('not a readable image', { cause: error });
  } finally {
    image?.destroy();
  }
}

/**
 * True when no pixel of the image is ink: fully transparent, white, or both (what an untouched
 * signature canvas exports).
 * @throws UnreadableImageError when the bytes are no image mupdf can decode, or one over 40 Mpx
 */
export async function isBlankImage(bytes: Uint8Array): Promise<boolean> {
  const { mupdf, pixmap: decoded } = await decode(bytes);
  let pixmap = decoded;
  try {
    const colorants = pixmap.getNumberOfComponents() - pixmap.getAlpha();
    // Gray and RGB read as "lower is darker"; anything else (CMYK, indexed) is converted first.
    if (colorants !== 1 && colorants !== 3) {
      pixmap = decoded.convertToColorSpace(mupdf.ColorSpace.DeviceRGB, true);
      decoded.destroy();
    }
    const n = pixmap.getNumberOfComponents();
    const hasAlpha = pixmap.getAlpha() === 1;
    const stride = pixmap.getStride();
    const width = pixmap.getWidth();
    const height = pixmap.getHeight();
    const pixels = pixmap.getPixels();
    for (let y = 0; y < height; y += 1) {
      for (let x = 0, i = y * stride; x < width; x += 1, i += n) {
        const alpha = hasAlpha ? pixels[i + n - 1] : 255;
        for (let c = 0; c < n - (hasAlpha ? 1 : 0); c += 1) if (alpha - pixels[i + c] > INK_THRESHOLD) return false;
      }
    }
    return true;
  } finally {
    pixmap.destroy();
  }
}

/**
 * Checks that the bytes decode as an image; any image mupdf reads (GIF, BMP, TIFF …) is returned
 * as PNG, PNG and JPEG unchanged.
 * @throws UnreadableImageError when the bytes are no image mupdf can decode, or one over 40 Mpx
 */
export async function toDrawableImage(bytes: Uint8Array): Promise<{ bytes: Uint8Array; kind: ImageKind }> {
  const kind = imageKindOf(bytes);
  const { pixmap } = await decode(bytes);
  try {
    return kind ? { bytes, kind } : { bytes: pixmap.asPNG().slice(), kind: 'png' };
  } finally {
    pixmap.destroy();
  }
}
