/**
 * ZIP archives for the DOCX checks (src/rendering/office-document.ts): deflated entries, optionally
 * declaring a size other than the real one in both headers, the way a zip bomb lies; and the
 * bench's bomb (bench/abuse.ts zipBombDocx), whose document.xml inflates to far more than the
 * archive's size. Written by hand so that the lies are possible (zip libraries refuse to write them).
 */
import zlib from 'node:zlib';

export interface ZipEntry {
  name: string;
  /** Raw-deflated data. */
  deflated: Buffer;
  /** CRC-32 of the inflated data. */
  crc: number;
  /** The inflated size the headers declare (the truth unless a test wants a lie). */
  declaredSize: number;
}

/** An entry holding `content`, deflated, its true size declared unless `declaredSize` says otherwise. */
export function deflatedEntry(name: string, content: string | Buffer, declaredSize?: number): ZipEntry {
  const data = Buffer.isBuffer(content) ? content : Buffer.from(content, 'utf8');
  return {
    name,
    deflated: zlib.deflateRawSync(data),
    crc: zlib.crc32(data),
    declaredSize: declaredSize ?? data.length,
  };
}

/**
 * An entry of `size` bytes of `byte` (a space by default), deflated in a stream so that gigabytes
 * never sit in memory; declared as `declaredSize` (default: the true size modulo 2^32, which is
 * what a 32-bit header field holds).
 */
export async function repeatedByteEntry(
  name: string,
  size: number,
  options: { byte?: number; declaredSize?: number } = {},
): Promise<ZipEntry> {
  const chunk = Buffer.alloc(Math.min(size, 16 * 1024 * 1024), options.byte ?? 0x20);
  const deflate = zlib.createDeflateRaw({ level: 9 });
  const parts: Buffer[] = [];
  deflate.on('data', (b: Buffer) => parts.push(b));
  const ended = new Promise((resolve) => deflate.on('end', resolve));
  let crc = 0;
  for (let left = size; left > 0; left -= chunk.length) {
    const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
    crc = zlib.crc32(piece, crc);
    if (!deflate.write(piece)) await new Promise((resolve) => deflate.once('drain', resolve));
  }
  deflate.end();
  await ended;
  return { name, deflated: Buffer.concat(parts), crc, declaredSize: options.declaredSize ?? size % 2 ** 32 };
}

/** A ZIP archive of the entries (deflate, method 8), central directory and end record included. */
export function zipArchive(entries: ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt32LE(entry.crc >>> 0, 14);
    local.writeUInt32LE(entry.deflated.length, 18);
    local.writeUInt32LE(entry.declaredSize, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(entry.crc >>> 0, 16);
    central.writeUInt32LE(entry.deflated.length, 20);
    central.writeUInt32LE(entry.declaredSize, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, entry.deflated);
    centrals.push(central, name);
    offset += local.length + name.length + entry.deflated.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

const CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types ' +
  'xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default ' +
  'Extension="xml" ContentType="application/xml"/>' +
  '<Override PartName="/word/document.xml" ' +
  'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>';
const RELS =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships ' +
  'xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
  '<Relationship Id="rId1" ' +
  'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" ' +
  'Target="word/document.xml"/></Relationships>';

/** The package parts every DOCX here starts with: content types and the root relationships. */
export function docxPackageEntries(): ZipEntry[] {
  return [deflatedEntry('[Content_Types].xml', CONTENT_TYPES), deflatedEntry('_rels/.rels', RELS)];
}

/**
 * The bench's zip bomb (bench/abuse.ts zipBombDocx): word/document.xml inflates to `inflatedBytes`
 * of spaces (default 1 GB) and both headers declare that size modulo 2^32 (0 for 1 GB), as a lying
 * header would.
 */
export async function zipBombDocx(inflatedBytes = 2 ** 30): Promise<Buffer> {
  return zipArchive([...docxPackageEntries(), await repeatedByteEntry('word/document.xml', inflatedBytes)]);
}
