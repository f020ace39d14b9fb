/**
 * Which digital signatures a PDF carries and whether each holds: `POST /tools/verify`
 * (DocuSeal's app/controllers/api/tools_controller.rb#verify, reference/docuseal-behaviour.md §1.2)
 * and the GraphQL `verifyPdf` query.
 *
 * For each signature field with a value (ISO 32000-1 §12.8.1): the bytes its /ByteRange names are
 * hashed and checked against the CMS SignedData in /Contents (RFC 5652 §5.4: the messageDigest
 * signed attribute, then the signer's signature over the signed attributes) — so one flipped byte
 * anywhere in the signed ranges fails it. Besides DocuSeal's keys (`verification_result` messages
 * as HexaPDF words them, `signer_name`, `signing_reason`, `signing_time`, `signature_type`), each
 * signature says whether it is valid, whether its range covers the whole file (no bytes appended
 * after it), the signer certificate, and whether that certificate is one this service signs the
 * account's documents with (`trusted`).
 *
 * Libraries: mupdf (already the parser of every uploaded PDF: C code on WASM, robust on damaged
 * files) finds the signature dictionaries; PKI.js (PeculiarVentures' CMS/X.509 library on Node's
 * WebCrypto) verifies the CMS — node-forge, used to sign, cannot verify PKCS#7 signatures.
 */
import { createHash, webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import type { PDFDocument, PDFObject } from 'mupdf';
import { type KeyFolders, submissionsInFolders } from '../accounts/key-scopes.ts';
import * as pkijs from 'pkijs';
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import { loadMupdf, openPdf } from '../documents/pdf.ts';
import { AppError } from '../errors.ts';
import { trustedCertificates } from './certificates.ts';

/** One line of a signature's verification, as HexaPDF's VerificationResult::Message serialises. */
export interface VerificationMessage {
  type: 'info' | 'warning' | 'error';
  content: string;
}

/** The signer certificate of a signature. */
export interface SignerCertificate {
  subject: string;
  issuer: string;
  /** Lower-case hex. */
  serialNumber: string;
  notBefore: Date;
  notAfter: Date;
  /** Lower-case hex SHA-256 of the certificate's DER. */
  sha256Fingerprint: string;
}

export interface PdfSignatureReport {
  /** HexaPDF's messages: "Signature valid" / "Signature verification failed", and why not. */
  verificationResult: VerificationMessage[];
  /** The signer certificate's common name (else its subject), as HexaPDF's `signer_name`. */
  signerName: string | null;
  signingReason: string | null;
  /** The CMS signingTime attribute, else the signature dictionary's /M. */
  signingTime: Date | null;
  /** The signature dictionary's /SubFilter, e.g. `adbe.pkcs7.detached` or `ETSI.CAdES.detached`. */
  signatureType: string | null;
  /** The digest matches the signed bytes and the signature matches the signer certificate. */
  valid: boolean;
  /** The signed ranges are the whole file but the signature's own /Contents (nothing added after signing). */
  coversWholeDocument: boolean;
  /** The signer certificate is one this service signs the account's documents with. */
  trusted: boolean;
  certificate: SignerCertificate | null;
}

/** Signature dictionaries read from the file: at most this many are checked (a crafted file could list thousands). */
const MAX_SIGNATURES = 50;
/** Levels of /Kids followed in the field tree (cycles and absurd depths stop here). */
const MAX_FIELD_DEPTH = 32;

const OID_SIGNING_TIME = '1.2.840.113549.1.9.5';
const OID_COMMON_NAME = '2.5.4.3';
const NAMES: Record<string, string> = {
  '2.5.4.3': 'CN',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '1.2.840.113549.1.9.1': 'emailAddress',
};

const cryptoEngine = new pkijs.CryptoEngine({ name: 'node', crypto: webcrypto as unknown as Crypto });

interface SignatureDictionary {
  byteRange: number[] | null;
  contents: Uint8Array | null;
  reason: string | null;
  modified: string | null;
  subFilter: string | null;
}

/**
 * Verifies every signature of a PDF.
 * @param bytes the whole file as uploaded
 * @param trusted DER certificates this service signs with (certificates.ts trustedCertificates)
 * @returns one report per signature, in field order; [] for an unsigned PDF
 * @throws AppError VALIDATION `Malformed PDF` when the bytes are not a PDF mupdf can open (DocuSeal's
 *   422 body for HexaPDF::MalformedPDFError)
 */
export async function verifyPdfSignatures(
  bytes: Uint8Array,
  trusted: readonly Buffer[],
): Promise<PdfSignatureReport[]> {
  const mupdf = await loadMupdf();
  let doc: PDFDocument;
  try {
    doc = openPdf(mupdf, bytes, 'file');
  } catch (error) {
    throw new AppError('VALIDATION', 'Malformed PDF', { cause: error });
  }
  let dictionaries: SignatureDictionary[];
  try {
    dictionaries = signatureDictionaries(doc);
  } catch (error) {
    throw new AppError('VALIDATION', 'Malformed PDF', { cause: error });
  } finally {
    doc.destroy();
  }
  const trustedFingerprints = new Set(trusted.map(sha256Hex));
  const reports: PdfSignatureReport[] = [];
  for (const dictionary of dictionaries) reports.push(await verifySignature(bytes, dictionary, trustedFingerprints));
  return reports;
}

/** The /V dictionaries of the signature fields of the AcroForm (inherited /FT followed down /Kids). */
function signatureDictionaries(doc: PDFDocument): SignatureDictionary[] {
  const found: SignatureDictionary[] = [];
  const seen = new Set<number>();
  const visit = (field: PDFObject, inheritedType: string | null, depth: number) => {
    if (found.length >= MAX_SIGNATURES || depth > MAX_FIELD_DEPTH || !field.isDictionary()) return;
    if (field.isIndirect()) {
      const number = field.asIndirect();
      if (seen.has(number)) return;
      seen.add(number);
    }
    const ownType = field.get('FT');
    const type = ownType.isName() ? ownType.asName() : inheritedType;
    const value = field.get('V');
    if (type === 'Sig' && value.isDictionary()) found.push(readSignatureDictionary(value));
    const kids = field.get('Kids');
    if (kids.isArray()) for (let i = 0; i < kids.length; i += 1) visit(kids.get(i), type, depth + 1);
  };
  // mupdf's get() on a missing key gives a null object, and get() on that throws: walk with checks.
  const root = doc.getTrailer().get('Root');
  const form = root.isDictionary() ? root.get('AcroForm') : null;
  const fields = form?.isDictionary() ? form.get('Fields') : null;
  if (fields?.isArray()) for (let i = 0; i < fields.length; i += 1) visit(fields.get(i), null, 0);
  return found;
}

function readSignatureDictionary(value: PDFObject): SignatureDictionary {
  const text = (key: string) => {
    const object = value.get(key);
    return object.isString() ? object.asString() : null;
  };
  const range = value.get('ByteRange');
  const byteRange: number[] = [];
  if (range.isArray()) for (let i = 0; i < range.length; i += 1) byteRange.push(range.get(i).asNumber());
  const contents = value.get('Contents');
  const subFilter = value.get('SubFilter');
  return {
    byteRange: byteRange.length === 4 && byteRange.every(Number.isSafeInteger) ? byteRange : null,
    contents: contents.isString() ? contents.asByteString() : null,
    reason: text('Reason'),
    modified: text('M'),
    subFilter: subFilter.isName() ? subFilter.asName() : null,
  };
}

async function verifySignature(
  bytes: Uint8Array,
  dictionary: SignatureDictionary,
  trustedFingerprints: Set<string>,
): Promise<PdfSignatureReport> {
  const messages: VerificationMessage[] = [];
  const report: PdfSignatureReport = {
    verificationResult: messages,
    signerName: null,
    signingReason: dictionary.reason,
    signingTime: pdfDate(dictionary.modified),
    signatureType: dictionary.subFilter,
    valid: false,
    coversWholeDocument: false,
    trusted: false,
    certificate: null,
  };
  const [start, firstLength, secondStart, secondLength] = dictionary.byteRange ?? [];
  const rangeFits =
    start === 0 &&
    firstLength !== undefined &&
    secondStart !== undefined &&
    secondLength !== undefined &&
    firstLength >= 0 &&
    secondStart >= firstLength &&
    secondLength >= 0 &&
    secondStart + secondLength <= bytes.length;
  if (!rangeFits || !dictionary.contents) {
    messages.push({ type: 'error', content: 'Signature dictionary has no valid /ByteRange or /Contents' });
    messages.push({ type: 'error', content: 'Signature verification failed' });
    return report;
  }
  // The gap is exactly the hex string of /Contents (<...>), and nothing follows the second range.
  report.coversWholeDocument =
    secondStart + secondLength === bytes.length && bytes[firstLength] === 0x3c && bytes[secondStart - 1] === 0x3e;
  const signed = Buffer.concat([
    bytes.subarray(0, firstLength),
    bytes.subarray(secondStart, secondStart + secondLength),
  ]);

  let signedData: pkijs.SignedData;
  try {
    const asn1 = asn1js.fromBER(toArrayBuffer(dictionary.contents));
    if (asn1.offset === -1) throw new Error(asn1.result.error);
    signedData = new pkijs.SignedData({ schema: new pkijs.ContentInfo({ schema: asn1.result }).content });
  } catch {
    messages.push({ type: 'error', content: 'Signature /Contents is not a CMS SignedData structure' });
    messages.push({ type: 'error', content: 'Signature verification failed' });
    return report;
  }
  const certificates = (signedData.certificates ?? []).filter(
    (c): c is pkijs.Certificate => c instanceof pkijs.Certificate,
  );
  if (certificates.length === 0) messages.push({ type: 'error', content: 'No certificates found in signature' });
  const signerInfo = signedData.signerInfos[0];
  const signer = signerInfo ? signerCertificateOf(signerInfo, certificates) : undefined;
  const signingTime = signerInfo ? signingTimeOf(signerInfo) : null;
  if (signingTime) report.signingTime = signingTime;
  if (signer) {
    const der = Buffer.from(signer.toSchema().toBER(false));
    const fingerprint = sha256Hex(der);
    report.certificate = {
      subject: distinguishedName(signer.subject),
      issuer: distinguishedName(signer.issuer),
      serialNumber: Buffer.from(signer.serialNumber.valueBlock.valueHexView).toString('hex'),
      notBefore: signer.notBefore.value,
      notAfter: signer.notAfter.value,
      sha256Fingerprint: fingerprint,
    };
    report.signerName = commonName(signer.subject) ?? report.certificate.subject;
    report.trusted = trustedFingerprints.has(fingerprint);
    const selfSigned = distinguishedName(signer.subject) === distinguishedName(signer.issuer);
    if (selfSigned && !report.trusted) messages.push({ type: 'error', content: 'Self-signed certificate found' });
    const time = report.signingTime;
    if (time && (time < signer.notBefore.value || time > signer.notAfter.value))
      messages.push({ type: 'error', content: 'Signer certificate not valid at signing time' });
  } else if (certificates.length > 0) {
    messages.push({ type: 'error', content: 'Signer certificate not found in the certificates of the signature' });
  }

  let verified = false;
  if (signer) {
    try {
      const result = await signedData.verify(
        { signer: 0, data: toArrayBuffer(signed), checkChain: false, extendedMode: true },
        cryptoEngine,
      );
      verified = result.signatureVerified === true;
    } catch {
      verified = false;
    }
  }
  report.valid = verified;
  messages.push(
    verified
      ? { type: 'info', content: 'Signature valid' }
      : { type: 'error', content: 'Signature verification failed' },
  );
  if (verified && !report.coversWholeDocument)
    messages.push({ type: 'warning', content: 'The signature does not cover the whole document' });
  return report;
}

/** The certificate the SignerInfo names (issuerAndSerialNumber, RFC 5652 §5.3). */
function signerCertificateOf(info: pkijs.SignerInfo, certificates: pkijs.Certificate[]): pkijs.Certificate | undefined {
  const sid = info.sid;
  if (sid instanceof pkijs.IssuerAndSerialNumber) {
    return certificates.find((c) => c.issuer.isEqual(sid.issuer) && c.serialNumber.isEqual(sid.serialNumber));
  }
  return certificates[0];
}

function signingTimeOf(info: pkijs.SignerInfo): Date | null {
  const attribute = info.signedAttrs?.attributes.find((a) => a.type === OID_SIGNING_TIME);
  const value = attribute?.values[0];
  if (value instanceof asn1js.UTCTime || value instanceof asn1js.GeneralizedTime) return value.toDate();
  return null;
}

function commonName(name: pkijs.RelativeDistinguishedNames): string | null {
  const entry = name.typesAndValues.find((t) => t.type === OID_COMMON_NAME);
  return entry ? String(entry.value.valueBlock.value) : null;
}

/** RFC 4514-like text of a name, most significant first as written in the certificate ("CN=Signet, O=Signet"). */
function distinguishedName(name: pkijs.RelativeDistinguishedNames): string {
  return name.typesAndValues.map((t) => `${NAMES[t.type] ?? t.type}=${String(t.value.valueBlock.value)}`).join(', ');
}

/** A PDF date (ISO 32000-1 §7.9.4, `D:YYYYMMDDHHmmSSOHH'mm'`), or null when absent or unreadable. */
function pdfDate(text: string | null): Date | null {
  const match = text?.match(/^D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?([Zz+-])?(\d{2})?'?(\d{2})?/);
  if (!match) return null;
  const [, y, mo = '01', d = '01', h = '00', mi = '00', s = '00', sign, oh = '00', om = '00'] = match;
  const utc = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  const offset = (Number(oh) * 60 + Number(om)) * 60_000 * (sign === '-' ? -1 : sign === '+' ? 1 : 0);
  const date = new Date(utc - offset);
  return Number.isNaN(date.getTime()) ? null : date;
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

/** `/tools/verify`'s answer. */
export interface DocumentVerification {
  /** `verified`: the file's SHA-256 is one of the account's completed documents (§1.2); else `not_found`. */
  checksumStatus: 'verified' | 'not_found';
  signatures: PdfSignatureReport[];
}

/**
 * Verifies a document for an account: its signatures (verifyPdfSignatures, trusting the
 * certificates the service signs the account's documents with) and whether the exact bytes are
 * one of the account's completed documents, signed documents, combined PDFs and audit logs alike (not
 * the documents as filled so far). DocuSeal looks
 * the checksum up among every account's documents; here only the caller's, so a key cannot learn
 * whether another account produced a given file; for a key limited to folders, only the documents
 * of its folders' templates (src/accounts/key-scopes.ts), likewise.
 * @param folders the folders the caller's key is limited to; null or absent: every folder
 * @throws AppError VALIDATION `Malformed PDF`
 */
export async function verifyDocument(
  deps: { db: Db; config: Pick<Config, 'signingP12Path' | 'signingP12Password'> },
  accountId: number,
  bytes: Uint8Array,
  folders: KeyFolders | null = null,
): Promise<DocumentVerification> {
  const [signatures, produced] = await Promise.all([
    trustedCertificates(deps, accountId).then((trusted) => verifyPdfSignatures(bytes, trusted)),
    // Not the documents as filled so far (unsigned drafts; src/signing/submission-outputs.ts PREVIEW_KINDS).
    deps.db.completedDocument.findFirst({
      where: {
        accountId,
        sha256: sha256Hex(bytes),
        kind: { notIn: ['preview', 'preview_merged'] },
        ...(folders ? { submission: submissionsInFolders(folders) } : {}),
      },
      select: { id: true },
    }),
  ]);
  return { checksumStatus: produced ? 'verified' : 'not_found', signatures };
}
