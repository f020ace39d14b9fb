/**
 * What a PDF's later revisions changed after a signature (issue 17, for /tools/verify): a signature
 * covers the file as it was when signed; PAdES then appends incremental updates that may only add
 * validation data (a DSS) and document timestamps (ETSI EN 319 142-1 §5.4, §5.5; ISO 32000-2
 * §12.8.2.2.2 lists them among the changes that keep a certification). Anything else appended —
 * new page content, a changed annotation, another object rewritten — is a change the signature
 * does not vouch for.
 *
 * The file is read once for all its signatures (issue 23 item 3): one scan finds where each object
 * is defined (`n g obj`), the whole file is the document /tools/verify opened already, and each
 * signature's revision (the bytes up to the end of its range) is opened with mupdf only when its
 * cross-reference table is where its `startxref` says, so that opening it reads its table, not the
 * whole file. Every object the later bytes define is compared with its signed version. A file mupdf
 * had to repair (a broken final cross-reference table: its revisions cannot be told apart), or a
 * revision whose table is not where it says, counts as changed (`other`).
 *
 * Allowed: the catalog gaining or changing /DSS (and nothing else, but a direct /AcroForm as
 * below); objects reachable from the DSS; the form (/AcroForm) and a page (or its /Annots array)
 * whose only change is appended references to document timestamp fields (a /Sig field whose value
 * is a /DocTimeStamp), with /SigFlags; those fields and their /DocTimeStamp dictionaries.
 */
import type { PDFDocument, PDFObject } from 'mupdf';
import { type Mupdf, openPdf, type StreamReader } from '../documents/pdf.ts';
import { AppError } from '../errors.ts';
import { PDF_LIMITS } from '../limits.ts';

export type ChangesAfterSigning = 'none' | 'validation_data' | 'other';

/** Objects defined after a signature at most: a crafted file could define millions. */
const MAX_OBJECTS_AFTER = 10_000;

/** What the bytes after each signature change, for one file (see the module comment). */
export interface Revisions {
  /**
   * What the bytes after `signedEnd` change.
   * @param signedEnd where the signature's second range ends (its revision's end)
   */
  changesAfter(signedEnd: number): ChangesAfterSigning;
  /** Frees the revisions opened. */
  destroy(): void;
}

/**
 * The revisions of a file, read once (see the module comment).
 * @param bytes the whole file
 * @param current the whole file opened with mupdf (the caller's; not destroyed here)
 * @param streams reads stream bytes within the file's budget (pdf.ts streamReader)
 */
export function readRevisions(mupdf: Mupdf, bytes: Uint8Array, current: PDFDocument, streams: StreamReader): Revisions {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1');
  // Where each object number is last defined: the numbers defined after `end` are those whose last definition is.
  const lastDefined = new Map<number, number>();
  for (const match of text.matchAll(/(?:^|[\s>\]])(\d{1,9})\s+(\d{1,5})\s+obj\b/g)) {
    lastDefined.set(Number(match[1]), match.index);
    if (lastDefined.size > PDF_LIMITS.objects)
      throw new AppError(
        'VALIDATION',
        `file defines more than ${PDF_LIMITS.objects} objects; at most that many are accepted.`,
      );
  }
  // Bytes after the last %%EOF belong to no revision: appended afterwards, they are a change of their own.
  const lastEof = text.lastIndexOf('%%EOF');
  const trailingBytes = lastEof < 0 || /\S/.test(text.slice(lastEof + 5));
  const repaired = current.wasRepaired();
  const results = new Map<number, ChangesAfterSigning>();
  const opened: PDFDocument[] = [];

  const judge = (end: number): ChangesAfterSigning => {
    if (end >= bytes.length) return 'none';
    if (trailingBytes || lastEof < end) return 'other';
    const numbers = new Set<number>();
    for (const [number, at] of lastDefined)
      if (at >= end) {
        numbers.add(number);
        if (numbers.size > MAX_OBJECTS_AFTER) return 'other';
      }
    if (numbers.size === 0) return 'none';
    if (repaired || !crossReferenceAt(text, end)) return 'other';
    let signed: PDFDocument;
    try {
      signed = openPdf(mupdf, bytes.subarray(0, end), 'the signed revision');
    } catch {
      return 'other';
    }
    opened.push(signed);
    if (signed.wasRepaired()) return 'other';
    try {
      return classify(signed, current, numbers, streams);
    } catch (error) {
      if (error instanceof AppError) throw error; // over the stream budget
      return 'other';
    }
  };
  return {
    changesAfter(end) {
      let found = results.get(end);
      if (found === undefined) {
        found = judge(end);
        results.set(end, found);
      }
      return found;
    },
    destroy() {
      for (const doc of opened) doc.destroy();
    },
  };
}

/**
 * The revision ending at `end` has its cross-reference section (a table, `xref`, or a stream,
 * `n g obj`) where its last `startxref` points: mupdf then reads it instead of repairing the
 * revision by scanning it whole.
 */
function crossReferenceAt(text: string, end: number): boolean {
  const at = text.lastIndexOf('startxref', end);
  if (at < 0) return false;
  const offset = /^startxref\s+(\d{1,12})/.exec(text.slice(at, at + 40))?.[1];
  if (offset === undefined || Number(offset) >= end) return false;
  return /^\s*(?:xref|\d{1,9}\s+\d{1,5}\s+obj\b)/.test(text.slice(Number(offset), Number(offset) + 40));
}

/** The object `number` of a document, resolved, or null when it has none. */
function objectOf(doc: PDFDocument, number: number): PDFObject | null {
  if (number <= 0 || number >= doc.countObjects()) return null;
  const object = doc.newIndirect(number).resolve();
  return object.isNull() ? null : object;
}

/** Same content: same serialisation, and for streams the same raw bytes. */
function same(a: PDFObject | null, b: PDFObject | null, streams: StreamReader): boolean {
  if (!a || !b) return a === b;
  if (a.toString(true) !== b.toString(true)) return false;
  if (a.isStream() !== b.isStream()) return false;
  return !a.isStream() || Buffer.from(streams.raw(a)).equals(Buffer.from(streams.raw(b)));
}

/** The keys of a dictionary whose values differ between two versions. */
function changedKeys(before: PDFObject, after: PDFObject): Set<string> {
  const keys = new Set<string>();
  const collect = (dict: PDFObject) =>
    dict.forEach((_value, key) => {
      keys.add(String(key));
    });
  collect(before);
  collect(after);
  const changed = new Set<string>();
  for (const key of keys) {
    const a = before.get(key);
    const b = after.get(key);
    if (a.toString(true) !== b.toString(true)) changed.add(key);
  }
  return changed;
}

/** The indirect numbers an array holds beyond `prefix`'s items, or null when `prefix` is not a prefix of it. */
function appended(prefix: PDFObject | null, array: PDFObject): number[] | null {
  const before = prefix?.isArray() ? prefix.length : 0;
  for (let i = 0; i < before; i++) if (prefix!.get(i).toString(true) !== array.get(i).toString(true)) return null;
  const added: number[] = [];
  for (let i = before; i < array.length; i++) {
    const item = array.get(i);
    if (!item.isIndirect()) return null;
    added.push(item.asIndirect());
  }
  return added;
}

function classify(
  signed: PDFDocument,
  current: PDFDocument,
  numbers: Set<number>,
  streams: StreamReader,
): ChangesAfterSigning {
  const allowed = new Set<number>();
  const changed = [...numbers].filter((n) => !same(objectOf(signed, n), objectOf(current, n), streams));
  if (changed.length === 0) return 'none';

  // Document timestamp fields: /FT /Sig with a /DocTimeStamp value.
  const timestampFields = new Set<number>();
  const isTimestampField = (number: number) => {
    const field = objectOf(current, number);
    if (!field?.isDictionary() || field.get('FT').toString() !== '/Sig') return false;
    const value = field.get('V');
    if (!value.isIndirect() || value.resolve().get('Type').toString() !== '/DocTimeStamp') return false;
    // New objects only: an object of the signed revision does not become a timestamp.
    if (objectOf(signed, number) || objectOf(signed, value.asIndirect())) return false;
    timestampFields.add(number);
    allowed.add(number);
    allowed.add(value.asIndirect());
    return true;
  };
  /** The array grew only by document timestamp fields. */
  const growsByTimestamps = (before: PDFObject | null, after: PDFObject) => {
    if (!after.isArray()) return false;
    const added = appended(before?.isArray() ? before : null, after);
    return added?.every(isTimestampField) === true;
  };
  /** A form dictionary whose only changes are /Fields grown by timestamps and /SigFlags. */
  const formGrowsByTimestamps = (before: PDFObject, after: PDFObject) => {
    for (const key of changedKeys(before, after)) {
      if (key === 'SigFlags') continue;
      if (key !== 'Fields' || !growsByTimestamps(before.get('Fields').resolve(), after.get('Fields').resolve()))
        return false;
    }
    return true;
  };

  const rootNumber = current.getTrailer().get('Root');
  const root = rootNumber.isIndirect() ? rootNumber.asIndirect() : -1;
  /** The objects a DSS reaches (its arrays, VRI dictionaries, streams), by number. */
  const reachable = (object: PDFObject, found: Set<number>, depth = 0) => {
    if (depth > 8) return found;
    if (object.isIndirect()) {
      const number = object.asIndirect();
      if (found.has(number)) return found;
      found.add(number);
      object = object.resolve();
    }
    if (object.isDictionary() || object.isArray())
      object.forEach((value) => {
        reachable(value, found, depth + 1);
      });
    return found;
  };
  const signedRoot = signed.getTrailer().get('Root');
  const signedDss = signedRoot.isNull() ? new Set<number>() : reachable(signedRoot.resolve().get('DSS'), new Set());
  // Reached from the DSS and new, or part of the signed revision's DSS: a DSS cannot adopt other objects.
  const markReachable = (object: PDFObject, depth: number) => {
    for (const number of reachable(object, new Set(), depth))
      if (!objectOf(signed, number) || signedDss.has(number)) allowed.add(number);
  };

  for (const number of changed) {
    if (allowed.has(number)) continue;
    const before = objectOf(signed, number);
    const after = objectOf(current, number);
    if (!after) return 'other';
    if (number === root && before) {
      for (const key of changedKeys(before, after)) {
        if (key === 'DSS') markReachable(after.get('DSS'), 0);
        else if (key === 'AcroForm' && !after.get('AcroForm').isIndirect()) {
          if (!formGrowsByTimestamps(before.get('AcroForm'), after.get('AcroForm'))) return 'other';
        } else return 'other';
      }
      allowed.add(number);
      continue;
    }
    if (!before) continue; // new objects: allowed only if reached from the DSS or a timestamp (checked below)
    if (after.isArray() && growsByTimestamps(before, after)) {
      allowed.add(number);
      continue;
    }
    if (after.isDictionary()) {
      const keys = changedKeys(before, after);
      const isForm = after.get('Fields').isArray();
      if (isForm && formGrowsByTimestamps(before, after)) {
        allowed.add(number);
        continue;
      }
      // A page whose /Annots (direct) grew by document timestamp widgets.
      if (
        keys.size === 1 &&
        keys.has('Annots') &&
        growsByTimestamps(before.get('Annots').resolve(), after.get('Annots').resolve())
      ) {
        allowed.add(number);
        continue;
      }
    }
    return 'other';
  }
  // The DSS of the current catalog may also have been defined without a catalog change (an updated DSS object).
  const dss = objectOf(current, root)?.get('DSS');
  if (dss && !dss.isNull()) markReachable(dss, 0);
  return changed.every((n) => allowed.has(n)) ? 'validation_data' : 'other';
}
