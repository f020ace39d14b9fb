/**
 * Digital signature of a finished PDF: an invisible signature field whose CMS signature covers the
 * whole file (issue 5; DocuSeal does the same with HexaPDF, reference/docuseal-behaviour.md §10.3).
 */
import { pdflibAddPlaceholder } from '@signpdf/placeholder-pdf-lib';
import { P12Signer } from '@signpdf/signer-p12';
import { SignPdf } from '@signpdf/signpdf';
import { PDFArray, PDFDict, PDFDocument, PDFName, PDFRef, PDFString } from 'pdf-lib';
import type { SigningIdentity } from './certificates.ts';

export interface SignPdfOptions {
  /** The signature dictionary's /Name: who signs (the account name). */
  name: string;
  /** /Reason; default `Signed by <name> with Signet` (see signatureReason). */
  reason?: string;
  /** /Location; default empty. */
  location?: string;
  /** /ContactInfo; default empty. */
  contactInfo?: string;
  /** /M and the CMS signingTime attribute; default now. */
  signingTime?: Date;
}

/** Name of the signature field added; a number is appended when the document already has one. */
const SIGNATURE_FIELD_NAME = 'Signet signature';
/** Smallest /Contents reservation, in bytes of CMS (the hex string in the file is twice as long). */
const MIN_SIGNATURE_BYTES = 8192;

/** The default /Reason: "Signed by <name> with Signet" (DocuSeal's is "Signed with DocuSeal.com"). */
export function signatureReason(name: string): string {
  return `Signed by ${name} with Signet`;
}

/**
 * Signs a PDF with the identity's PKCS#12: loads it with pdf-lib (classic xref tables, xref
 * streams and object streams all load), adds an invisible signature widget on the first page with
 * @signpdf/placeholder-pdf-lib, saves the whole document again (not an incremental update, so
 * any signature already in the input stops verifying), and fills /Contents with a CMS SignedData
 * from @signpdf/signer-p12: SubFilter adbe.pkcs7.detached, SHA-256, RSA, signed attributes
 * contentType + signingTime + messageDigest, and every certificate in the bundle embedded.
 * Not ETSI.CAdES.detached (PAdES B-B): that needs the ESS signing-certificate-v2 signed attribute
 * (ETSI EN 319 122-1 §5.2.2.3), which signer-p12 does not add.
 * /ByteRange covers the whole file except the /Contents hex string, so `pdfsig` reports
 * "Total document signed". Text entries (/Name, /Reason, ...) are written as PDF text strings, so
 * any script survives (UTF-16BE when not plain ASCII).
 * @param pdf the finished document's bytes
 * @param identity from loadSigningIdentity (only `p12` and `password` are used)
 * @returns the signed PDF
 * @throws pdf-lib's errors for bytes it cannot parse or an encrypted PDF; SignPdfError from
 *   @signpdf when the PKCS#12 does not open
 */
export async function signPdf(
  pdf: Uint8Array,
  identity: Pick<SigningIdentity, 'p12' | 'password'>,
  options: SignPdfOptions,
): Promise<Buffer> {
  const signingTime = options.signingTime ?? new Date();
  const doc = await PDFDocument.load(pdf, { updateMetadata: false });
  const fieldName = unusedFieldName(doc);
  pdflibAddPlaceholder({
    pdfDoc: doc,
    // The placeholder library writes these with PDFString.of, which neither escapes nor encodes:
    // pass the body of a ready-made literal string.
    name: literalTextBody(options.name),
    reason: literalTextBody(options.reason ?? signatureReason(options.name)),
    location: literalTextBody(options.location ?? ''),
    contactInfo: literalTextBody(options.contactInfo ?? ''),
    signingTime,
    // The CMS holds the bundle's certificates, so the bundle's size bounds it (plus the RSA
    // signature and signed attributes, well under 4 KiB).
    signatureLength: Math.max(MIN_SIGNATURE_BYTES, identity.p12.length + 4096),
    appName: 'Signet',
  });
  renameNewSignatureField(doc, fieldName);
  const prepared = await doc.save();
  const signer = new P12Signer(identity.p12, { passphrase: identity.password });
  return new SignPdf().sign(Buffer.from(prepared.buffer, prepared.byteOffset, prepared.byteLength), signer, signingTime);
}

/** The body of a PDF literal string holding `text` (ISO 32000-1 §7.3.4.2, §7.9.2.2). */
function literalTextBody(text: string): string {
  if (/^[\x20-\x7e]*$/.test(text)) return text.replace(/[\\()]/g, (c) => `\\${c}`);
  // UTF-16BE with a byte order mark, every byte as an octal escape so the string stays ASCII.
  let body = '\\376\\377';
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    body += `\\${(unit >> 8).toString(8).padStart(3, '0')}\\${(unit & 0xff).toString(8).padStart(3, '0')}`;
  }
  return body;
}

/** "Signet signature", or "Signet signature 2", ... if the AcroForm already has that name. */
function unusedFieldName(doc: PDFDocument): string {
  const taken = new Set<string>();
  const fields = doc.catalog.lookupMaybe(PDFName.of('AcroForm'), PDFDict)?.lookupMaybe(PDFName.of('Fields'), PDFArray);
  for (let i = 0; i < (fields?.size() ?? 0); i++) {
    const title = fields!.lookupMaybe(i, PDFDict)?.get(PDFName.of('T'));
    if (title && 'decodeText' in title) taken.add((title as PDFString).decodeText());
  }
  let name = SIGNATURE_FIELD_NAME;
  for (let n = 2; taken.has(name); n++) name = `${SIGNATURE_FIELD_NAME} ${n}`;
  return name;
}

/** The placeholder library names its field "Signature1" and appends it last to /Fields. */
function renameNewSignatureField(doc: PDFDocument, name: string): void {
  const fields = doc.catalog.lookup(PDFName.of('AcroForm'), PDFDict).lookup(PDFName.of('Fields'), PDFArray);
  const ref = fields.get(fields.size() - 1);
  const widget = ref instanceof PDFRef ? doc.context.lookup(ref, PDFDict) : undefined;
  widget?.set(PDFName.of('T'), PDFString.of(literalTextBody(name)));
}
