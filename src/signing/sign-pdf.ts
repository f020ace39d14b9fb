/**
 * Digital signature of a finished PDF: an invisible signature field whose CMS signature covers the
 * whole file (issue 5; DocuSeal does the same with HexaPDF, reference/docuseal-behaviour.md §10.3).
 */
import { createHash, createPrivateKey, sign as rsaSign, type KeyObject } from 'node:crypto';
import { pdflibAddPlaceholder } from '@signpdf/placeholder-pdf-lib';
import { SignPdf, SignPdfError, Signer } from '@signpdf/signpdf';
import forge from 'node-forge';
import { ParseSpeeds, PDFArray, PDFDict, PDFDocument, PDFName, PDFRef, PDFString } from 'pdf-lib';
import { keyAndCertificateOf, type SigningIdentity } from './certificates.ts';

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
 * streams and object streams all load) and signs it as {@link signPdfDocument} does.
 * @param pdf the finished document's bytes
 * @param identity from loadSigningIdentity (only `p12` and `password` are used)
 * @returns the signed PDF
 * @throws pdf-lib's errors for bytes it cannot parse or an encrypted PDF; SignPdfError when the
 *   PKCS#12 does not open or holds no RSA key with its certificate
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
 * fills /Contents with a CMS SignedData (see NativeP12Signer): SubFilter adbe.pkcs7.detached,
 * SHA-256, RSA, signed attributes contentType + signingTime + messageDigest, and every
 * certificate in the bundle embedded. Not ETSI.CAdES.detached (PAdES B-B): that needs the ESS
 * signing-certificate-v2 signed attribute (ETSI EN 319 122-1 §5.2.2.3).
 * /ByteRange covers the whole file except the /Contents hex string, so `pdfsig` reports
 * "Total document signed". Text entries (/Name, /Reason, ...) are written as PDF text strings, so
 * any script survives (UTF-16BE when not plain ASCII). The document is changed (the widget).
 * @returns the signed PDF
 * @throws SignPdfError when the PKCS#12 does not open or holds no RSA key with its certificate
 */
export async function signPdfDocument(
  doc: PDFDocument,
  identity: Pick<SigningIdentity, 'p12' | 'password'>,
  options: SignPdfOptions,
): Promise<Buffer> {
  const signingTime = options.signingTime ?? new Date();
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
  // As drawValues saves: in one go, no object streams, form appearances left as they are.
  const prepared = await doc.save({
    useObjectStreams: false,
    objectsPerTick: Number.POSITIVE_INFINITY,
    updateFieldAppearances: false,
  });
  const signer = new NativeP12Signer(identity.p12, identity.password);
  return new SignPdf().sign(
    Buffer.from(prepared.buffer, prepared.byteOffset, prepared.byteLength),
    signer,
    signingTime,
  );
}

/** A PKCS#12 bundle opened once per process: the key for node:crypto and the certificates' DER. */
interface OpenedP12 {
  key: KeyObject;
  /** The certificate matching the key: its issuer and serial number name the signer (RFC 5652 §5.3). */
  certificate: forge.pki.Certificate;
  /** Every certificate of the bundle, in bag order (the signing certificate among them). */
  certificates: forge.pki.Certificate[];
}

/** Opened bundles by SHA-256 of bundle and password; a handful at most (one per configured or stored certificate). */
const openedBundles = new Map<string, OpenedP12>();
const MAX_OPENED_BUNDLES = 16;

/**
 * Opens a PKCS#12 bundle as @signpdf/signer-p12 does (node-forge; the first pkcs8ShroudedKeyBag's
 * RSA key and the certificate whose public key matches it), once per process: decrypting the
 * bundle is a PBKDF2 in pure JavaScript, tens to hundreds of milliseconds.
 */
function openP12(p12: Buffer, password: string): OpenedP12 {
  const id = createHash('sha256').update(p12).update('\0').update(password).digest('hex');
  const cached = openedBundles.get(id);
  if (cached) return cached;
  let bundle: forge.pkcs12.Pkcs12Pfx;
  try {
    bundle = forge.pkcs12.pkcs12FromAsn1(
      forge.asn1.fromDer(forge.util.createBuffer(p12.toString('binary'))),
      false,
      password,
    );
  } catch (error) {
    throw new SignPdfError(`The PKCS#12 bundle does not open: ${(error as Error).message}`, SignPdfError.TYPE_INPUT);
  }
  const { key, certificate, certificates } = keyAndCertificateOf(bundle);
  if (!key) throw new SignPdfError('The PKCS#12 bundle holds no RSA private key.', SignPdfError.TYPE_INPUT);
  if (!certificate)
    throw new SignPdfError('Failed to find a certificate that matches the private key.', SignPdfError.TYPE_INPUT);
  const opened = { key: createPrivateKey(forge.pki.privateKeyToPem(key)), certificate, certificates };
  if (openedBundles.size >= MAX_OPENED_BUNDLES) openedBundles.clear();
  openedBundles.set(id, opened);
  return opened;
}

const { asn1 } = forge;
const der = (node: forge.asn1.Asn1) => Buffer.from(asn1.toDer(node).getBytes(), 'binary');
const oid = (id: string) => asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OID, false, asn1.oidToDer(id).getBytes());
const algorithm = (id: string) =>
  asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
    oid(id),
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.NULL, false, ''),
  ]);
const attribute = (type: string, value: forge.asn1.Asn1) =>
  asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
    oid(type),
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SET, true, [value]),
  ]);

/**
 * The CMS SignedData (RFC 5652) that @signpdf/signer-p12 makes with node-forge, byte for byte
 * (test/sign-pdf.test.ts compares them), with the heavy parts in node:crypto: the SHA-256 of the
 * document and the RSA signature (PKCS#1 v1.5) run natively, and the bundle is opened once
 * (openP12). signer-p12 does all three in pure JavaScript on every signature, most of the
 * completion pipeline's time (bench/README.md, Completion). Structure: version 1, digest
 * algorithm SHA-256, detached id-data content, the bundle's certificates, one SignerInfo
 * (issuer and serial number; signed attributes contentType, signingTime as UTCTime (1950–2049)
 * or GeneralizedTime, messageDigest, in that order; rsaEncryption).
 */
export class NativeP12Signer extends Signer {
  constructor(
    private readonly p12: Buffer,
    private readonly password: string,
  ) {
    super();
  }

  override async sign(pdfBuffer: Buffer, signingTime: Date = new Date()): Promise<Buffer> {
    const { key, certificate, certificates } = openP12(this.p12, this.password);
    const { oids } = forge.pki;
    const time =
      signingTime >= new Date('1950-01-01T00:00:00Z') && signingTime < new Date('2050-01-01T00:00:00Z')
        ? asn1.create(asn1.Class.UNIVERSAL, asn1.Type.UTCTIME, false, asn1.dateToUtcTime(signingTime))
        : asn1.create(asn1.Class.UNIVERSAL, asn1.Type.GENERALIZEDTIME, false, asn1.dateToGeneralizedTime(signingTime));
    const digest = createHash('sha256').update(pdfBuffer).digest();
    const attributes = () => [
      attribute(oids.contentType!, oid(oids.data!)),
      attribute(oids.signingTime!, time),
      attribute(
        oids.messageDigest!,
        asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OCTETSTRING, false, digest.toString('binary')),
      ),
    ];
    // The signature covers the attributes as a SET OF (RFC 5652 §5.4), stored as [0] IMPLICIT.
    const signature = rsaSign('sha256', der(asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SET, true, attributes())), key);
    const signerInfo = asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.INTEGER, false, asn1.integerToDer(1).getBytes()),
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
        forge.pki.distinguishedNameToAsn1(certificate.issuer),
        asn1.create(asn1.Class.UNIVERSAL, asn1.Type.INTEGER, false, forge.util.hexToBytes(certificate.serialNumber)),
      ]),
      algorithm(oids.sha256!),
      asn1.create(asn1.Class.CONTEXT_SPECIFIC, 0, true, attributes()),
      algorithm(oids.rsaEncryption!),
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OCTETSTRING, false, signature.toString('binary')),
    ]);
    const signedData = asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.INTEGER, false, asn1.integerToDer(1).getBytes()),
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SET, true, [algorithm(oids.sha256!)]),
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [oid(oids.data!)]),
      asn1.create(
        asn1.Class.CONTEXT_SPECIFIC,
        0,
        true,
        certificates.map((cert) => forge.pki.certificateToAsn1(cert)),
      ),
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SET, true, [signerInfo]),
    ]);
    return der(
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
        oid(oids.signedData!),
        asn1.create(asn1.Class.CONTEXT_SPECIFIC, 0, true, [signedData]),
      ]),
    );
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
