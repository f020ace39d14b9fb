/**
 * PAdES long-term validation (issue 17; ETSI EN 319 142-1 §5.4 B-LT and §5.5 B-LTA; ISO 32000-2
 * §12.8.4.3 DSS, §12.8.5 document timestamps), added to a signed PDF in incremental updates so the
 * signature stays byte-for-byte intact:
 *
 * - addValidationData: the Document Security Store (/DSS in the catalog) with every certificate of
 *   the signature's chain and of its signature timestamp's chain (/Certs) and a CRL for each
 *   certificate that is not a trust anchor (/CRLs), plus a /VRI entry for the signature, keyed by
 *   the upper-case hex SHA-1 of its /Contents string (the bytes of the string, zero padding
 *   included, as Adobe and iText compute it). The streams are stored uncompressed (DER does not
 *   compress, and a verifier reads them as they are). A DSS already in the document is kept and
 *   extended.
 * - addDocumentTimestamp: a signature field whose value is a /DocTimeStamp dictionary (SubFilter
 *   ETSI.RFC3161) holding an RFC 3161 token over the whole file before it, DSS included, so that
 *   a change to the DSS, the signature or the document shows, and the time of all of it is fixed.
 *
 * Revocation data comes from a RevocationSource (revocation.ts: the deployment's own CA issues its
 * CRL locally; other issuers' CRLs are downloaded from their distribution points).
 */
import { SignPdf, Signer } from '@signpdf/signpdf';
import {
  PDFArray,
  PDFDict,
  type PDFDocument,
  PDFInvalidObject,
  PDFName,
  PDFNumber,
  type PDFObject,
  PDFRef,
  PDFString,
} from 'pdf-lib';
import type * as pkijs from 'pkijs';
import { createHash } from 'node:crypto';
import { appendIncrementalUpdate } from './incremental-update.ts';
import { certificateOf, DOCUMENT_TIMESTAMP_SUBFILTER, isIssuedBy, nameText, sha256 } from './pki.ts';
import type { Timestamper } from './timestamps.ts';

/** Where CRLs for certificates come from (revocation.ts). */
export interface RevocationSource {
  /**
   * CRLs (DER) that vouch for `certificate`, issued by `issuer`, each checked to be signed by it;
   * [] when none can be had (the reason is logged by the source).
   */
  crlsFor(certificate: pkijs.Certificate, issuer: pkijs.Certificate): Promise<Buffer[]>;
}

/** The validation material of one signature. */
export interface ValidationData {
  /** DER, without repeats: the chain of the signer and of the signature timestamp's TSA. */
  certificates: Buffer[];
  /** DER, without repeats. */
  crls: Buffer[];
  /** Certificates that are neither anchors nor have an issuer among the certificates (names). */
  unanchored: string[];
}

const fingerprint = (der: Uint8Array) => createHash('sha256').update(der).digest('hex');

/** Whether `issuer` signed `certificate`, by pair of fingerprints: the same few certificates sign every document. */
const issuedBy = new Map<string, boolean>();

async function checkIssuedBy(
  certificate: { key: string; parsed: pkijs.Certificate },
  issuer: { key: string; parsed: pkijs.Certificate },
): Promise<boolean> {
  if (!certificate.parsed.issuer.isEqual(issuer.parsed.subject)) return false;
  const pair = `${certificate.key}:${issuer.key}`;
  let result = issuedBy.get(pair);
  if (result === undefined) {
    result = await isIssuedBy(certificate.parsed, issuer.parsed);
    if (issuedBy.size >= 1024) issuedBy.clear();
    issuedBy.set(pair, result);
  }
  return result;
}

/**
 * The certificates of a signature (its CMS and timestamp tokens) and CRLs for each one that has
 * its issuer among them and is not self-signed (a self-signed certificate is a trust anchor: no
 * revocation data applies to it, RFC 5280 §6.1). One request per issuer: its CRL covers all the
 * certificates it issued.
 */
export async function collectValidationData(
  certificates: readonly Buffer[],
  revocation: RevocationSource,
): Promise<ValidationData> {
  const unique = new Map<string, { key: string; der: Buffer; parsed: pkijs.Certificate }>();
  for (const der of certificates) {
    const key = fingerprint(der);
    if (!unique.has(key)) unique.set(key, { key, der, parsed: certificateOf(der) });
  }
  const pool = [...unique.values()];
  const crls = new Map<string, Buffer>();
  const askedIssuers = new Set<string>();
  const unanchored: string[] = [];
  for (const certificate of pool) {
    if (await checkIssuedBy(certificate, certificate)) continue;
    let issuer: (typeof pool)[number] | undefined;
    for (const candidate of pool)
      if (candidate !== certificate && (await checkIssuedBy(certificate, candidate))) {
        issuer = candidate;
        break;
      }
    if (!issuer) {
      unanchored.push(nameText(certificate.parsed.subject));
      continue;
    }
    if (askedIssuers.has(issuer.key)) continue;
    askedIssuers.add(issuer.key);
    for (const crl of await revocation.crlsFor(certificate.parsed, issuer.parsed)) crls.set(fingerprint(crl), crl);
  }
  return { certificates: pool.map((c) => c.der), crls: [...crls.values()], unanchored };
}

/** The /Contents string of the signature whose CMS is `cms`, as bytes (zero padding included). */
export function contentsOf(pdf: Buffer, cms: Buffer): Buffer {
  const at = pdf.indexOf(`<${cms.toString('hex')}`, 0, 'latin1');
  if (at < 0) throw new Error('the signature is not in the file');
  const end = pdf.indexOf('>', at, 'latin1');
  return Buffer.from(pdf.subarray(at + 1, end).toString('latin1'), 'hex');
}

/** The VRI key of a signature: upper-case hex SHA-1 of its /Contents bytes (see the module comment). */
export function vriKey(contents: Uint8Array): string {
  return createHash('sha1').update(contents).digest('hex').toUpperCase();
}

/**
 * Adds the DSS for the signature `cms` of `pdf` (B-LT; see the module comment) as an incremental
 * update.
 * @param doc the pdf-lib document `pdf` was saved from (its catalog is written again with /DSS)
 * @param signature the signature's CMS and the certificates it and its timestamp carry
 *   (PadesSigner.lastSignature, lastCertificates)
 * @returns the file with the update appended
 */
export async function addValidationData(
  pdf: Buffer,
  doc: PDFDocument,
  signature: { cms: Buffer; certificates: Buffer[] },
  revocation: RevocationSource,
): Promise<Buffer> {
  const contents = contentsOf(pdf, signature.cms);
  const data = await collectValidationData(signature.certificates, revocation);
  const { context } = doc;
  const streamRefs = (items: Buffer[]) =>
    items.map((der) => {
      const ref = context.nextRef();
      return [ref, context.stream(new Uint8Array(der))] as [PDFRef, PDFObject];
    });
  const certs = streamRefs(data.certificates);
  const crls = streamRefs(data.crls);

  // An existing DSS (a document signed before) is kept: its arrays and VRI entries carry over.
  const existing = doc.catalog.lookupMaybe(PDFName.of('DSS'), PDFDict);
  const carried = (key: string) => {
    const array = existing?.lookupMaybe(PDFName.of(key), PDFArray);
    return array ? array.asArray() : [];
  };
  const vri = context.obj({}) as PDFDict;
  const existingVri = existing?.lookupMaybe(PDFName.of('VRI'), PDFDict);
  for (const [key, value] of existingVri?.entries() ?? []) vri.set(key, value);
  vri.set(
    PDFName.of(vriKey(contents)),
    context.obj({
      Cert: certs.map(([ref]) => ref),
      CRL: crls.map(([ref]) => ref),
      TU: PDFString.fromDate(new Date()),
    }),
  );
  const dss = context.obj({
    Type: 'DSS',
    Certs: [...carried('Certs'), ...certs.map(([ref]) => ref)],
    CRLs: [...carried('CRLs'), ...crls.map(([ref]) => ref)],
    OCSPs: carried('OCSPs'),
    VRI: vri,
  });
  const dssRef = context.nextRef();
  doc.catalog.set(PDFName.of('DSS'), dssRef);
  const rootRef = context.trailerInfo.Root as PDFRef;
  return appendIncrementalUpdate(pdf, doc, [...certs, ...crls, [dssRef, dss], [rootRef, doc.catalog]]);
}

/** A Signer for SignPdf that answers an RFC 3161 token over the signed ranges (the document timestamp's /Contents). */
class DocumentTimestampSigner extends Signer {
  constructor(private readonly timestamper: Timestamper) {
    super();
  }

  override async sign(signedRanges: Buffer): Promise<Buffer> {
    return (await this.timestamper.stamp(sha256(signedRanges))).token;
  }
}

/** Name of the document timestamp's field; a number is appended when taken. */
const TIMESTAMP_FIELD_NAME = 'Signet document timestamp';

/**
 * Adds a document timestamp (B-LTA; see the module comment) as an incremental update: a signature
 * field (invisible widget on the first page) whose /V is a /DocTimeStamp dictionary, its /Contents
 * an RFC 3161 token over the SHA-256 of the file's bytes but that token.
 * @param doc the pdf-lib document `pdf` was saved from (its form and first page are written again)
 * @throws TimestampError when the authority fails; SignPdfError when its token exceeds the reservation
 */
export async function addDocumentTimestamp(pdf: Buffer, doc: PDFDocument, timestamper: Timestamper): Promise<Buffer> {
  const { context } = doc;
  const page = doc.getPages()[0]!;
  const sigRef = context.nextRef();
  const placeholder = '0'.repeat(timestamper.maxTokenBytes * 2);
  // Written as raw bytes: /ByteRange before /Contents, in the placeholder form SignPdf fills in.
  const sigDict = PDFInvalidObject.of(
    Buffer.from(
      `<<\n/Type /DocTimeStamp\n/Filter /Adobe.PPKLite\n/SubFilter /${DOCUMENT_TIMESTAMP_SUBFILTER}\n` +
        `/ByteRange [0 /********** /********** /**********]\n/Contents <${placeholder}>\n/V 0\n>>`,
      'latin1',
    ),
  );
  const changed: [PDFRef, PDFObject][] = [];
  const acroFormEntry = doc.catalog.get(PDFName.of('AcroForm'));
  const acroForm = doc.catalog.lookup(PDFName.of('AcroForm')) as PDFDict;
  const fields = acroForm.lookup(PDFName.of('Fields'), PDFArray);
  const taken = new Set<string>();
  for (let i = 0; i < fields.size(); i++) {
    const title = (fields.lookup(i) as PDFDict | undefined)?.get(PDFName.of('T'));
    if (title instanceof PDFString) taken.add(title.decodeText());
  }
  let name = TIMESTAMP_FIELD_NAME;
  for (let n = 2; taken.has(name); n++) name = `${TIMESTAMP_FIELD_NAME} ${n}`;
  const widget = context.obj({
    Type: 'Annot',
    Subtype: 'Widget',
    FT: 'Sig',
    Rect: [0, 0, 0, 0],
    // Print + Locked.
    F: 132,
    T: PDFString.of(name),
    V: sigRef,
    P: page.ref,
  });
  const widgetRef = context.nextRef();
  fields.push(widgetRef);
  const flags = acroForm.lookupMaybe(PDFName.of('SigFlags'), PDFNumber)?.asNumber() ?? 0;
  acroForm.set(PDFName.of('SigFlags'), PDFNumber.of(flags | 3));
  // The form is written again where it lives: its own object, or inside the catalog.
  if (acroFormEntry instanceof PDFRef) changed.push([acroFormEntry, acroForm]);
  else changed.push([context.trailerInfo.Root as PDFRef, doc.catalog]);
  const annotsEntry = page.node.get(PDFName.of('Annots'));
  const annots = page.node.lookupMaybe(PDFName.of('Annots'), PDFArray);
  if (annots) {
    annots.push(widgetRef);
    if (annotsEntry instanceof PDFRef) changed.push([annotsEntry, annots]);
    else changed.push([page.ref, page.node]);
  } else {
    page.node.set(PDFName.of('Annots'), context.obj([widgetRef]));
    changed.push([page.ref, page.node]);
  }
  const unique = changed.filter(([ref], i) => changed.findIndex(([other]) => other === ref) === i);
  const withPlaceholder = appendIncrementalUpdate(pdf, doc, [[sigRef, sigDict], [widgetRef, widget], ...unique]);
  return new SignPdf().sign(withPlaceholder, new DocumentTimestampSigner(timestamper));
}
