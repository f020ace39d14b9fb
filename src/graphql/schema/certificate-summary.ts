/**
 * The fields every certificate shows over GraphQL, as the interface `Certificate`: one definition of
 * src/signing/pki.ts's CertificateSummary, implemented by `SignerCertificate` (verifyPdf) and
 * `SigningCertificate` (an account's own).
 */
import type { CertificateSummary } from '../../signing/pki.ts';
import { builder } from '../builder.ts';

export const CertificateRef = builder.interfaceRef<CertificateSummary>('Certificate').implement({
  description: 'An X.509 certificate (RFC 5280): its names, serial number, validity and fingerprint.',
  fields: (t) => ({
    subject: t.exposeString('subject', { description: 'RFC 4514-like, e.g. `CN=Acme Ltd, O=Acme Ltd, C=DE`.' }),
    issuer: t.exposeString('issuer'),
    serialNumber: t.exposeString('serialNumber', { description: 'Lower-case hex.' }),
    notBefore: t.expose('notBefore', { type: 'DateTime' }),
    notAfter: t.expose('notAfter', { type: 'DateTime' }),
    sha256Fingerprint: t.exposeString('sha256Fingerprint', { description: 'Lower-case hex SHA-256 of the DER.' }),
  }),
});
