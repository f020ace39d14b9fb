/**
 * Appends an incremental update to a PDF (ISO 32000-1 §7.5.6): new and changed objects after the
 * last %%EOF, a cross-reference section for them alone, and a trailer whose /Prev points at the
 * previous one. The bytes before stay as they are, so every signature over them still verifies:
 * how PAdES adds its Document Security Store and document timestamps after a signature (ETSI EN
 * 319 142-1 §5.4, §5.5).
 *
 * The objects come from the pdf-lib document the file was saved from (sign-pdf.ts keeps it): pdf-lib
 * writes every object under its own number, so a changed catalog, page or form is written again
 * under the same number, and new objects take numbers from the document's context. The file must
 * end in a classic cross-reference table, as pdf-lib saves without object streams.
 */
import type { PDFDocument, PDFObject, PDFRef } from 'pdf-lib';

/**
 * The file with `objects` appended as one incremental update.
 * @param pdf the file as it is (it may end with or without a newline after %%EOF)
 * @param doc the pdf-lib document it was saved from: its trailer entries (/Root, /Info, /ID) and
 *   object count
 * @param objects each written as `ref` (new refs from `doc.context.nextRef()`)
 * @throws Error when the file has no `startxref` near its end
 */
export function appendIncrementalUpdate(pdf: Buffer, doc: PDFDocument, objects: [PDFRef, PDFObject][]): Buffer {
  const previous = previousXrefOffset(pdf);
  const parts: Buffer[] = [pdf, Buffer.from('\n', 'latin1')];
  let offset = pdf.length + 1;
  const entries: { number: number; generation: number; offset: number }[] = [];
  for (const [ref, object] of objects) {
    const head = Buffer.from(`${ref.objectNumber} ${ref.generationNumber} obj\n`, 'latin1');
    const body = new Uint8Array(object.sizeInBytes());
    object.copyBytesInto(body, 0);
    const tail = Buffer.from('\nendobj\n', 'latin1');
    entries.push({ number: ref.objectNumber, generation: ref.generationNumber, offset });
    parts.push(head, Buffer.from(body.buffer, body.byteOffset, body.byteLength), tail);
    offset += head.length + body.length + tail.length;
  }
  entries.sort((a, b) => a.number - b.number);
  let xref = 'xref\n';
  for (let i = 0; i < entries.length; ) {
    let j = i;
    while (j + 1 < entries.length && entries[j + 1]!.number === entries[j]!.number + 1) j++;
    xref += `${entries[i]!.number} ${j - i + 1}\n`;
    for (let k = i; k <= j; k++) {
      const entry = entries[k]!;
      // Each entry exactly 20 bytes (§7.5.4).
      xref += `${String(entry.offset).padStart(10, '0')} ${String(entry.generation).padStart(5, '0')} n\r\n`;
    }
    i = j + 1;
  }
  const { Root, Info, ID, Encrypt } = doc.context.trailerInfo;
  if (!Root) throw new Error('The document has no catalog (/Root)');
  const trailer = [
    `/Size ${doc.context.largestObjectNumber + 1}`,
    `/Root ${Root.toString()}`,
    ...(Info ? [`/Info ${Info.toString()}`] : []),
    ...(ID ? [`/ID ${ID.toString()}`] : []),
    ...(Encrypt ? [`/Encrypt ${Encrypt.toString()}`] : []),
    `/Prev ${previous}`,
  ].join(' ');
  parts.push(Buffer.from(`${xref}trailer\n<< ${trailer} >>\nstartxref\n${offset}\n%%EOF\n`, 'latin1'));
  return Buffer.concat(parts);
}

/** The offset after the last `startxref` of the file (§7.5.5). */
function previousXrefOffset(pdf: Buffer): number {
  const tail = pdf.subarray(Math.max(0, pdf.length - 1024)).toString('latin1');
  const match = /startxref\s+(\d+)\s+%%EOF\s*$/.exec(tail);
  if (!match) throw new Error('The PDF does not end with startxref and %%EOF');
  return Number(match[1]);
}
