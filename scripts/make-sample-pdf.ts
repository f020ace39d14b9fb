/**
 * Writes samples/nda.pdf, the one-page sample document of the README's walkthrough: a short
 * non-disclosure agreement whose text tags become the template's fields (a name, a signature and
 * the signing date, for the role "Recipient").
 *
 *   node --import tsx scripts/make-sample-pdf.ts [output path]
 *
 * The bytes depend on nothing but this script (fixed dates and ids), so running it again gives
 * the committed file; test/readme-walkthrough.test.ts checks that.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PDFDocument, StandardFonts, rgb } from 'pdf-lib';

export const SAMPLE_PDF = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'samples', 'nda.pdf');

/** The sample NDA as PDF bytes (Letter, Helvetica, three text tags). */
export async function makeSamplePdf(): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const fixed = new Date('2026-11-25T00:00:00Z');
  pdf.setTitle('Sample non-disclosure agreement');
  pdf.setAuthor('Signet');
  pdf.setSubject('Sample document for the Signet README walkthrough');
  pdf.setProducer('Signet scripts/make-sample-pdf.ts (pdf-lib)');
  pdf.setCreator('Signet');
  pdf.setCreationDate(fixed);
  pdf.setModificationDate(fixed);

  const regular = await pdf.embedFont(StandardFonts.Helvetica);
  const bold = await pdf.embedFont(StandardFonts.HelveticaBold);
  const page = pdf.addPage([612, 792]);
  const ink = rgb(0.1, 0.1, 0.1);
  /** Draws a line of text with its top `top` points below the page's top edge. */
  const text = (value: string, x: number, top: number, size = 11, font = regular) =>
    page.drawText(value, { x, y: 792 - top - size, size, font, color: ink });

  text('Non-Disclosure Agreement', 72, 72, 20, bold);
  text('A sample document of Signet. It is not legal advice and binds no one.', 72, 104, 9);
  const body = [
    'The Recipient named below will receive information that the Discloser marks as',
    'confidential. The Recipient agrees to keep that information secret, to use it only to',
    'evaluate a possible business relationship with the Discloser, and to return or destroy',
    'it when asked. This agreement lasts two years from the date of signing.',
  ];
  body.forEach((line, i) => {
    text(line, 72, 140 + i * 16, 11);
  });

  // Text tags: each becomes a field where it is printed, and is removed from the stored copy.
  text('Recipient name:', 72, 240, 11, bold);
  text('{{Full Name;role=Recipient}}', 180, 240);
  page.drawLine({ start: { x: 178, y: 792 - 256 }, end: { x: 460, y: 792 - 256 }, thickness: 0.5, color: ink });

  text('Signature:', 72, 290, 11, bold);
  text('{{Signature;role=Recipient;type=signature;width=200;height=40}}', 180, 290, 6);
  page.drawLine({ start: { x: 178, y: 792 - 334 }, end: { x: 460, y: 792 - 334 }, thickness: 0.5, color: ink });

  text('Date:', 72, 360, 11, bold);
  text('{{Date;role=Recipient;type=datenow}}', 180, 360);
  page.drawLine({ start: { x: 178, y: 792 - 376 }, end: { x: 460, y: 792 - 376 }, thickness: 0.5, color: ink });

  return pdf.save({ useObjectStreams: false });
}

const isEntry = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isEntry) {
  const output = path.resolve(process.argv[2] ?? SAMPLE_PDF);
  fs.mkdirSync(path.dirname(output), { recursive: true });
  fs.writeFileSync(output, await makeSamplePdf());
  process.stdout.write(`${path.relative(process.cwd(), output)}\n`);
}
