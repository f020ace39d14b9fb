/**
 * X.509 and CMS building blocks for Signet's signatures (issue 17), on PKI.js/asn1js (PeculiarVentures'
 * ASN.1 structures; already the verifier's library), with every RSA signature and digest made by
 * node:crypto (native, and the keys are node KeyObjects). Certificates (RFC 5280 §4), CRLs (§5), the
 * ESS signing-certificate-v2 attribute (RFC 5035 §3) and DER SET OF ordering (X.690 §11.6).
 */
import {
  createHash,
  createPublicKey,
  type KeyObject,
  sign as rsaSign,
  verify as verifySignature,
  webcrypto,
} from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';

/** The object identifiers used here, named as their RFCs name them. */
export const OID = {
  sha1: '1.3.14.3.2.26',
  sha256: '2.16.840.1.101.3.4.2.1',
  sha384: '2.16.840.1.101.3.4.2.2',
  sha512: '2.16.840.1.101.3.4.2.3',
  rsaEncryption: '1.2.840.113549.1.1.1',
  sha256WithRSAEncryption: '1.2.840.113549.1.1.11',
  data: '1.2.840.113549.1.7.1',
  signedData: '1.2.840.113549.1.7.2',
  contentType: '1.2.840.113549.1.9.3',
  messageDigest: '1.2.840.113549.1.9.4',
  signingTime: '1.2.840.113549.1.9.5',
  /** RFC 5035 id-aa-signingCertificateV2. */
  signingCertificateV2: '1.2.840.113549.1.9.16.2.47',
  /** RFC 2634 id-aa-signingCertificate (v1, SHA-1). */
  signingCertificate: '1.2.840.113549.1.9.16.2.12',
  /** RFC 3161 Appendix A id-aa-timeStampToken: the signature timestamp (CAdES / PAdES B-T). */
  signatureTimeStampToken: '1.2.840.113549.1.9.16.2.14',
  /** RFC 3161 id-ct-TSTInfo. */
  tstInfo: '1.2.840.113549.1.9.16.1.4',
  /** RFC 5280 id-kp-timeStamping. */
  timeStamping: '1.3.6.1.5.5.7.3.8',
  emailProtection: '1.3.6.1.5.5.7.3.4',
  /** RFC 9336 id-kp-documentSigning. */
  documentSigning: '1.3.6.1.5.5.7.3.36',
  commonName: '2.5.4.3',
  countryName: '2.5.4.6',
  organizationName: '2.5.4.10',
  organizationalUnitName: '2.5.4.11',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  basicConstraints: '2.5.29.19',
  cRLNumber: '2.5.29.20',
  cRLDistributionPoints: '2.5.29.31',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
} as const;

/** The /SubFilter of a PAdES signature (ETSI EN 319 142-1 §5.1) and of a document timestamp (§5.5). */
export const PADES_SUBFILTER = 'ETSI.CAdES.detached';
export const DOCUMENT_TIMESTAMP_SUBFILTER = 'ETSI.RFC3161';

/** Hash names of node:crypto by digest algorithm OID. */
export const HASH_BY_OID: Record<string, string> = {
  [OID.sha1]: 'sha1',
  [OID.sha256]: 'sha256',
  [OID.sha384]: 'sha384',
  [OID.sha512]: 'sha512',
};

export const sha256 = (bytes: Uint8Array): Buffer => createHash('sha256').update(bytes).digest();

/** The bytes of an ASN.1 value or PKI.js object, DER as PKI.js encodes it. */
export function derOf(value: { toSchema(): asn1js.AsnType } | asn1js.AsnType): Buffer {
  const schema = 'toSchema' in value && typeof value.toSchema === 'function' ? value.toSchema() : value;
  return Buffer.from((schema as asn1js.BaseBlock).toBER(false));
}

/** Parses DER/BER into an asn1js value. @throws Error when the bytes are not ASN.1 */
export function parseAsn1(bytes: Uint8Array): asn1js.AsnType {
  const parsed = asn1js.fromBER(toArrayBuffer(bytes));
  if (parsed.offset === -1) throw new Error(`not ASN.1: ${parsed.result.error}`);
  return parsed.result;
}

export function parseCertificate(der: Uint8Array): pkijs.Certificate {
  return new pkijs.Certificate({ schema: parseAsn1(der) });
}

/** Parsed certificates by SHA-256 of their DER: the same few certificates are in every signature. */
const parsedCertificates = new Map<string, pkijs.Certificate>();

/**
 * parseCertificate, parsed once per process for the same DER (asn1js parsing is most of what a
 * signature's validation data costs otherwise). The object is shared: callers read it, never change it.
 */
export function certificateOf(der: Uint8Array): pkijs.Certificate {
  const key = createHash('sha256').update(der).digest('hex');
  let certificate = parsedCertificates.get(key);
  if (!certificate) {
    certificate = parseCertificate(der);
    if (parsedCertificates.size >= 256) parsedCertificates.clear();
    parsedCertificates.set(key, certificate);
  }
  return certificate;
}

export function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

const algorithm = (algorithmId: string) =>
  new pkijs.AlgorithmIdentifier({ algorithmId, algorithmParams: new asn1js.Null() });

/** SHA-256 with RSA (PKCS#1 v1.5): every signature Signet makes. */
export const SHA256_WITH_RSA = () => algorithm(OID.sha256WithRSAEncryption);
/** The SHA-256 digest algorithm identifier (parameters absent, RFC 5754 §2). */
export const SHA256_ALGORITHM = () => new pkijs.AlgorithmIdentifier({ algorithmId: OID.sha256 });

/** A time as RFC 5280 §4.1.2.5 wants it: UTCTime through 2049, GeneralizedTime after. */
export function x509Time(date: Date): pkijs.Time {
  return new pkijs.Time({ type: date.getUTCFullYear() < 2050 ? 0 : 1, value: date });
}

/**
 * A name from [attribute OID, value] pairs, most significant first, one attribute per RDN (PKI.js
 * alone would put them all in one multi-valued RDN: "CN=Signet+O=Signet"); UTF8String values
 * (PrintableString for C).
 */
export function distinguishedName(entries: readonly (readonly [string, string])[]): pkijs.RelativeDistinguishedNames {
  const sequence = new asn1js.Sequence({
    value: entries.map(
      ([type, value]) =>
        new asn1js.Set({
          value: [
            new pkijs.AttributeTypeAndValue({
              type,
              value:
                type === OID.countryName ? new asn1js.PrintableString({ value }) : new asn1js.Utf8String({ value }),
            }).toSchema(),
          ],
        }),
    ),
  });
  return new pkijs.RelativeDistinguishedNames({ schema: parseAsn1(derOf(sequence)) });
}

const SHORT_NAMES: Record<string, string> = {
  [OID.commonName]: 'CN',
  [OID.countryName]: 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  [OID.organizationName]: 'O',
  [OID.organizationalUnitName]: 'OU',
  '1.2.840.113549.1.9.1': 'emailAddress',
};

/** RFC 4514-like text of a name, as written in the certificate ("CN=Signet, O=Signet"). */
export function nameText(name: pkijs.RelativeDistinguishedNames): string {
  return name.typesAndValues
    .map((t) => `${SHORT_NAMES[t.type] ?? t.type}=${String(t.value.valueBlock.value)}`)
    .join(', ');
}

/** The common name of a name, or null. */
export function commonNameOf(name: pkijs.RelativeDistinguishedNames): string | null {
  const entry = name.typesAndValues.find((t) => t.type === OID.commonName);
  return entry ? String(entry.value.valueBlock.value) : null;
}

/**
 * A certificate as the API shows it (GraphQL `SignerCertificate` of /tools/verify and the fields of
 * `SigningCertificate`): names as RFC 4514-like text, the serial number and the SHA-256 of the DER in
 * lower-case hex, the validity period (RFC 5280 §4.1.2.5).
 */
export interface CertificateSummary {
  subject: string;
  issuer: string;
  /** Lower-case hex. */
  serialNumber: string;
  notBefore: Date;
  notAfter: Date;
  /** Lower-case hex SHA-256 of the certificate's DER. */
  sha256Fingerprint: string;
}

/** The summary of a parsed certificate; `der` is its encoding (hashed for the fingerprint). */
export function summarizeCertificate(certificate: pkijs.Certificate, der: Uint8Array): CertificateSummary {
  return {
    subject: nameText(certificate.subject),
    issuer: nameText(certificate.issuer),
    serialNumber: Buffer.from(certificate.serialNumber.valueBlock.valueHexView).toString('hex'),
    notBefore: certificate.notBefore.value,
    notAfter: certificate.notAfter.value,
    sha256Fingerprint: sha256(der).toString('hex'),
  };
}

/** The RFC 5280 §4.2.1.2 method (1) key identifier: SHA-1 of the subjectPublicKey bits. */
export function keyIdentifier(certificateOrSpki: pkijs.Certificate | pkijs.PublicKeyInfo): Buffer {
  const spki =
    certificateOrSpki instanceof pkijs.Certificate ? certificateOrSpki.subjectPublicKeyInfo : certificateOrSpki;
  return createHash('sha1').update(spki.subjectPublicKey.valueBlock.valueHexView).digest();
}

/** A KEY USAGE bit string (RFC 5280 §4.2.1.3) from bit numbers (0 digitalSignature … 6 cRLSign). */
function keyUsageBits(bits: readonly number[]): asn1js.BitString {
  const highest = Math.max(...bits);
  const bytes = Buffer.alloc(Math.floor(highest / 8) + 1);
  for (const bit of bits) bytes[bit >> 3]! |= 0x80 >> (bit & 7);
  return new asn1js.BitString({ valueHex: toArrayBuffer(bytes), unusedBits: 7 - (highest % 8) });
}

export const KEY_USAGE = {
  digitalSignature: 0,
  nonRepudiation: 1,
  keyCertSign: 5,
  cRLSign: 6,
} as const;

const extension = (extnID: string, critical: boolean, value: asn1js.AsnType | { toSchema(): asn1js.AsnType }) =>
  new pkijs.Extension({ extnID, critical, extnValue: toArrayBuffer(derOf(value)) });

/** The issuer of a certificate or CRL: its certificate and private key. */
export interface CertificateIssuer {
  certificate: pkijs.Certificate;
  key: KeyObject;
}

export interface CertificateRequest {
  subject: readonly (readonly [string, string])[];
  publicKey: KeyObject;
  /** Positive serial number, at most 20 octets (RFC 5280 §4.1.2.2). */
  serialNumber: Buffer;
  notBefore: Date;
  notAfter: Date;
  /** A CA certificate (basicConstraints cA, path length 0: it issues end-entity certificates only). */
  ca?: boolean;
  keyUsage: readonly number[];
  /** Extended key usages; `extKeyUsageCritical` for a TSA (RFC 3161 §2.3: critical, id-kp-timeStamping only). */
  extKeyUsage?: readonly string[];
  extKeyUsageCritical?: boolean;
  /** Where the issuer's CRL is published (cRLDistributionPoints, RFC 5280 §4.2.1.13). */
  crlUrl?: string;
}

/**
 * Makes an X.509 v3 certificate signed with SHA-256/RSA: by `issuer`, or self-signed with
 * `{ selfSignedWith }` (the subject's own private key). Extensions: basicConstraints (critical),
 * keyUsage (critical), extKeyUsage, subject and authority key identifiers, and
 * cRLDistributionPoints when given.
 * @returns the certificate's DER
 */
export function issueCertificate(
  request: CertificateRequest,
  signer: CertificateIssuer | { selfSignedWith: KeyObject },
): Buffer {
  const issuer = 'certificate' in signer ? signer : undefined;
  const certificate = new pkijs.Certificate();
  certificate.version = 2;
  certificate.serialNumber = new asn1js.Integer({ valueHex: toArrayBuffer(request.serialNumber) });
  certificate.subject = distinguishedName(request.subject);
  certificate.issuer = issuer ? issuer.certificate.subject : distinguishedName(request.subject);
  certificate.notBefore = x509Time(request.notBefore);
  certificate.notAfter = x509Time(request.notAfter);
  certificate.subjectPublicKeyInfo = new pkijs.PublicKeyInfo({
    schema: parseAsn1(request.publicKey.export({ type: 'spki', format: 'der' })),
  });
  const ownKeyId = keyIdentifier(certificate.subjectPublicKeyInfo);
  const issuerKeyId = issuer ? keyIdentifier(issuer.certificate) : ownKeyId;
  const extensions = [
    extension(
      OID.basicConstraints,
      true,
      new pkijs.BasicConstraints(request.ca ? { cA: true, pathLenConstraint: 0 } : {}),
    ),
    extension(OID.keyUsage, true, keyUsageBits(request.keyUsage)),
    extension(OID.subjectKeyIdentifier, false, new asn1js.OctetString({ valueHex: toArrayBuffer(ownKeyId) })),
    extension(
      OID.authorityKeyIdentifier,
      false,
      new pkijs.AuthorityKeyIdentifier({
        keyIdentifier: new asn1js.OctetString({ valueHex: toArrayBuffer(issuerKeyId) }),
      }),
    ),
  ];
  if (request.extKeyUsage?.length)
    extensions.push(
      extension(
        OID.extKeyUsage,
        request.extKeyUsageCritical === true,
        new pkijs.ExtKeyUsage({ keyPurposes: [...request.extKeyUsage] }),
      ),
    );
  if (request.crlUrl)
    extensions.push(
      extension(
        OID.cRLDistributionPoints,
        false,
        new pkijs.CRLDistributionPoints({
          distributionPoints: [
            new pkijs.DistributionPoint({
              distributionPoint: [new pkijs.GeneralName({ type: 6, value: request.crlUrl })],
            }),
          ],
        }),
      ),
    );
  certificate.extensions = extensions;
  certificate.signature = SHA256_WITH_RSA();
  certificate.signatureAlgorithm = SHA256_WITH_RSA();
  const tbs = certificate.encodeTBS().toBER(false);
  certificate.tbsView = new Uint8Array(tbs);
  const signature = rsaSign(
    'sha256',
    new Uint8Array(tbs),
    issuer ? issuer.key : (signer as { selfSignedWith: KeyObject }).selfSignedWith,
  );
  certificate.signatureValue = new asn1js.BitString({ valueHex: toArrayBuffer(signature) });
  return derOf(certificate);
}

export interface CrlRequest {
  issuer: CertificateIssuer;
  /** Revoked certificates' serial numbers and when they were revoked. */
  revoked: readonly { serialNumber: Buffer; revokedAt: Date }[];
  thisUpdate: Date;
  nextUpdate: Date;
  /** The CRL number (RFC 5280 §5.2.3): grows with each CRL issued. */
  number: bigint;
}

/**
 * A v2 CRL (RFC 5280 §5) signed by the issuer with SHA-256/RSA, with the authority key identifier
 * and CRL number extensions (§5.2.1, §5.2.3: both required of conforming issuers).
 * @returns its DER
 */
export function buildCrl(request: CrlRequest): Buffer {
  const crl = new pkijs.CertificateRevocationList();
  crl.version = 1;
  crl.signature = SHA256_WITH_RSA();
  crl.signatureAlgorithm = SHA256_WITH_RSA();
  crl.issuer = request.issuer.certificate.subject;
  crl.thisUpdate = x509Time(request.thisUpdate);
  crl.nextUpdate = x509Time(request.nextUpdate);
  if (request.revoked.length > 0)
    crl.revokedCertificates = request.revoked.map(
      (r) =>
        new pkijs.RevokedCertificate({
          userCertificate: new asn1js.Integer({ valueHex: toArrayBuffer(r.serialNumber) }),
          revocationDate: x509Time(r.revokedAt),
        }),
    );
  crl.crlExtensions = new pkijs.Extensions({
    extensions: [
      extension(
        OID.authorityKeyIdentifier,
        false,
        new pkijs.AuthorityKeyIdentifier({
          keyIdentifier: new asn1js.OctetString({ valueHex: toArrayBuffer(keyIdentifier(request.issuer.certificate)) }),
        }),
      ),
      extension(OID.cRLNumber, false, integerOf(request.number)),
    ],
  });
  // encodeTBS is protected on CertificateRevocationList (public on Certificate); it is what toSchema signs.
  const tbs = (crl as unknown as { encodeTBS(): asn1js.Sequence }).encodeTBS().toBER(false);
  crl.tbsView = new Uint8Array(tbs);
  crl.signatureValue = new asn1js.BitString({
    valueHex: toArrayBuffer(rsaSign('sha256', new Uint8Array(tbs), request.issuer.key)),
  });
  return derOf(crl);
}

/** A non-negative INTEGER (two's complement, a leading zero octet where the high bit is set). */
export function integerOf(value: bigint): asn1js.Integer {
  let hex = value.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  if (/^[89a-f]/.test(hex)) hex = `00${hex}`;
  return new asn1js.Integer({ valueHex: toArrayBuffer(Buffer.from(hex, 'hex')) });
}

/** The serial number's octets (as encoded, sign octet included). */
export function serialOf(certificate: pkijs.Certificate): Buffer {
  return Buffer.from(certificate.serialNumber.valueBlock.valueHexView);
}

/**
 * The ESS signing-certificate-v2 attribute value (RFC 5035 §3; ETSI EN 319 122-1 §5.2.2.3): one
 * ESSCertIDv2 with the SHA-256 of the certificate (hashAlgorithm omitted: SHA-256 is its DEFAULT)
 * and its issuer and serial number.
 */
export function signingCertificateV2(certificate: pkijs.Certificate, der: Uint8Array): asn1js.Sequence {
  const issuerSerial = new asn1js.Sequence({
    value: [
      new asn1js.Sequence({ value: [new pkijs.GeneralName({ type: 4, value: certificate.issuer }).toSchema()] }),
      new asn1js.Integer({ valueHex: toArrayBuffer(serialOf(certificate)) }),
    ],
  });
  const essCertId = new asn1js.Sequence({
    value: [new asn1js.OctetString({ valueHex: toArrayBuffer(sha256(der)) }), issuerSerial],
  });
  return new asn1js.Sequence({ value: [new asn1js.Sequence({ value: [essCertId] })] });
}

/**
 * Attributes in DER SET OF order (X.690 §11.6: ascending encodings, the shorter padded with zero
 * octets), so that the signed attributes are signed exactly as a DER re-encoding gives them.
 */
export function derSetOrder(attributes: pkijs.Attribute[]): pkijs.Attribute[] {
  const encoded = attributes.map((attribute) => ({ attribute, der: derOf(attribute) }));
  encoded.sort((a, b) => {
    const length = Math.max(a.der.length, b.der.length);
    for (let i = 0; i < length; i++) {
      const difference = (a.der[i] ?? 0) - (b.der[i] ?? 0);
      if (difference !== 0) return difference;
    }
    return 0;
  });
  return encoded.map((e) => e.attribute);
}

/**
 * Signs a SignerInfo's signed attributes with node:crypto (RFC 5652 §5.4: the DER of the SET OF
 * attributes, tag 0x31, not the [0] IMPLICIT form stored) and sets its algorithm and signature.
 */
export function signSignerInfo(signerInfo: pkijs.SignerInfo, key: KeyObject): void {
  const attributes = signerInfo.signedAttrs!.attributes;
  const set = new asn1js.Set({ value: attributes.map((a) => a.toSchema()) }).toBER(false);
  signerInfo.signatureAlgorithm = SHA256_WITH_RSA();
  signerInfo.signature = new asn1js.OctetString({
    valueHex: toArrayBuffer(rsaSign('sha256', new Uint8Array(set), key)),
  });
}

/** The RSA public key of a certificate as a node KeyObject. */
export function publicKeyOf(certificate: pkijs.Certificate): KeyObject {
  return createPublicKey({ key: derOf(certificate.subjectPublicKeyInfo), format: 'der', type: 'spki' });
}

/** The extension of a certificate with this OID, or undefined. */
export function extensionOf(certificate: pkijs.Certificate, oid: string): pkijs.Extension | undefined {
  return certificate.extensions?.find((e) => e.extnID === oid);
}

/** The http(s) URLs of a certificate's cRLDistributionPoints. */
export function crlUrlsOf(certificate: pkijs.Certificate): string[] {
  const found = extensionOf(certificate, OID.cRLDistributionPoints);
  if (!found) return [];
  const points = (found.parsedValue as pkijs.CRLDistributionPoints | undefined)?.distributionPoints ?? [];
  const urls: string[] = [];
  for (const point of points) {
    const names = point.distributionPoint;
    if (!Array.isArray(names)) continue;
    for (const name of names)
      if (name.type === 6 && typeof name.value === 'string' && /^https?:\/\//i.test(name.value)) urls.push(name.value);
  }
  return urls;
}

/** Whether the certificate's extended key usage lists this purpose. */
export function hasExtendedKeyUsage(certificate: pkijs.Certificate, purpose: string): boolean {
  const found = extensionOf(certificate, OID.extKeyUsage);
  return ((found?.parsedValue as pkijs.ExtKeyUsage | undefined)?.keyPurposes ?? []).includes(purpose);
}

/** Whether `certificate`'s signature verifies with `issuer`'s public key (and the names chain). */
export async function isIssuedBy(certificate: pkijs.Certificate, issuer: pkijs.Certificate): Promise<boolean> {
  if (!certificate.issuer.isEqual(issuer.subject)) return false;
  try {
    return await certificate.verify(issuer, cryptoEngine());
  } catch {
    return false;
  }
}

let engine: pkijs.CryptoEngine | undefined;
/** PKI.js on Node's WebCrypto (for verification; signing goes through node:crypto). */
export function cryptoEngine(): pkijs.CryptoEngine {
  engine ??= new pkijs.CryptoEngine({ name: 'node', crypto: webcrypto as unknown as Crypto });
  return engine;
}

/** Signature algorithm OIDs accepted on verification, with the hash they imply (null: the SignerInfo's digest). */
const SIGNATURE_HASHES: Record<string, string | null> = {
  [OID.rsaEncryption]: null,
  '1.2.840.113549.1.1.5': 'sha1',
  [OID.sha256WithRSAEncryption]: 'sha256',
  '1.2.840.113549.1.1.12': 'sha384',
  '1.2.840.113549.1.1.13': 'sha512',
  '1.2.840.10045.2.1': null,
  '1.2.840.10045.4.3.2': 'sha256',
  '1.2.840.10045.4.3.3': 'sha384',
  '1.2.840.10045.4.3.4': 'sha512',
};

/**
 * Checks one SignerInfo of a CMS SignedData (RFC 5652 §5.4, §5.6): its messageDigest signed
 * attribute equals `contentDigest` (the content hashed with the SignerInfo's digest algorithm), and
 * its signature over the DER SET OF the signed attributes verifies with `certificate`'s key (RSA
 * PKCS#1 v1.5 or ECDSA). Used for timestamp tokens, whose content is the TSTInfo in the token.
 * @returns null when it holds, else why not
 */
export function signerInfoProblem(
  signerInfo: pkijs.SignerInfo,
  certificate: pkijs.Certificate,
  content: Uint8Array,
): string | null {
  const hash = HASH_BY_OID[signerInfo.digestAlgorithm.algorithmId];
  if (!hash) return `unknown digest algorithm ${signerInfo.digestAlgorithm.algorithmId}`;
  const attributes = signerInfo.signedAttrs;
  if (!attributes) return 'no signed attributes';
  const messageDigest = attributes.attributes.find((a) => a.type === OID.messageDigest)?.values[0];
  if (!(messageDigest instanceof asn1js.OctetString)) return 'no messageDigest attribute';
  const digest = createHash(hash).update(content).digest();
  if (!Buffer.from(messageDigest.valueBlock.valueHexView).equals(digest)) return 'the content digest does not match';
  const algorithmId = signerInfo.signatureAlgorithm.algorithmId;
  if (!(algorithmId in SIGNATURE_HASHES)) return `unsupported signature algorithm ${algorithmId}`;
  // PKI.js keeps the attributes' encoding as received, with the SET OF tag (0x31) the signature covers.
  const signed = new Uint8Array(attributes.encodedValue);
  try {
    const ok = verifySignature(
      SIGNATURE_HASHES[algorithmId] ?? hash,
      signed,
      publicKeyOf(certificate),
      Buffer.from(signerInfo.signature.valueBlock.valueHexView),
    );
    return ok ? null : 'the signature does not match the certificate';
  } catch (error) {
    return `the signature cannot be checked: ${(error as Error).message}`;
  }
}
