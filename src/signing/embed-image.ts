/**
 * Embeds stored image files (signature, initials, image and stamp values) in PDFs made with
 * pdf-lib: the documents (src/signing/draw-values.ts) and the audit log (src/signing/audit-log.ts).
 *
 * A JPEG goes in as it is (DCTDecode, pdf-lib's embedJpg). A PNG is decoded once by mupdf (the
 * decoder images are checked with when they are stored; pdf-lib's own PNG decoder never returns on
 * some damaged files) and its pixels written as image XObjects directly: colour samples and, when
 * the PNG has transparency, an /SMask of its alpha (ISO 32000-1 §11.6.5.3), each deflated by
 * node's zlib. This is what pdf-lib's embedPng writes, without re-encoding the pixels as a PNG,
 * decoding that again in JavaScript and deflating in JavaScript: ~3 ms instead of ~11 ms for a
 * 600×200 signature (bench:completion embeds four per completion).
 */
import zlib from 'node:zlib';
import { PDFImage, PngEmbedder, type PDFContext, type PDFDocument, type PDFRef } from 'pdf-lib';
import { loadMupdf } from '../documents/pdf.ts';
import { AppError } from '../errors.ts';
import { imageKindOf, ownBuffer } from '../documents/drawable-image.ts';

/** An attachment value's file: a signature, initials, image or stamp (PNG or JPEG bytes). */
export interface ImageFile {
  bytes: Uint8Array;
  contentType: string;
}

/**
 * Images are checked against IMAGE_MAX_MB and IMAGE_MAX_MEGAPIXELS when they are stored; embedding
 * re-reads PNGs with only this bound on memory (a 100-megapixel RGBA image is 400 MB).
 */
const MAX_PIXELS = 100_000_000;

/**
 * Embeds one image file in `doc`. The bytes decide, not the declared type (uploads are often
 * labelled loosely). The image is written when the document is saved, like pdf-lib's own.
 * @param what names the image in error messages ("field \"Sign\": the image <uuid>")
 * @returns the PDFImage to draw (its width and height in pixels)
 * @throws AppError VALIDATION when the file is neither PNG nor JPEG, is over 100 megapixels, or
 *   cannot be decoded
 */
export async function embedImageFile(doc: PDFDocument, file: ImageFile, what: string): Promise<PDFImage> {
  const { bytes } = file;
  const kind = imageKindOf(bytes);
  if (kind === 'jpeg') {
    try {
      return await doc.embedJpg(ownBuffer(bytes));
    } catch (error) {
      throw new AppError('VALIDATION', `${what} cannot be read: ${(error as Error).message}`, { cause: error });
    }
  }
  if (kind !== 'png') throw new AppError('VALIDATION', `${what} (${file.contentType}) is neither PNG nor JPEG`);
  const embedder = await decodePng(bytes, what);
  const image = PDFImage.of(doc.context.nextRef(), doc, embedder);
  // As PDFDocument.embedPng: the document embeds its images when it is saved.
  (doc as unknown as { images: PDFImage[] }).images.push(image);
  return image;
}

/**
 * An image XObject (and its soft mask) from planes deflated beforehand, as a PngEmbedder: pdf-lib
 * accepts only its own embedder classes (and their constructors are private), and PDFImage uses
 * only `width`, `height` and `embedIntoContext` of one.
 */
function pixelEmbedder(
  width: number,
  height: number,
  colorSpace: 'DeviceRGB' | 'DeviceGray',
  colorStream: Uint8Array,
  alphaStream: Uint8Array | undefined,
): PngEmbedder {
  const embedder = Object.create(PngEmbedder.prototype) as PngEmbedder;
  return Object.assign(embedder, {
    width,
    height,
    bitsPerComponent: 8,
    colorSpace,
    async embedIntoContext(context: PDFContext, ref?: PDFRef): Promise<PDFRef> {
      const image = {
        Type: 'XObject',
        Subtype: 'Image',
        Width: width,
        Height: height,
        BitsPerComponent: 8,
        Filter: 'FlateDecode',
      };
      const mask = alphaStream
        ? context.register(context.stream(alphaStream, { ...image, ColorSpace: 'DeviceGray', Decode: [0, 1] }))
        : undefined;
      const xObject = context.stream(colorStream, {
        ...image,
        ColorSpace: colorSpace,
        ...(mask ? { SMask: mask } : {}),
      });
      if (!ref) return context.register(xObject);
      context.assign(ref, xObject);
      return ref;
    },
  });
}

/** Decodes a PNG with mupdf into deflated colour (DeviceRGB or DeviceGray) and alpha planes. */
async function decodePng(bytes: Uint8Array, what: string): Promise<PngEmbedder> {
  const mupdf = await loadMupdf();
  let image: InstanceType<typeof mupdf.Image> | undefined;
  let pixmap: InstanceType<typeof mupdf.Pixmap> | undefined;
  try {
    try {
      image = new mupdf.Image(bytes);
    } catch (error) {
      throw new AppError('VALIDATION', `${what} cannot be read: it is a damaged image, not a readable PNG`, {
        cause: error,
      });
    }
    const width = image.getWidth();
    const height = image.getHeight();
    if (width * height > MAX_PIXELS)
      throw new AppError(
        'VALIDATION',
        `${what} is ${width} × ${height} pixels, over ${MAX_PIXELS / 1_000_000} megapixels`,
      );
    try {
      pixmap = image.toPixmap();
    } catch (error) {
      throw new AppError('VALIDATION', `${what} cannot be read: its pixels cannot be decoded`, { cause: error });
    }
    const colorSpace = pixmap.getColorSpace();
    if (!colorSpace?.isRGB() && !colorSpace?.isGray()) {
      const rgb = pixmap.convertToColorSpace(mupdf.ColorSpace.DeviceRGB, true);
      pixmap.destroy();
      pixmap = rgb;
    }
    return planes(pixmap, pixmap.getColorSpace()!.isGray() ? 'DeviceGray' : 'DeviceRGB');
  } finally {
    pixmap?.destroy();
    image?.destroy();
  }
}

/**
 * Splits a pixmap's samples into colour and alpha planes and deflates them. mupdf keeps colour
 * premultiplied by alpha; a PDF soft mask wants it straight, so it is divided back (as mupdf's
 * own PNG writer does).
 */
function planes(
  pixmap: {
    getWidth(): number;
    getHeight(): number;
    getStride(): number;
    getAlpha(): number | boolean;
    getNumberOfComponents(): number;
    getPixels(): Uint8ClampedArray;
  },
  colorSpace: 'DeviceRGB' | 'DeviceGray',
): PngEmbedder {
  const width = pixmap.getWidth();
  const height = pixmap.getHeight();
  const stride = pixmap.getStride();
  const n = pixmap.getNumberOfComponents();
  const hasAlpha = Boolean(pixmap.getAlpha());
  const colors = hasAlpha ? n - 1 : n;
  const samples = pixmap.getPixels();
  const color = new Uint8Array(width * height * colors);
  const alpha = hasAlpha ? new Uint8Array(width * height) : undefined;
  let opaque = true;
  for (let y = 0, d = 0; y < height; y += 1) {
    for (let x = 0, s = y * stride; x < width; x += 1, s += n, d += 1) {
      if (!alpha) {
        for (let c = 0; c < colors; c += 1) color[d * colors + c] = samples[s + c]!;
        continue;
      }
      const a = samples[s + colors]!;
      alpha[d] = a;
      if (a === 255) {
        for (let c = 0; c < colors; c += 1) color[d * colors + c] = samples[s + c]!;
      } else {
        opaque = false;
        if (a !== 0)
          for (let c = 0; c < colors; c += 1)
            color[d * colors + c] = Math.min(255, Math.round((samples[s + c]! * 255) / a));
      }
    }
  }
  const colorStream = zlib.deflateSync(color);
  // A fully opaque alpha channel needs no mask.
  const alphaStream = alpha && !opaque ? zlib.deflateSync(alpha) : undefined;
  return pixelEmbedder(width, height, colorSpace, colorStream, alphaStream);
}
