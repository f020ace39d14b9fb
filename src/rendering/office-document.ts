/**
 * Checks shared by both renderers before an office document is converted.
 */
import path from 'node:path';
import { AppError } from '../errors.ts';

const OFFICE_EXTENSIONS = new Set(['docx', 'doc', 'odt', 'rtf']);

/**
 * The extension a converter is handed the file under: the filename's when it is .docx, .doc,
 * .odt or .rtf (LibreOffice and Gotenberg pick the import filter by it), else "docx".
 */
export function officeExtension(filename: string): string {
  const extension = path.extname(filename).slice(1).toLowerCase();
  return OFFICE_EXTENSIONS.has(extension) ? extension : 'docx';
}

/**
 * Refuses bytes that are no office document before a converter starts: DOCX and ODT are ZIP
 * packages, .doc an OLE compound file, RTF starts with "{\rtf".
 * @throws AppError VALIDATION.
 */
export function assertOfficeDocument(bytes: Buffer, filename: string): void {
  const name = filename || 'The document';
  if (bytes.length === 0) throw new AppError('VALIDATION', `${name} is empty.`);
  const zip = bytes.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x03, 0x04]));
  const ole = bytes.subarray(0, 8).equals(Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]));
  const rtf = bytes.subarray(0, 5).toString('latin1') === '{\\rtf';
  if (!zip && !ole && !rtf) throw new AppError('VALIDATION', `${name} is not a Word document (DOCX).`);
}
