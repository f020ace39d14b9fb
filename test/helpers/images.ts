/**
 * Small signature-like images made with mupdf (the library the service reads images with), for
 * tests that store, draw or list them: a transparent PNG with a black stroke, and an opaque JPEG;
 * and wavePng, a hand-drawn-looking stroke without mupdf for benches and scripts.
 */
import zlib from 'node:zlib';

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

/**
 * A signature as the signing form makes them, without mupdf (synchronous, for benches and
 * scripts): a `width` × `height` RGBA PNG, transparent, with the pixels within `thickness` of
 * `curve(x)` (in pixels from the top) drawn in `rgba` (0xRRGGBBAA) between `margin` and
 * `width - margin`. PNG written by hand: filter 0 rows, one deflated IDAT (RFC 2083).
 */
export function wavePng(options: {
  width: number;
  height: number;
  curve: (x: number) => number;
  thickness: number;
  margin: number;
  rgba: number;
}): Buffer {
  const { width, height } = options;
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y += 1) {
    const row = Buffer.alloc(1 + width * 4); // filter byte 0, then RGBA
    for (let x = options.margin; x < width - options.margin; x += 1)
      if (Math.abs(y - options.curve(x)) < options.thickness) row.writeUInt32BE(options.rgba, 1 + x * 4);
    rows.push(row);
  }
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8 bits, RGBA, deflate, no filter, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', zlib.deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
