/**
 * Opening PKCS#12 bundles (the service's SIGNING_P12_PATH, generated certificates, the own CA's and
 * TSA's keys, accounts' uploads) as node-forge and @signpdf/signer-p12 read them, with one set of
 * checks and messages. A module of its own, below certificates.ts and certificate-authority.ts,
 * which both open bundles (they imported each other before).
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import forge from 'node-forge';
import { AppError } from '../errors.ts';

/** An opened PKCS#12: the private key for node:crypto and the certificates as DER. */
export interface OpenedBundle {
  key: KeyObject;
  /** The certificate matching the key, DER. */
  certificate: Buffer;
  /** Every certificate of the bundle in bag order, DER (the key's among them). */
  certificates: Buffer[];
}

/**
 * Opens a PKCS#12 bundle into a node KeyObject and DER certificates (openPkcs12's checks and
 * messages).
 * @throws AppError UNAVAILABLE as openPkcs12
 */
export function openPkcs12Bundle(p12: Buffer, password: string, source: string, passwordName?: string): OpenedBundle {
  const { certificate, key, certificates } = openPkcs12(p12, password, source, passwordName);
  const der = (cert: forge.pki.Certificate) =>
    Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes(), 'binary');
  return {
    key: createPrivateKey(forge.pki.privateKeyToPem(key)),
    certificate: der(certificate),
    certificates: certificates.map(der),
  };
}

/**
 * Opens a PKCS#12 bundle the way @signpdf/signer-p12 will: the first pkcs8ShroudedKeyBag's key
 * and the certificate whose public key matches it.
 * @param source names the bundle in error messages
 * @throws AppError UNAVAILABLE (not PKCS#12, wrong password, no key, no matching certificate)
 */
export function openPkcs12(
  p12: Buffer,
  password: string,
  source: string,
  passwordName = 'the password in SIGNING_P12_PASSWORD',
): { certificate: forge.pki.Certificate; key: forge.pki.rsa.PrivateKey; certificates: forge.pki.Certificate[] } {
  const fail = (reason: string, cause?: unknown): never => {
    throw new AppError('UNAVAILABLE', `Signing certificate: ${source} ${reason}`, { cause });
  };
  let asn1: forge.asn1.Asn1;
  try {
    asn1 = forge.asn1.fromDer(forge.util.createBuffer(p12.toString('binary')));
  } catch (error) {
    return fail('is not a PKCS#12 (.p12/.pfx) file', error);
  }
  let bundle: forge.pkcs12.Pkcs12Pfx;
  try {
    bundle = forge.pkcs12.pkcs12FromAsn1(asn1, false, password);
  } catch (error) {
    const message = (error as Error).message ?? '';
    // node-forge: "PKCS#12 MAC could not be verified. Invalid password?"; a wrong password on an
    // unMACed bundle fails later, decrypting the key ("Invalid password?" or a padding error).
    if (/password|MAC|decrypt|padding/i.test(message))
      return fail(`does not open with ${passwordName} (wrong password?)`, error);
    return fail(`is not a PKCS#12 file node-forge can read: ${message}`, error);
  }
  const { key, certificate, certificates } = keyAndCertificateOf(bundle);
  if (!key) return fail('holds no encrypted private key (pkcs8ShroudedKeyBag) or an unsupported key type (RSA only)');
  if (!certificate) return fail('holds no certificate matching its private key');
  return { certificate, key, certificates };
}

/**
 * What a signer takes from an opened PKCS#12 bundle, as @signpdf/signer-p12 does: the first
 * pkcs8ShroudedKeyBag's RSA key, every certificate, and the one whose public key matches the key.
 * Shared by the configuration check above and the signer (sign-pdf.ts), so both accept the same
 * bundles; each words its own errors.
 */
export function keyAndCertificateOf(bundle: forge.pkcs12.Pkcs12Pfx): {
  key: forge.pki.rsa.PrivateKey | undefined;
  certificate: forge.pki.Certificate | undefined;
  certificates: forge.pki.Certificate[];
} {
  const key = bundle.getBags({ bagType: forge.pki.oids.pkcs8ShroudedKeyBag })[forge.pki.oids.pkcs8ShroudedKeyBag]?.[0]
    ?.key as forge.pki.rsa.PrivateKey | undefined;
  const certificates = (bundle.getBags({ bagType: forge.pki.oids.certBag })[forge.pki.oids.certBag] ?? [])
    .map((bag) => bag.cert)
    .filter((cert): cert is forge.pki.Certificate => cert !== undefined);
  const certificate = key
    ? certificates.find((cert) => {
        const publicKey = cert.publicKey as forge.pki.rsa.PublicKey;
        return publicKey.n?.compareTo(key.n) === 0 && publicKey.e?.compareTo(key.e) === 0;
      })
    : undefined;
  return { key, certificate, certificates };
}
