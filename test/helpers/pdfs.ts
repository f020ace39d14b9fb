/** Test PDFs: the shared fixtures, and small PDFs drawn with pdf-lib. */
import fs from 'node:fs';
import path from 'node:path';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { ROOT } from './processes.ts';

/** Bytes of ../shared/fixtures/pdf/<name>. */
export function fixturePdf(name: string): Buffer {
  return fs.readFileSync(path.join(ROOT, '..', 'shared', 'fixtures', 'pdf', name));
}

export interface DrawnText {
  text: string;
  /** Points from the left edge. */
  x: number;
  /** Points from the top edge (baseline at y + size). */
  y: number;
  size?: number;
}

/**
 * A PDF whose pages carry the given texts (Helvetica).
 * @param pages each page's size in points (default Letter) and texts
 */
export async function drawPdf(pages: { size?: [number, number]; texts?: DrawnText[] }[]): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const spec of pages) {
    const [width, height] = spec.size ?? [612, 792];
    const page = pdf.addPage([width, height]);
    for (const t of spec.texts ?? []) {
      const size = t.size ?? 12;
      page.drawText(t.text, { x: t.x, y: height - t.y - size, size, font });
    }
  }
  return pdf.save();
}

export const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

/**
 * A POST /templates/pdf body with roles Buyer (name, optional phone, amount, agree checkbox) and
 * Seller (signature, optional stamp image) on documenso-letter-size.pdf: the create tests' template.
 */
export function buyerSellerTemplateBody(name: string, documentName: string): Record<string, unknown> {
  const area = (y: number) => [{ x: 72, y, w: 150, h: 24, page: 1 }];
  return {
    name,
    documents: [{ name: documentName, file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [
      { name: 'Full Name', role: 'Buyer', areas: area(72) },
      { name: 'Phone', type: 'phone', role: 'Buyer', required: false, areas: area(110) },
      { name: 'Amount', type: 'number', role: 'Buyer', areas: area(150) },
      { name: 'Agree', type: 'checkbox', role: 'Buyer', areas: area(190) },
      { name: 'Seller Signature', type: 'signature', role: 'Seller', areas: area(300) },
      { name: 'Stamp Image', type: 'image', role: 'Seller', required: false, areas: area(340) },
    ],
  };
}
