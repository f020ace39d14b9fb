/**
 * Test PKCS#12 bundles: an account's own signing certificate as a user would upload it
 * (docs/signatures.md "Own certificates").
 */
import { generateKeyPairSync } from 'node:crypto';
import forge from 'node-forge';

export const DAY = 86_400_000;

/** A PKCS#12 of a new RSA key and a self-signed certificate (node-forge), valid over the given days from now. */
export function makeP12(options: {
  commonName: string;
  password: string;
  fromDays?: number;
  toDays: number;
  keyUsage?: Record<string, boolean>;
}): { p12: Buffer; der: Buffer } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString());
  cert.serialNumber = '01a2b3c4';
  cert.validity.notBefore = new Date(Date.now() + (options.fromDays ?? -1) * DAY);
  cert.validity.notAfter = new Date(Date.now() + options.toDays * DAY);
  const subject = [
    { name: 'commonName', value: options.commonName },
    { name: 'organizationName', value: 'Acme' },
  ];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', critical: true, ...(options.keyUsage ?? { digitalSignature: true, nonRepudiation: true }) },
  ]);
  const key = forge.pki.privateKeyFromPem(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  cert.sign(key, forge.md.sha256.create());
  const asn1 = forge.pkcs12.toPkcs12Asn1(key, [cert], options.password, { algorithm: 'aes256' });
  return {
    p12: Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary'),
    der: Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes(), 'binary'),
  };
}
