/**
 * DocuSeal's tools (reference/docuseal-behaviour.md §1.2; app/controllers/api/tools_controller.rb):
 * `POST /tools/merge {files: [base64, …]}` → `{data: base64}` and `POST /tools/verify {file: base64}`
 * → `{checksum_status, signatures: [...], audit_trail}`. Each signature carries DocuSeal's keys, then Signet's
 * (docs/compatibility.md): `valid`, `covers_whole_document`, `trusted`, `certificate`, and since issue 17
 * `pades_level`, `timestamp`, `certificates_valid_until`, `revocation_data_embedded`, `changes_after_signing`;
 * `audit_trail` is the submission's audit chain for one of the account's documents (docs/signatures.md).
 */
import { AppError } from '../../src/errors.ts';
import type { DocumentVerification } from '../../src/signing/verify-pdf.ts';
import type { RestRequest, RestRoute } from '../gateway.ts';

type Json = Record<string, unknown>;

/** The audit chain check as the operation selects it. */
type AuditTrailData = NonNullable<DocumentVerification['auditTrail']>;

/** The signature as the GraphQL operation below selects it (DateTime scalars as ISO 8601 text). */
type SignatureData = Omit<
  DocumentVerification['signatures'][number],
  'signingTime' | 'certificate' | 'timestamp' | 'certificatesValidUntil'
> & {
  signingTime: string | null;
  timestamp: { time: string | null; authority: string | null; valid: boolean } | null;
  certificatesValidUntil: string | null;
  certificate: {
    subject: string;
    issuer: string;
    serialNumber: string;
    notBefore: string;
    notAfter: string;
    sha256Fingerprint: string;
  } | null;
};

/** `files` / `file` as DocuSeal reads them: strings of base64; anything else is a 422 naming the key. */
function base64Body(request: RestRequest, key: 'files' | 'file'): unknown {
  const body = (request.body ?? {}) as Json;
  const value = body[key];
  if (key === 'files') {
    if (value === undefined || value === null || (Array.isArray(value) && value.length === 0)) return [];
    if (!Array.isArray(value) || value.some((item) => typeof item !== 'string'))
      throw new AppError('VALIDATION', 'files must be an array of base64 strings');
    return value;
  }
  if (typeof value !== 'string' || value === '') throw new AppError('VALIDATION', 'file is required (base64 of a PDF)');
  return value;
}

export const toolRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/tools/merge',
    operation: /* GraphQL */ `query RestToolsMerge($files: [String!]!) { mergePdfs(files: $files) }`,
    variables: (request) => ({ files: base64Body(request, 'files') }),
    serialize: (data: { mergePdfs: string }) => ({ data: data.mergePdfs }),
  },
  {
    method: 'POST',
    path: '/tools/verify',
    operation: /* GraphQL */ `
      query RestToolsVerify($file: String!) {
        verifyPdf(file: $file) {
          checksumStatus
          signatures {
            verificationResult { type content }
            signerName signingReason signingTime signatureType valid coversWholeDocument trusted
            certificate { subject issuer serialNumber notBefore notAfter sha256Fingerprint }
            padesLevel timestamp { time authority valid } certificatesValidUntil revocationDataEmbedded
            changesAfterSigning
          }
          auditTrail { submissionId intact events head sealed { events head inChain } problems }
        }
      }
    `,
    variables: (request) => ({ file: base64Body(request, 'file') }),
    serialize: (data: {
      verifyPdf: { checksumStatus: string; signatures: SignatureData[]; auditTrail: AuditTrailData | null };
    }) => ({
      checksum_status: data.verifyPdf.checksumStatus,
      signatures: data.verifyPdf.signatures.map((s) => ({
        verification_result: s.verificationResult,
        signer_name: s.signerName,
        signing_reason: s.signingReason,
        signing_time: s.signingTime,
        signature_type: s.signatureType,
        valid: s.valid,
        covers_whole_document: s.coversWholeDocument,
        trusted: s.trusted,
        certificate: s.certificate && {
          subject: s.certificate.subject,
          issuer: s.certificate.issuer,
          serial_number: s.certificate.serialNumber,
          not_before: s.certificate.notBefore,
          not_after: s.certificate.notAfter,
          sha256_fingerprint: s.certificate.sha256Fingerprint,
        },
        pades_level: s.padesLevel,
        timestamp: s.timestamp,
        certificates_valid_until: s.certificatesValidUntil,
        revocation_data_embedded: s.revocationDataEmbedded,
        changes_after_signing: s.changesAfterSigning,
      })),
      audit_trail: data.verifyPdf.auditTrail && {
        submission_id: data.verifyPdf.auditTrail.submissionId,
        intact: data.verifyPdf.auditTrail.intact,
        events: data.verifyPdf.auditTrail.events,
        head: data.verifyPdf.auditTrail.head,
        sealed: data.verifyPdf.auditTrail.sealed && {
          events: data.verifyPdf.auditTrail.sealed.events,
          head: data.verifyPdf.auditTrail.sealed.head,
          in_chain: data.verifyPdf.auditTrail.sealed.inChain,
        },
        problems: data.verifyPdf.auditTrail.problems,
      },
    }),
  },
];
