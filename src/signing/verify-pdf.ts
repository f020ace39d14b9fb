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
 * PAdES (issue 17): the signature timestamp is checked (its token's signature, and that it imprints
 * the signature value), a document timestamp (ETSI.RFC3161) is checked against the bytes it covers,
 * the signer's certificate chain is followed through the certificates of the CMS and of the DSS
 * (until when all of them are valid), the DSS is searched for a CRL, signed by the issuer, for every
 * certificate of the chain and of the timestamp's that is not a trust anchor (revoked ones are
 * errors), and what later revisions changed is judged (pdf-revisions.ts: only validation data and
 * document timestamps, or other changes). From that, each signature's PAdES level: B-B, B-T, B-LT,
 * B-LTA. For a document of the account, the submission's audit chain is checked too
 * (audit-chain.ts), against the head its audit log printed.
 *
 * Libraries: mupdf (already the parser of every uploaded PDF: C code on WASM, robust on damaged
 * files) finds the signature dictionaries and the DSS; PKI.js (PeculiarVentures' CMS/X.509 library
 * on Node's WebCrypto) verifies the CMS — node-forge, used to sign, cannot verify PKCS#7 signatures.
 */
import { createHash } from 'node:crypto';
import * as asn1js from 'asn1js';
import type { PDFDocument, PDFObject } from 'mupdf';
import { type KeyFolders, submissionsInFolders } from '../accounts/key-scopes.ts';
import * as pkijs from 'pkijs';
import type { Db } from '../db/client.ts';
import { firstPageTextTask, loadMupdf, openPdf, type StreamReader, streamReader } from '../documents/pdf.ts';
import type { FileStorage } from '../documents/storage.ts';
import { AppError } from '../errors.ts';
import { PDF_LIMITS } from '../limits.ts';
import { bytesOf, ownBytes, runParseTask, type TaskBytes } from '../parse-pool/pool.ts';
import { parseTask } from '../parse-pool/tasks.ts';
import { type AuditChainReport, parseChainHead, verifyAuditChain } from './audit-chain.ts';
import { type SigningConfig, trustedCertificates } from './certificates.ts';
import { type ChangesAfterSigning, type Revisions, readRevisions } from './pdf-revisions.ts';
import {
  type CertificateSummary,
  commonNameOf,
  cryptoEngine as sharedCryptoEngine,
  DOCUMENT_TIMESTAMP_SUBFILTER as DOCUMENT_TIMESTAMP,
  PADES_SUBFILTER,
  nameText,
  OID,
  parseAsn1,
  parseCertificate,
  serialOf,
  summarizeCertificate,
} from './pki.ts';
import { checkTimeStampToken, readTstInfo } from './timestamps.ts';

/** One line of a signature's verification, as HexaPDF's VerificationResult::Message serialises. */
export interface VerificationMessage {
  type: 'info' | 'warning' | 'error';
  content: string;
}

/** The signer certificate of a signature. */
export type SignerCertificate = CertificateSummary;

/** A timestamp's check: a signature timestamp (B-T) or a document timestamp (B-LTA). */
export interface TimestampReport {
  /** When the authority saw the signature or document (TSTInfo genTime); null when unreadable. */
  time: Date | null;
  /** The authority's certificate subject ("CN=Signet Timestamp Authority, …"). */
  authority: string | null;
  /** The token's signature verifies, with a timestamping certificate, and it imprints what it covers. */
  valid: boolean;
}

/** A PAdES baseline level (ETSI EN 319 142-1 §5). */
export type PadesLevel = 'B-B' | 'B-T' | 'B-LT' | 'B-LTA';

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
  /** The PAdES level the signature reaches; null for other signatures and for document timestamps. */
  padesLevel: PadesLevel | null;
  /** The signature's timestamp (for a document timestamp: itself); null when it has none. */
  timestamp: TimestampReport | null;
  /** The earliest notAfter of the signer's certificate chain (the certificates in the CMS and the DSS). */
  certificatesValidUntil: Date | null;
  /**
   * The DSS holds a CRL, signed by the issuer, for every certificate of the signer's chain and the
   * timestamp's that is not a trust anchor.
   */
  revocationDataEmbedded: boolean;
  /** What the revisions after the signature change: nothing, validation data only, or more. */
  changesAfterSigning: ChangesAfterSigning;
}

/** Levels of /Kids followed in the field tree (cycles and absurd depths stop here). */
const MAX_FIELD_DEPTH = 32;

const cryptoEngine = sharedCryptoEngine();

interface SignatureDictionary {
  byteRange: number[] | null;
  contents: Uint8Array | null;
  reason: string | null;
  modified: string | null;
  subFilter: string | null;
}

/** The Document Security Store as read from the catalog (ISO 32000-2 §12.8.4.3). */
interface SecurityStore {
  certificates: pkijs.Certificate[];
  crls: pkijs.CertificateRevocationList[];
  ocsps: number;
  vriKeys: Set<string>;
}

/** What the parse pool's `verifyPdfFile` task answers: the file's signatures and its SHA-256 (hex). */
export interface VerifiedFile {
  signatures: PdfSignatureReport[];
  sha256: string;
}

/**
 * The parse pool's `verifyPdfFile` task (src/parse-worker/worker.ts): the file decoded (when base64),
 * its SHA-256, and its signatures (verifyPdfSignaturesHere).
 * @throws as verifyPdfSignaturesHere
 */
export async function verifyPdfFileHere(file: TaskBytes, trusted: readonly Uint8Array[]): Promise<VerifiedFile> {
  const bytes = bytesOf(file);
  return { sha256: sha256Hex(bytes), signatures: await verifyPdfSignaturesHere(bytes, trusted) };
}

/** The parse pool's `verifyPdfFile` task: verifyPdfFileHere in a worker (src/parse-pool/tasks.ts). */
export const verifyPdfFileTask = parseTask('verifyPdfFile', verifyPdfFileHere);

/**
 * Verifies every signature of a PDF, on the calling thread (a part of the parse pool's
 * `verifyPdfFile` task). The file is opened once; its revisions are read once for all its
 * signatures (pdf-revisions.ts readRevisions).
 * @param bytes the whole file as uploaded
 * @param trusted DER certificates this service signs with (certificates.ts trustedCertificates)
 * @returns one report per signature, in field order; [] for an unsigned PDF
 * @throws AppError VALIDATION `Malformed PDF` when the bytes are not a PDF mupdf can open (DocuSeal's
 *   422 body for HexaPDF::MalformedPDFError); `file has more than 50 signatures; …`, `file has N
 *   objects; …`, `file holds more than 64 MB of stream data to read; …` (PDF_LIMITS)
 */
export async function verifyPdfSignaturesHere(
  bytes: Uint8Array,
  trusted: readonly Uint8Array[],
): Promise<PdfSignatureReport[]> {
  const mupdf = await loadMupdf();
  let doc: PDFDocument;
  try {
    doc = openPdf(mupdf, bytes, 'file');
  } catch (error) {
    if (error instanceof AppError && error.message.startsWith('file has ')) throw error; // over PDF_LIMITS.objects
    throw new AppError('VALIDATION', 'Malformed PDF', { cause: error });
  }
  const streams = streamReader('file');
  let revisions: Revisions | undefined;
  try {
    let dictionaries: SignatureDictionary[];
    let store: SecurityStore;
    try {
      dictionaries = signatureDictionaries(doc);
      store = securityStore(doc, streams);
    } catch (error) {
      if (error instanceof AppError) throw error;
      throw new AppError('VALIDATION', 'Malformed PDF', { cause: error });
    }
    const trustedFingerprints = new Set(trusted.map(sha256Hex));
    const reports: PdfSignatureReport[] = [];
    const changesAfter = (end: number) => {
      revisions ??= readRevisions(mupdf, bytes, doc, streams);
      return revisions.changesAfter(end);
    };
    for (const dictionary of dictionaries)
      reports.push(await verifySignature(bytes, dictionary, trustedFingerprints, store, changesAfter));
    // B-LTA: a valid document timestamp covers the signature and its validation data (it comes after both).
    dictionaries.forEach((dictionary, index) => {
      const report = reports[index]!;
      if (report.padesLevel !== 'B-LT') return;
      const end = rangeEnd(dictionary);
      const covered = dictionaries.some(
        (other, j) =>
          other.subFilter === DOCUMENT_TIMESTAMP &&
          reports[j]!.valid &&
          rangeEnd(other) > end &&
          other.byteRange?.[0] === 0,
      );
      if (covered) report.padesLevel = 'B-LTA';
    });
    return reports;
  } finally {
    revisions?.destroy();
    doc.destroy();
  }
}

/** Where a signature's second range ends: the end of its revision. */
const rangeEnd = (dictionary: SignatureDictionary) =>
  dictionary.byteRange ? dictionary.byteRange[2]! + dictionary.byteRange[3]! : 0;

/** Streams of the DSS read at most (a crafted file could list thousands). */
const MAX_DSS_ITEMS = 200;

/** The DSS of the catalog: its certificates and CRLs parsed (unparseable ones skipped), OCSP responses counted. */
function securityStore(doc: PDFDocument, reader: StreamReader): SecurityStore {
  const store: SecurityStore = { certificates: [], crls: [], ocsps: 0, vriKeys: new Set() };
  const root = doc.getTrailer().get('Root');
  const dss = root.isDictionary() ? root.get('DSS') : null;
  if (!dss?.isDictionary()) return store;
  const streams = (key: string): Uint8Array[] => {
    const array = dss.get(key);
    const found: Uint8Array[] = [];
    if (!array.isArray()) return found;
    for (let i = 0; i < Math.min(array.length, MAX_DSS_ITEMS); i++) {
      const item = array.get(i);
      if (item.isStream()) found.push(reader.decoded(item));
    }
    return found;
  };
  for (const der of streams('Certs')) {
    try {
      store.certificates.push(parseCertificate(der));
    } catch {
      // Not a certificate: it vouches for nothing.
    }
  }
  for (const der of streams('CRLs')) {
    try {
      store.crls.push(new pkijs.CertificateRevocationList({ schema: parseAsn1(der) }));
    } catch {
      // Not a CRL.
    }
  }
  const ocsps = dss.get('OCSPs');
  store.ocsps = ocsps.isArray() ? Math.min(ocsps.length, MAX_DSS_ITEMS) : 0;
  const vri = dss.get('VRI');
  if (vri.isDictionary())
    vri.forEach((_value, key) => {
      store.vriKeys.add(String(key));
    });
  return store;
}

/** The /V dictionaries of the signature fields of the AcroForm (inherited /FT followed down /Kids). */
function signatureDictionaries(doc: PDFDocument): SignatureDictionary[] {
  const found: SignatureDictionary[] = [];
  const seen = new Set<number>();
  const visit = (field: PDFObject, inheritedType: string | null, depth: number) => {
    if (depth > MAX_FIELD_DEPTH || !field.isDictionary()) return;
    if (field.isIndirect()) {
      const number = field.asIndirect();
      if (seen.has(number)) return;
      seen.add(number);
    }
    const ownType = field.get('FT');
    const type = ownType.isName() ? ownType.asName() : inheritedType;
    const value = field.get('V');
    if (type === 'Sig' && value.isDictionary()) {
      if (found.length === PDF_LIMITS.signatures)
        throw new AppError(
          'VALIDATION',
          `file has more than ${PDF_LIMITS.signatures} signatures; at most ${PDF_LIMITS.signatures} are checked.`,
        );
      found.push(readSignatureDictionary(value));
    }
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
  store: SecurityStore,
  changesAfter: (end: number) => ChangesAfterSigning,
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
    padesLevel: null,
    timestamp: null,
    certificatesValidUntil: null,
    revocationDataEmbedded: false,
    changesAfterSigning: 'none',
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
  report.changesAfterSigning = report.coversWholeDocument ? 'none' : changesAfter(secondStart + secondLength);
  // The signed bytes, copied once a signature needs them (a file may hold 50 ranges of nearly its size).
  let signedBytes: Buffer | undefined;
  const signedOf = () =>
    (signedBytes ??= Buffer.concat([
      bytes.subarray(0, firstLength),
      bytes.subarray(secondStart, secondStart + secondLength),
    ]));
  const finish = (verified: boolean) => {
    report.valid = verified;
    messages.push(
      verified
        ? { type: 'info', content: dictionary.subFilter === DOCUMENT_TIMESTAMP ? 'Timestamp valid' : 'Signature valid' }
        : { type: 'error', content: 'Signature verification failed' },
    );
    if (verified && report.changesAfterSigning === 'validation_data')
      messages.push({
        type: 'info',
        content: 'Revisions after the signature add only validation data and document timestamps',
      });
    else if (verified && !report.coversWholeDocument)
      messages.push({ type: 'warning', content: 'The signature does not cover the whole document' });
    return report;
  };

  if (dictionary.subFilter === DOCUMENT_TIMESTAMP) {
    const token = trimmedDer(dictionary.contents);
    const tstInfo = token ? readTstInfo(token) : null;
    report.timestamp = { time: tstInfo?.genTime ?? null, authority: null, valid: false };
    if (tstInfo) report.signingTime = tstInfo.genTime;
    try {
      const digest = createHash('sha256')
        .update(bytes.subarray(0, firstLength))
        .update(bytes.subarray(secondStart, secondStart + secondLength))
        .digest();
      const checked = await checkTimeStampToken(token!, { digest });
      report.timestamp = { time: checked.genTime, authority: nameText(checked.certificate.subject), valid: true };
      describeCertificate(report, checked.certificate, trustedFingerprints);
      report.certificatesValidUntil = validUntil(
        chainOf(checked.certificate, [...checked.certificates, ...store.certificates]),
      );
    } catch (error) {
      messages.push({ type: 'error', content: `Timestamp token does not verify: ${(error as Error).message}` });
    }
    return finish(report.timestamp.valid);
  }

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
  const timestamp = signerInfo ? await signatureTimestampOf(signerInfo) : null;
  if (timestamp) {
    report.timestamp = timestamp.report;
    if (!timestamp.report.valid)
      messages.push({ type: 'error', content: `Signature timestamp does not verify: ${timestamp.problem}` });
  }
  if (signer) {
    describeCertificate(report, signer, trustedFingerprints);
    const selfSigned = signer.subject.isEqual(signer.issuer);
    if (selfSigned && !report.trusted) messages.push({ type: 'error', content: 'Self-signed certificate found' });
    // The time to judge the certificate at: the timestamp's when there is one (PAdES), else the claimed one.
    const time = timestamp?.report.valid ? timestamp.report.time : report.signingTime;
    if (time && (time < signer.notBefore.value || time > signer.notAfter.value))
      messages.push({ type: 'error', content: 'Signer certificate not valid at signing time' });
    const pool = [...certificates, ...store.certificates, ...(timestamp?.chain ?? [])];
    const chain = chainOf(signer, pool);
    report.certificatesValidUntil = validUntil(chain);
    await verifyCrlSigners(store, pool);
    const revocation = revocationOf([...chain, ...(timestamp?.chain ?? [])], pool, store);
    report.revocationDataEmbedded = revocation.embedded;
    for (const revoked of revocation.revoked)
      messages.push({ type: 'error', content: `Certificate revoked: ${revoked}` });
  } else if (certificates.length > 0) {
    messages.push({ type: 'error', content: 'Signer certificate not found in the certificates of the signature' });
  }

  let verified = false;
  if (signer) {
    try {
      const result = await signedData.verify(
        { signer: 0, data: toArrayBuffer(signedOf()), checkChain: false, extendedMode: true },
        cryptoEngine,
      );
      verified = result.signatureVerified === true;
    } catch {
      verified = false;
    }
  }
  if (dictionary.subFilter === PADES_SUBFILTER && signerInfo && verified)
    report.padesLevel = padesLevelOf(signerInfo, report, messages);
  return finish(verified);
}

/**
 * B-B when the signed attributes are PAdES's (ESS signing-certificate-v2 or v1, no signingTime);
 * B-T with a valid signature timestamp; B-LT when the DSS also has the revocation data and
 * nothing but validation data came after (B-LTA is decided with the document timestamps).
 * @returns null when not even B-B (with a warning saying why)
 */
function padesLevelOf(
  signerInfo: pkijs.SignerInfo,
  report: PdfSignatureReport,
  messages: VerificationMessage[],
): PadesLevel | null {
  const attributes = signerInfo.signedAttrs?.attributes ?? [];
  const has = (type: string) => attributes.some((a) => a.type === type);
  if (!has(OID.signingCertificateV2) && !has(OID.signingCertificate)) {
    messages.push({ type: 'warning', content: 'Not PAdES: no ESS signing-certificate attribute' });
    return null;
  }
  if (has(OID.signingTime)) {
    messages.push({ type: 'warning', content: 'Not PAdES: a signingTime signed attribute' });
    return null;
  }
  if (!report.timestamp?.valid) return 'B-B';
  if (!report.revocationDataEmbedded || report.changesAfterSigning === 'other') return 'B-T';
  return 'B-LT';
}

/** The signer certificate's fields, name and whether it is one the service signs with. */
function describeCertificate(report: PdfSignatureReport, certificate: pkijs.Certificate, trusted: Set<string>): void {
  report.certificate = summarizeCertificate(certificate, Buffer.from(certificate.toSchema().toBER(false)));
  const fingerprint = report.certificate.sha256Fingerprint;
  report.signerName = commonNameOf(certificate.subject) ?? report.certificate.subject;
  report.trusted = trusted.has(fingerprint);
}

/** The DER of the first ASN.1 element of /Contents (its zero padding cut), or null. */
function trimmedDer(contents: Uint8Array): Uint8Array | null {
  const parsed = asn1js.fromBER(toArrayBuffer(contents));
  return parsed.offset === -1 ? null : contents.subarray(0, parsed.offset);
}

/** The signature timestamp of a SignerInfo (B-T), checked: it must imprint the signature value. */
async function signatureTimestampOf(
  info: pkijs.SignerInfo,
): Promise<{ report: TimestampReport; problem: string; chain: pkijs.Certificate[] } | null> {
  const attribute = info.unsignedAttrs?.attributes.find((a) => a.type === OID.signatureTimeStampToken);
  const value = attribute?.values[0];
  if (!value) return null;
  const token = new Uint8Array(value.toBER(false));
  const digest = createHash('sha256').update(info.signature.valueBlock.valueHexView).digest();
  try {
    const checked = await checkTimeStampToken(token, { digest });
    return {
      report: { time: checked.genTime, authority: nameText(checked.certificate.subject), valid: true },
      problem: '',
      chain: chainOf(checked.certificate, checked.certificates),
    };
  } catch (error) {
    return {
      report: { time: readTstInfo(token)?.genTime ?? null, authority: null, valid: false },
      problem: (error as Error).message,
      chain: [],
    };
  }
}

/** Longest certificate chain followed (a loop of cross-signed certificates stops here). */
const MAX_CHAIN = 8;

/** The certificate and its issuers found in `pool` by name (a self-signed one ends it). */
function chainOf(certificate: pkijs.Certificate, pool: pkijs.Certificate[]): pkijs.Certificate[] {
  const chain = [certificate];
  let current = certificate;
  while (chain.length < MAX_CHAIN && !current.subject.isEqual(current.issuer)) {
    const issuer = pool.find((c) => c.subject.isEqual(current.issuer) && !chain.includes(c));
    if (!issuer) break;
    chain.push(issuer);
    current = issuer;
  }
  return chain;
}

const validUntil = (chain: pkijs.Certificate[]) =>
  chain.length === 0 ? null : new Date(Math.min(...chain.map((c) => c.notAfter.value.getTime())));

/**
 * Whether the DSS has, for each certificate that is not self-signed, a CRL naming its issuer and
 * signed by it (the issuer found among `pool`); and which certificates such a CRL lists as revoked.
 * (Signatures are checked synchronously against a cache of PKI.js verifications made beforehand.)
 */
function revocationOf(
  certificates: pkijs.Certificate[],
  pool: pkijs.Certificate[],
  store: SecurityStore,
): { embedded: boolean; revoked: string[] } {
  let embedded = certificates.length > 0;
  const revoked: string[] = [];
  for (const certificate of certificates) {
    if (certificate.subject.isEqual(certificate.issuer)) continue;
    const issuers = new Set(pool.filter((c) => c.subject.isEqual(certificate.issuer)).map(fingerprintOf));
    const crls = store.crls.filter((crl) => issuers.has(crlSignedBy.get(crl) ?? ''));
    if (crls.length === 0) {
      embedded = false;
      continue;
    }
    const serial = serialOf(certificate).toString('hex');
    const listed = crls.some((crl) =>
      (crl.revokedCertificates ?? []).some(
        (r) => Buffer.from(r.userCertificate.valueBlock.valueHexView).toString('hex') === serial,
      ),
    );
    if (listed) revoked.push(nameText(certificate.subject));
  }
  return { embedded, revoked };
}

/** The fingerprint of the certificate that signed each DSS CRL, found beforehand (verifyCrlSigners). */
const crlSignedBy = new WeakMap<pkijs.CertificateRevocationList, string>();

const fingerprintOf = (certificate: pkijs.Certificate) => sha256Hex(Buffer.from(certificate.toSchema().toBER(false)));

/** Finds, for each CRL of the store, the certificate of `pool` whose key verifies it. */
async function verifyCrlSigners(store: SecurityStore, pool: pkijs.Certificate[]): Promise<void> {
  for (const crl of store.crls) {
    if (crlSignedBy.has(crl)) continue;
    for (const candidate of pool) {
      if (!crl.issuer.isEqual(candidate.subject)) continue;
      try {
        if (await crl.verify({ issuerCertificate: candidate }, cryptoEngine)) {
          crlSignedBy.set(crl, fingerprintOf(candidate));
          break;
        }
      } catch {
        // another key under the same name
      }
    }
  }
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
  const attribute = info.signedAttrs?.attributes.find((a) => a.type === OID.signingTime);
  const value = attribute?.values[0];
  if (value instanceof asn1js.UTCTime || value instanceof asn1js.GeneralizedTime) return value.toDate();
  return null;
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
  /** For one of the account's completed documents: its submission's audit chain now (audit-chain.ts). */
  auditTrail: AuditChainReport | null;
}

/**
 * Verifies a document for an account: its signatures (verifyPdfSignatures, trusting the
 * certificates the service signs the account's documents with) and whether the exact bytes are
 * one of the account's completed documents, signed documents, combined PDFs and audit logs alike (not
 * the documents as filled so far). DocuSeal looks
 * the checksum up among every account's documents; here only the caller's, so a key cannot learn
 * whether another account produced a given file; for a key limited to folders, only the documents
 * of its folders' templates (src/accounts/key-scopes.ts), likewise. For such a document, its
 * submission's audit chain is checked against the head its audit log printed (read from the stored
 * audit log).
 * @param file the file (bytes, handed over to the parse pool's worker: the caller does not use them
 *   afterwards; or base64, decoded there)
 * @param folders the folders the caller's key is limited to; null or absent: every folder
 * @throws AppError VALIDATION `Malformed PDF`, PDF_LIMITS' errors (verifyPdfSignaturesHere); the
 *   parse pool's limits (`The file could not be verified within 20 s (PARSE_TIMEOUT_SECONDS).`, …)
 */
export async function verifyDocument(
  deps: { db: Db; config: SigningConfig; storage?: FileStorage },
  accountId: number,
  file: TaskBytes,
  folders: KeyFolders | null = null,
): Promise<DocumentVerification> {
  const trusted = await trustedCertificates(deps, accountId);
  // In the parse pool: the file decoded, hashed and its signatures checked, off the event loop.
  const input = file instanceof Uint8Array ? ownBytes(file) : file;
  const { signatures, sha256 } = await runParseTask(verifyPdfFileTask, [input, trusted.map(ownBytes)], {
    owner: accountId,
    subject: 'The file',
    verb: 'verified',
    transfer: input instanceof Uint8Array ? [input] : [],
  });
  // Not the documents as filled so far (unsigned drafts; src/signing/submission-outputs.ts PREVIEW_KINDS).
  const produced = await deps.db.completedDocument.findFirst({
    where: {
      accountId,
      sha256,
      kind: { notIn: ['preview', 'preview_merged'] },
      ...(folders ? { submission: submissionsInFolders(folders) } : {}),
    },
    select: { id: true, submissionId: true },
  });
  const auditTrail = produced ? await auditTrailOf(deps, produced.submissionId, accountId) : null;
  return { checksumStatus: produced ? 'verified' : 'not_found', signatures, auditTrail };
}

/** The submission's audit chain, with the head printed on its audit log's first page when the log can be read. */
async function auditTrailOf(
  deps: { db: Db; storage?: FileStorage },
  submissionId: number,
  accountId: number,
): Promise<AuditChainReport> {
  const log = await deps.db.completedDocument.findFirst({
    where: { submissionId, kind: 'audit_log' },
    select: { file: { select: { storageKey: true } } },
  });
  let sealed: { events: number; head: string } | null = null;
  if (log && deps.storage) {
    try {
      const bytes = await deps.storage.read(log.file.storageKey);
      sealed = parseChainHead(
        await runParseTask(firstPageTextTask, [ownBytes(bytes)], { owner: accountId, subject: 'The audit log' }),
      );
    } catch {
      sealed = null;
    }
  }
  return verifyAuditChain(deps.db, submissionId, sealed);
}
