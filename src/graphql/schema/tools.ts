/**
 * DocuSeal's tools over GraphQL (reference/docuseal-behaviour.md §1.2; REST: `POST /tools/verify`,
 * `POST /tools/merge`): `verifyPdf` (the signatures a PDF carries and whether each holds,
 * src/signing/verify-pdf.ts) and `mergePdfs` (src/documents/merge-pdfs.ts). Queries: neither
 * changes anything. Files travel as base64, as DocuSeal's API takes and returns them.
 */
import { mergePdfs } from '../../documents/merge-pdfs.ts';
import type {
  DocumentVerification,
  PdfSignatureReport,
  SignerCertificate,
  VerificationMessage,
} from '../../signing/verify-pdf.ts';
import { builder } from '../builder.ts';
import { requireViewer } from '../context.ts';

const VerificationMessageRef = builder.objectRef<VerificationMessage>('VerificationMessage').implement({
  description: 'One line of a signature check, as HexaPDF (DocuSeal) words it.',
  fields: (t) => ({
    type: t.exposeString('type', { description: '`info`, `warning` or `error`.' }),
    content: t.exposeString('content', { description: 'e.g. `Signature valid`, `Signature verification failed`.' }),
  }),
});

const SignerCertificateRef = builder.objectRef<SignerCertificate>('SignerCertificate').implement({
  description: 'The certificate a signature was made with.',
  fields: (t) => ({
    subject: t.exposeString('subject', { description: 'e.g. `CN=Signet, O=Signet`.' }),
    issuer: t.exposeString('issuer'),
    serialNumber: t.exposeString('serialNumber', { description: 'Lower-case hex.' }),
    notBefore: t.expose('notBefore', { type: 'DateTime' }),
    notAfter: t.expose('notAfter', { type: 'DateTime' }),
    sha256Fingerprint: t.exposeString('sha256Fingerprint', { description: 'Lower-case hex SHA-256 of the DER.' }),
  }),
});

const PdfSignatureRef = builder.objectRef<PdfSignatureReport>('PdfSignature').implement({
  description: 'A digital signature of a PDF and what its check found.',
  fields: (t) => ({
    verificationResult: t.field({ type: [VerificationMessageRef], resolve: (s) => s.verificationResult }),
    signerName: t.exposeString('signerName', { nullable: true }),
    signingReason: t.exposeString('signingReason', { nullable: true }),
    signingTime: t.expose('signingTime', { type: 'DateTime', nullable: true }),
    signatureType: t.exposeString('signatureType', {
      nullable: true,
      description: 'The /SubFilter: `adbe.pkcs7.detached`, `ETSI.CAdES.detached`, …',
    }),
    valid: t.exposeBoolean('valid', {
      description: 'The signed bytes are unchanged and the signature matches its certificate.',
    }),
    coversWholeDocument: t.exposeBoolean('coversWholeDocument', {
      description: 'Nothing was added to the file after this signature.',
    }),
    trusted: t.exposeBoolean('trusted', {
      description: "Made with a certificate this service signs the account's documents with.",
    }),
    certificate: t.field({ type: SignerCertificateRef, nullable: true, resolve: (s) => s.certificate }),
  }),
});

const PdfVerificationRef = builder.objectRef<DocumentVerification>('PdfVerification').implement({
  fields: (t) => ({
    checksumStatus: t.exposeString('checksumStatus', {
      description: "`verified` when the file is exactly one of the account's completed documents; else `not_found`.",
    }),
    signatures: t.field({ type: [PdfSignatureRef], resolve: (v) => v.signatures }),
  }),
});

/** Base64 (standard or URL-safe alphabet; whitespace ignored, as Ruby's decode64) to bytes. */
function fromBase64(text: string): Buffer {
  return Buffer.from(text, 'base64');
}

builder.queryFields((t) => ({
  verifyPdf: t.field({
    type: PdfVerificationRef,
    description: 'The signatures of a PDF and whether each holds (REST: POST /tools/verify). 422 `Malformed PDF`.',
    args: { file: t.arg.string({ required: true, description: 'The PDF, base64.' }) },
    resolve: async (_root, args, ctx) => {
      const { account, folders } = requireViewer(ctx);
      // Loaded on first use: pkijs and node-forge cost ~25 MB of a process that never verifies.
      const { verifyDocument } = await import('../../signing/verify-pdf.ts');
      return verifyDocument({ db: ctx.db, config: ctx.config }, account.id, fromBase64(args.file), folders);
    },
  }),
  mergePdfs: t.string({
    description: 'PDFs merged into one, pages in the order given; base64 in and out (REST: POST /tools/merge).',
    args: { files: t.arg.stringList({ required: true, description: 'At least 2 PDFs, base64.' }) },
    resolve: async (_root, args, ctx) => {
      requireViewer(ctx);
      return (await mergePdfs(args.files.map(fromBase64))).toString('base64');
    },
  }),
}));
