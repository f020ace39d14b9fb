/**
 * DocuSeal's tools over GraphQL (reference/docuseal-behaviour.md §1.2; REST: `POST /tools/verify`,
 * `POST /tools/merge`): `verifyPdf` (the signatures a PDF carries and whether each holds,
 * src/signing/verify-pdf.ts) and `mergePdfs` (src/documents/merge-pdfs.ts). Queries: neither
 * changes anything. Files travel as base64, as DocuSeal's API takes and returns them.
 */
import { mergePdfs } from '../../documents/merge-pdfs.ts';
import type { AuditChainReport } from '../../signing/audit-chain.ts';
import type {
  DocumentVerification,
  PdfSignatureReport,
  SignerCertificate,
  TimestampReport,
  VerificationMessage,
} from '../../signing/verify-pdf.ts';
import { builder } from '../builder.ts';
import { CertificateRef } from './certificate-summary.ts';
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
  interfaces: [CertificateRef],
  fields: () => ({}),
});

const TimestampRef = builder.objectRef<TimestampReport>('SignatureTimestamp').implement({
  description: 'An RFC 3161 timestamp: of a signature (PAdES B-T) or of the whole document (B-LTA).',
  fields: (t) => ({
    time: t.expose('time', {
      type: 'DateTime',
      nullable: true,
      description: 'When the timestamp authority saw the signature or document.',
    }),
    authority: t.exposeString('authority', {
      nullable: true,
      description: "The authority's certificate subject, e.g. `CN=Signet Timestamp Authority, …`.",
    }),
    valid: t.exposeBoolean('valid', {
      description: 'The token is signed by a timestamping certificate and imprints what it covers.',
    }),
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
    padesLevel: t.exposeString('padesLevel', {
      nullable: true,
      description:
        'The PAdES baseline level reached (ETSI EN 319 142-1): `B-B`, `B-T` (timestamped), `B-LT` (with ' +
        'validation data), `B-LTA` (and a document timestamp); null for other signatures and document timestamps.',
    }),
    timestamp: t.field({
      type: TimestampRef,
      nullable: true,
      description: "The signature's timestamp (for a document timestamp, itself); null when it has none.",
      resolve: (s) => s.timestamp,
    }),
    certificatesValidUntil: t.expose('certificatesValidUntil', {
      type: 'DateTime',
      nullable: true,
      description: "When the first certificate of the signer's chain expires.",
    }),
    revocationDataEmbedded: t.exposeBoolean('revocationDataEmbedded', {
      description: "The document's DSS holds revocation data (CRLs) for the signer's and the timestamp's certificates.",
    }),
    changesAfterSigning: t.exposeString('changesAfterSigning', {
      description:
        'What later revisions of the file change: `none`, `validation_data` (a DSS, document timestamps) or `other`.',
    }),
  }),
});

const SealedChainHeadRef = builder
  .objectRef<NonNullable<AuditChainReport['sealed']>>('SealedAuditChainHead')
  .implement({
    description: "The chain head the submission's audit log printed when it completed.",
    fields: (t) => ({
      events: t.exposeInt('events'),
      head: t.exposeString('head', { description: 'SHA-256, lower-case hex.' }),
      inChain: t.exposeBoolean('inChain', { description: 'The chain still has that event with that hash.' }),
    }),
  });

const AuditTrailRef = builder.objectRef<AuditChainReport>('AuditTrailCheck').implement({
  description: "A submission's audit chain (each event holds the SHA-256 of the one before it and of itself).",
  fields: (t) => ({
    submissionId: t.exposeInt('submissionId'),
    intact: t.exposeBoolean('intact', {
      description: "Every event matches its hash and links to the one before it, and the audit log's head is there.",
    }),
    events: t.exposeInt('events'),
    head: t.exposeString('head', { nullable: true, description: "The last event's hash (SHA-256, hex)." }),
    sealed: t.field({ type: SealedChainHeadRef, nullable: true, resolve: (a) => a.sealed }),
    problems: t.exposeStringList('problems'),
  }),
});

const PdfVerificationRef = builder.objectRef<DocumentVerification>('PdfVerification').implement({
  fields: (t) => ({
    checksumStatus: t.exposeString('checksumStatus', {
      description: "`verified` when the file is exactly one of the account's completed documents; else `not_found`.",
    }),
    signatures: t.field({ type: [PdfSignatureRef], resolve: (v) => v.signatures }),
    auditTrail: t.field({
      type: AuditTrailRef,
      nullable: true,
      description: "For one of the account's completed documents: its submission's audit chain, checked now.",
      resolve: (v) => v.auditTrail,
    }),
  }),
});

builder.queryFields((t) => ({
  verifyPdf: t.field({
    type: PdfVerificationRef,
    description: 'The signatures of a PDF and whether each holds (REST: POST /tools/verify). 422 `Malformed PDF`.',
    args: { file: t.arg.string({ required: true, description: 'The PDF, base64.' }) },
    resolve: async (_root, args, ctx) => {
      const { account, folders } = requireViewer(ctx);
      // Loaded on first use: pkijs and node-forge cost ~25 MB of a process that never verifies.
      const { verifyDocument } = await import('../../signing/verify-pdf.ts');
      // Decoded in the parse pool's worker: 40 MB of base64 is not decoded on the event loop.
      return verifyDocument(
        { db: ctx.db, config: ctx.config, storage: ctx.storage },
        account.id,
        { base64: args.file },
        folders,
      );
    },
  }),
  mergePdfs: t.string({
    description: 'PDFs merged into one, pages in the order given; base64 in and out (REST: POST /tools/merge).',
    args: { files: t.arg.stringList({ required: true, description: 'At least 2 PDFs, base64.' }) },
    resolve: async (_root, args, ctx) => {
      const { account } = requireViewer(ctx);
      // Decoded in the parse pool's worker, as verifyPdf's file.
      const files = args.files.map((base64) => ({ base64 }));
      return (await mergePdfs(files, { owner: account.id })).toString('base64');
    },
  }),
}));
