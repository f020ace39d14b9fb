/**
 * Small signature-like images made with mupdf (the library the service reads images with), for
 * tests that store, draw or list them: a transparent PNG with a black stroke, and an opaque JPEG.
 */

/** A PNG of `width` × `height` pixels: transparent, with a black horizontal stroke across the middle. */
export async function strokePng(width: number, height: number): Promise<Uint8Array> {
  const mupdf = await import('mupdf');
  const pixmap = new mupdf.Pixmap(mupdf.ColorSpace.DeviceRGB, [0, 0, width, height], true);
  try {
    const pixels = pixmap.getPixels();
    pixels.fill(0);
    const middle = Math.floor(height / 2);
    for (let y = Math.max(0, middle - 3); y < Math.min(height, middle + 3); y += 1) {
      for (let x = Math.floor(width / 16); x < width - Math.floor(width / 16); x += 1)
        pixels.set([0, 0, 0, 255], y * pixmap.getStride() + x * 4);
    }
    return pixmap.asPNG().slice();
  } finally {
    pixmap.destroy();
  }
}

/** A JPEG of `width` × `height` pixels: white, with a black horizontal stroke across the middle. */
export async function strokeJpeg(width: number, height: number): Promise<Uint8Array> {
  const mupdf = await import('mupdf');
  const pixmap = new mupdf.Pixmap(mupdf.ColorSpace.DeviceRGB, [0, 0, width, height], false);
  try {
    const pixels = pixmap.getPixels();
    pixels.fill(255);
    const middle = Math.floor(height / 2);
    for (let y = Math.max(0, middle - 3); y < Math.min(height, middle + 3); y += 1) {
      for (let x = 0; x < width; x += 1) pixels.set([0, 0, 0], y * pixmap.getStride() + x * 3);
    }
    return pixmap.asJPEG(90, false).slice();
  } finally {
    pixmap.destroy();
  }
}
