/**
 * Digital signature of a finished PDF (issue 5; PAdES since issue 17): an invisible signature field
 * whose CMS signature covers the whole file (DocuSeal does the same with HexaPDF,
 * reference/docuseal-behaviour.md §10.3), made as ETSI EN 319 142-1 describes PAdES baseline
 * signatures:
 * - B-B: SubFilter ETSI.CAdES.detached, ESS signing-certificate-v2, no signing time among the
 *   signed attributes (PadesSigner);
 * - B-T: an RFC 3161 signature timestamp (options.pades.signatureTimestamps: TSA_URL's authority
 *   or Signet's own, timestamps.ts);
 * - B-LT: a Document Security Store added in an incremental update, with the certificates of the
 *   signature's and its timestamp's chains and CRLs for them (long-term-validation.ts);
 * - B-LTA: a document timestamp (ETSI.RFC3161) over all of it, in a further incremental update,
 *   when a document timestamper is given (a TSA_URL is configured).
 * Without `options.pades` the signature is B-B (tests, foreign keys).
 */
import { createHash } from 'node:crypto';
import { pdflibAddPlaceholder } from '@signpdf/placeholder-pdf-lib';
import { SignPdf, SignPdfError, Signer } from '@signpdf/signpdf';
import * as asn1js from 'asn1js';
import { ParseSpeeds, PDFArray, PDFDict, PDFDocument, PDFName, PDFRef, PDFString } from 'pdf-lib';
import * as pkijs from 'pkijs';
import type { SigningIdentity } from './certificates.ts';
import { type OpenedBundle, openPkcs12Bundle } from './pkcs12.ts';
import { addDocumentTimestamp, addValidationData, type RevocationSource } from './long-term-validation.ts';
import {
  derOf,
  derSetOrder,
  certificateOf,
  OID,
  PADES_SUBFILTER,
  parseAsn1,
  SHA256_ALGORITHM,
  sha256,
  signingCertificateV2,
  signSignerInfo,
  toArrayBuffer,
} from './pki.ts';
import type { Timestamper } from './timestamps.ts';

/** What makes a signature B-T, B-LT and B-LTA (see the module comment). */
export interface PadesServices {
  /** The signature timestamp's authority (B-T). */
  signatureTimestamps: Timestamper;
  /** Revocation data for the certificates of the signature and its timestamp (B-LT). */
  revocation: RevocationSource;
  /** The document timestamp's authority (B-LTA); undefined: none. */
  documentTimestamps?: Timestamper;
}

export interface SignPdfOptions {
  /** The signature dictionary's /Name: who signs (the account name). */
  name: string;
  /** /Reason; default `Signed by <name> with Signet` (see signatureReason). */
  reason?: string;
  /** /Location; default empty. */
  location?: string;
  /** /ContactInfo; default empty. */
  contactInfo?: string;
  /** /M, the claimed signing time (PAdES keeps it out of the signed attributes); default now. */
  signingTime?: Date;
  /** Timestamps and validation data; without: a B-B signature. */
  pades?: PadesServices;
}

/** Name of the signature field added; a number is appended when the document already has one. */
const SIGNATURE_FIELD_NAME = 'Signet signature';
/** Smallest /Contents reservation, in bytes of CMS (the hex string in the file is twice as long). */
const MIN_SIGNATURE_BYTES = 8192;

const evenUp = (n: number) => n + (n % 2);

/** The default /Reason: "Signed by <name> with Signet" (DocuSeal's is "Signed with DocuSeal.com"). */
export function signatureReason(name: string): string {
  return `Signed by ${name} with Signet`;
}

/**
 * Signs a PDF with the identity's PKCS#12: loads it with pdf-lib (classic xref tables, xref
 * streams and object streams all load) and signs it as {@link signPdfDocument} does.
 * @param pdf the finished document's bytes
 * @param identity from loadSigningIdentity (only `p12` and `password` are used)
 * @returns the signed PDF
 * @throws pdf-lib's errors for bytes it cannot parse or an encrypted PDF; SignPdfError when the
 *   PKCS#12 does not open or holds no RSA key with its certificate; TimestampError when a
 *   timestamp authority fails
 */
export async function signPdf(
  pdf: Uint8Array,
  identity: Pick<SigningIdentity, 'p12' | 'password'>,
  options: SignPdfOptions,
): Promise<Buffer> {
  const doc = await PDFDocument.load(pdf, { updateMetadata: false, parseSpeed: ParseSpeeds.Fastest });
  return signPdfDocument(doc, identity, options);
}

/**
 * Signs a document already loaded with pdf-lib (e.g. the one values were just drawn on, which
 * spares parsing it again): adds an invisible signature widget on the first page with
 * @signpdf/placeholder-pdf-lib, saves the whole document (not an incremental update, so any
 * signature already in the input stops verifying; no object streams, as drawValues saves), and
 * fills /Contents with PadesSigner's CMS (SubFilter ETSI.CAdES.detached). /ByteRange covers the
 * whole file except the /Contents hex string, so `pdfsig` reports "Total document signed" for a B-B
 * or B-T signature; B-LT and B-LTA then append their incremental updates (see the module comment).
 * Text entries (/Name, /Reason, ...) are written as PDF text strings, so any script survives
 * (UTF-16BE when not plain ASCII). The document is changed (the widget, and the DSS).
 * @returns the signed PDF
 * @throws SignPdfError when the PKCS#12 does not open or holds no RSA key with its certificate;
 *   TimestampError when a timestamp authority fails
 */
export async function signPdfDocument(
  doc: PDFDocument,
  identity: Pick<SigningIdentity, 'p12' | 'password'>,
  options: SignPdfOptions,
): Promise<Buffer> {
  const signingTime = options.signingTime ?? new Date();
  const fieldName = unusedFieldName(doc);
  const timestamper = options.pades?.signatureTimestamps;
  pdflibAddPlaceholder({
    pdfDoc: doc,
    // The placeholder library writes these with PDFString.of, which neither escapes nor encodes:
    // pass the body of a ready-made literal string.
    name: literalTextBody(options.name),
    reason: literalTextBody(options.reason ?? signatureReason(options.name)),
    location: literalTextBody(options.location ?? ''),
    contactInfo: literalTextBody(options.contactInfo ?? ''),
    signingTime,
    subFilter: PADES_SUBFILTER,
    // The CMS holds the bundle's certificates, so the bundle's size bounds it (plus the RSA
    // signature and signed attributes, well under 4 KiB), and the timestamp token.
    // Even: SignPdf pads the hex signature with half the reservation's length in zero bytes, and
    // an odd one would leave the string a character short (shifting every offset after it).
    signatureLength: evenUp(
      Math.max(MIN_SIGNATURE_BYTES, identity.p12.length + 4096 + (timestamper?.maxTokenBytes ?? 0)),
    ),
    appName: 'Signet',
  });
  renameNewSignatureField(doc, fieldName);
  // As drawValues saves: in one go, no object streams, form appearances left as they are.
  const prepared = await doc.save({
    useObjectStreams: false,
    objectsPerTick: Number.POSITIVE_INFINITY,
    updateFieldAppearances: false,
  });
  const signer = new PadesSigner(identity, timestamper);
  const signed = await new SignPdf().sign(
    Buffer.from(prepared.buffer, prepared.byteOffset, prepared.byteLength),
    signer,
    signingTime,
  );
  if (!options.pades) return signed;
  const withValidationData = await addValidationData(
    signed,
    doc,
    { cms: signer.lastSignature!, certificates: signer.lastCertificates },
    options.pades.revocation,
  );
  if (!options.pades.documentTimestamps) return withValidationData;
  return addDocumentTimestamp(withValidationData, doc, options.pades.documentTimestamps);
}

/** Opened bundles by SHA-256 of bundle and password; a handful at most (one per configured or stored certificate). */
const openedBundles = new Map<string, OpenedBundle>();
const MAX_OPENED_BUNDLES = 16;

/**
 * Opens a PKCS#12 bundle (node-forge: the first pkcs8ShroudedKeyBag's RSA key and the certificate
 * whose public key matches it, as @signpdf/signer-p12 takes them), once per process: decrypting
 * the bundle is a PBKDF2 in pure JavaScript, tens to hundreds of milliseconds, run in the parse
 * pool (pkcs12.ts openPkcs12Bundle).
 */
async function openP12(p12: Buffer, password: string): Promise<OpenedBundle> {
  const id = createHash('sha256').update(p12).update('\0').update(password).digest('hex');
  const cached = openedBundles.get(id);
  if (cached) return cached;
  let opened: OpenedBundle;
  try {
    opened = await openPkcs12Bundle(p12, password, 'the PKCS#12 bundle');
  } catch (error) {
    throw new SignPdfError(`The PKCS#12 bundle does not open: ${(error as Error).message}`, SignPdfError.TYPE_INPUT);
  }
  if (openedBundles.size >= MAX_OPENED_BUNDLES) openedBundles.clear();
  openedBundles.set(id, opened);
  return opened;
}

/**
 * The CMS SignedData of a PAdES baseline signature (ETSI EN 319 142-1 §5.3 B-B, with CAdES'
 * EN 319 122-1 §5.2 attributes), made with PKI.js structures and node:crypto's SHA-256 and RSA:
 * version 1, digest algorithm SHA-256, detached id-data content, every certificate of the bundle
 * (the signer's first), one SignerInfo (issuer and serial number; signed attributes contentType,
 * messageDigest and ESS signing-certificate-v2, in DER order, and no signingTime: the time comes
 * from the timestamp, and the claimed one is the dictionary's /M; sha256WithRSAEncryption). With
 * a timestamper, the unsigned attribute id-aa-signatureTimeStampToken holds an RFC 3161 token over
 * the SHA-256 of the signature value (B-T). `lastSignature` keeps the last CMS made.
 */
export class PadesSigner extends Signer {
  lastSignature: Buffer | undefined;
  /** The certificates of the last signature and of its timestamp token, DER (its validation data needs them). */
  lastCertificates: Buffer[] = [];

  constructor(
    private readonly identity: Pick<SigningIdentity, 'p12' | 'password'>,
    private readonly timestamper?: Timestamper,
  ) {
    super();
  }

  override async sign(pdfBuffer: Buffer): Promise<Buffer> {
    const { key, certificate, certificates } = await openP12(this.identity.p12, this.identity.password);
    const signer = certificateOf(certificate);
    const signerInfo = new pkijs.SignerInfo({
      version: 1,
      sid: new pkijs.IssuerAndSerialNumber({ issuer: signer.issuer, serialNumber: signer.serialNumber }),
      digestAlgorithm: SHA256_ALGORITHM(),
      signedAttrs: new pkijs.SignedAndUnsignedAttributes({
        type: 0,
        attributes: derSetOrder([
          new pkijs.Attribute({ type: OID.contentType, values: [new asn1js.ObjectIdentifier({ value: OID.data })] }),
          new pkijs.Attribute({
            type: OID.messageDigest,
            values: [new asn1js.OctetString({ valueHex: toArrayBuffer(sha256(pdfBuffer)) })],
          }),
          new pkijs.Attribute({ type: OID.signingCertificateV2, values: [signingCertificateV2(signer, certificate)] }),
        ]),
      }),
    });
    signSignerInfo(signerInfo, key);
    const ordered = [certificate, ...certificates.filter((c) => !c.equals(certificate))];
    this.lastCertificates = [...ordered];
    if (this.timestamper) {
      const { token, certificates: tokenCertificates } = await this.timestamper.stamp(
        sha256(signerInfo.signature.valueBlock.valueHexView),
      );
      this.lastCertificates.push(...tokenCertificates);
      signerInfo.unsignedAttrs = new pkijs.SignedAndUnsignedAttributes({
        type: 1,
        attributes: [new pkijs.Attribute({ type: OID.signatureTimeStampToken, values: [parseAsn1(token)] })],
      });
    }
    const signedData = new pkijs.SignedData({
      version: 1,
      digestAlgorithms: [SHA256_ALGORITHM()],
      encapContentInfo: new pkijs.EncapsulatedContentInfo({ eContentType: OID.data }),
      certificates: ordered.map((der) => certificateOf(der)),
      signerInfos: [signerInfo],
    });
    this.lastSignature = derOf(
      new pkijs.ContentInfo({ contentType: OID.signedData, content: signedData.toSchema(true) }),
    );
    return this.lastSignature;
  }
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
