/**
 * A submission's documents made on request, and kept: what GET /submissions/{id}/documents answers
 * (DocuSeal's app/controllers/api/submission_documents_controller.rb), and the combined PDF of
 * `combined_document_url` (lib/submissions/generate_combined_attachment.rb,
 * ensure_combined_generated.rb; reference/docuseal-behaviour.md §10.5, §10.6).
 *
 * - Completed: the signed documents of the last party to complete (the completion's own,
 *   src/signing/complete-submission.ts); with `merge` and more than one document, one PDF of them
 *   all, signed (DocuSeal's `merged_document`; kind `merged`).
 * - Not completed: the documents as filled so far (DocuSeal's preview documents,
 *   lib/submissions/generate_preview_attachments.rb): each party's values drawn on the
 *   originals — the parties who completed in completion order, then the others with what they
 *   have entered (prefilled or saved) — with the completion's drawing code (drawValuesOn, one
 *   parse and one save per document), never signed. `merge` with more than one document: one PDF.
 *   Kept per version of the values (kinds `preview`, `preview_merged`; the version in the file's
 *   metadata): a request with the same values answers the kept files, new values make new ones
 *   (DocuSeal keys its previews by an MD5 of the values, and destroys the old ones).
 * - The combined PDF: the final documents followed by the audit log, signed (kind `combined`),
 *   made by the completion when the account's `combine_pdf_result` is on (buildCombinedPdf), or
 *   on request (`include=combined_document_url`, ensureCombinedDocument).
 *
 * Merging is src/documents/merge-pdfs.ts (mupdf: pages are grafted, so the signatures of the
 * signed documents are not carried over; the merged file gets its own). Files are stored under
 * names (FileStorage.putNamed, first write wins) made of the submission's slug and, for the
 * documents as filled, the values' version; rows are recorded under a per-submission lock
 * (lockSubmissionOutputs), so concurrent requests record one set. Replaced drafts' rows go in that
 * transaction, and their bytes after it (the delete-unused-files job, src/documents/unused-files.ts).
 */
import { createHash } from 'node:crypto';
import type { Db } from '../db/client.ts';
import { lockSubmissionOutputs } from '../db/queries/advisory-locks.ts';
import { mergePdfs } from '../documents/merge-pdfs.ts';
import type { PdfPageInfo } from '../documents/pdf.ts';
import type { FileStorage, PutResult } from '../documents/storage.ts';
import { recordStoredFile } from '../documents/store-file.ts';
import { unusedFilesJobs } from '../documents/unused-files.ts';
import type { SideEffects } from '../events/events.ts';
import { AppError } from '../errors.ts';
import { signerLanguage } from '../i18n/signer-language.ts';
import { parseFields } from '../templates/fields.ts';
import { loadSigningIdentity, type SigningConfig } from './certificates.ts';
import { loadImages, stepFileName } from './completion-files.ts';
import { drawValuesOn, loadPdfForDrawing, saveDrawnPdf } from './draw-values.ts';
import { padesServices } from './pades-services.ts';
import { signPdf } from './sign-pdf.ts';

export interface SubmissionOutputDeps {
  db: Db;
  storage: FileStorage;
  config: SigningConfig;
  /** Recording transactions, with the job removing the bytes of replaced drafts (unusedFilesJobs). */
  effects: Pick<SideEffects, 'transaction'>;
}

/** A document of the answer: its name (DocuSeal's filename without `.pdf`) and its stored file. */
export interface SubmissionDocumentFile {
  name: string;
  file: { uuid: string; filename: string };
}

/** Kinds of completed_documents rows that are no output of the completion (not verified by /tools/verify). */
export const PREVIEW_KINDS = ['preview', 'preview_merged'] as const;

/** Raise when the drawing of the documents as filled changes, so that kept ones are made again. */
const PREVIEW_VERSION = 1;

type Schema = { attachment_uuid: string; name: string; file_id: number }[];

const FILE = { select: { uuid: true, filename: true, metadata: true } } as const;

async function loadSubmission(db: Db, options: { accountId: number; id: number }) {
  const submission = await db.submission.findFirst({
    where: { id: options.id, accountId: options.accountId },
    select: {
      id: true,
      accountId: true,
      slug: true,
      name: true,
      completedAt: true,
      language: true,
      templateSchema: true,
      templateFields: true,
      template: { select: { name: true } },
      account: { select: { name: true, timezone: true, preferences: true } },
      submitters: {
        orderBy: { id: 'asc' },
        select: { id: true, roleUuid: true, completedAt: true, values: true, language: true, metadata: true },
      },
      completedDocuments: {
        orderBy: [{ position: 'asc' }, { id: 'asc' }],
        select: { id: true, kind: true, name: true, submitterId: true, position: true, fileId: true, file: FILE },
      },
    },
  });
  if (!submission) throw new AppError('NOT_FOUND', `Submission ${options.id} not found`);
  return submission;
}

type LoadedSubmission = Awaited<ReturnType<typeof loadSubmission>>;

/** DocuSeal's name of a merged or combined PDF: the submission's name, else the template's. */
const mergedName = (s: LoadedSubmission) => s.name || s.template.name;

const asDocument = (d: { name: string; file: { uuid: string; filename: string } }): SubmissionDocumentFile => ({
  name: d.name,
  file: { uuid: d.file.uuid, filename: d.file.filename },
});

/**
 * The documents GET /submissions/{id}/documents answers (see the module comment), made now when
 * not kept. The caller checks the submission is the account's (findSubmissionForAccount).
 * @param options.merge one PDF of all documents (only when the submission has more than one)
 * @returns the documents in the submission's document order
 * @throws AppError NOT_FOUND when the submission is not the account's; VALIDATION when a
 *   document cannot be drawn on or merged (drawValuesOn, mergePdfs); storage and database errors
 */
export async function submissionDocumentsAsFilled(
  deps: SubmissionOutputDeps,
  options: { accountId: number; id: number; merge: boolean },
): Promise<SubmissionDocumentFile[]> {
  const submission = await loadSubmission(deps.db, options);
  const schema = submission.templateSchema as Schema;
  const merge = options.merge && schema.length > 1;
  if (submission.completedAt) {
    const finals = finalDocuments(submission);
    if (!merge) return finals.map(asDocument);
    return [await ensureMergedOutput(deps, submission, 'merged')];
  }
  return previewDocuments(deps, submission, schema, merge);
}

/**
 * The combined PDF of a completed submission (the final documents, then the audit log, signed),
 * made now if it is not there yet (DocuSeal's `include=combined_document_url`).
 * @returns null while the submission is not completed
 * @throws as submissionDocumentsAsFilled
 */
export async function ensureCombinedDocument(
  deps: SubmissionOutputDeps,
  options: { accountId: number; id: number },
): Promise<SubmissionDocumentFile | null> {
  const submission = await loadSubmission(deps.db, options);
  if (!submission.completedAt) return null;
  return ensureMergedOutput(deps, submission, 'combined');
}

/** The last completer's documents, in document order (complete-submission.ts's final set). */
function finalDocuments(submission: LoadedSubmission) {
  let last: { id: number; completedAt: Date | null } | undefined;
  for (const s of submission.submitters)
    if (s.completedAt && (!last || s.completedAt.getTime() > last.completedAt!.getTime())) last = s;
  return submission.completedDocuments.filter((d) => d.kind === 'document' && d.submitterId === last?.id);
}

/**
 * Merges PDFs and signs the result as the completion signs its documents (the account's identity,
 * signed in the account's name): the combined PDF (final documents + audit log) and the merged one.
 * @param parts the PDFs' bytes in order (at least two)
 * @returns the signed PDF
 */
export async function buildCombinedPdf(
  deps: Pick<SubmissionOutputDeps, 'db' | 'config'> & { logger?: Pick<Console, 'warn'> },
  options: { accountId: number; accountName: string; parts: Uint8Array[] },
): Promise<Buffer> {
  const merged = await mergePdfs(options.parts, { owner: options.accountId });
  const identity = await loadSigningIdentity(deps, { accountId: options.accountId, signerName: options.accountName });
  return signPdf(merged, identity, { name: identity.name, pades: padesServices(deps) });
}

/** The kept merged or combined PDF of a completed submission, made and recorded when missing. */
async function ensureMergedOutput(
  deps: SubmissionOutputDeps,
  submission: LoadedSubmission,
  kind: 'merged' | 'combined',
): Promise<SubmissionDocumentFile> {
  const kept = submission.completedDocuments.find((d) => d.kind === kind);
  if (kept) return asDocument(kept);
  const sources = finalDocuments(submission).map((d) => d.fileId);
  if (kind === 'combined') {
    const auditLog = submission.completedDocuments.find((d) => d.kind === 'audit_log');
    if (auditLog) sources.push(auditLog.fileId);
  }
  const put = await deps.storage.putNamed(stepFileName(submission.slug, kind), async () => {
    const files = await deps.db.storedFile.findMany({
      where: { id: { in: sources } },
      select: { id: true, storageKey: true },
    });
    const parts = await Promise.all(sources.map((id) => deps.storage.read(files.find((f) => f.id === id)!.storageKey)));
    return buildCombinedPdf(deps, {
      accountId: submission.accountId,
      accountName: submission.account.name,
      parts,
    });
  });
  const name = mergedName(submission);
  const [recorded] = await recordOutputs(deps, submission, kind, [{ name, position: 0, put }]);
  return recorded!;
}

/** One party in drawing order, with what is drawn for it. */
type Party = LoadedSubmission['submitters'][number];

/** Parties in drawing order: those who completed by completion time, then the others by id (DocuSeal's). */
function drawingOrder(submitters: readonly Party[]): Party[] {
  const done = submitters
    .filter((s) => s.completedAt)
    .sort((a, b) => a.completedAt!.getTime() - b.completedAt!.getTime() || a.id - b.id);
  return [...done, ...submitters.filter((s) => !s.completedAt)];
}

/**
 * The version of what the documents as filled show: 16 hex digits of the SHA-256 of the drawing
 * inputs (the documents, fields, time zone, and each party's values, completion and language in
 * drawing order) and PREVIEW_VERSION.
 */
function valuesVersion(submission: LoadedSubmission, parties: readonly Party[]): string {
  return createHash('sha256')
    .update(
      JSON.stringify([
        PREVIEW_VERSION,
        submission.account.timezone,
        submission.templateSchema,
        submission.templateFields,
        parties.map((p) => [
          p.id,
          p.roleUuid,
          p.completedAt?.toISOString() ?? null,
          p.values,
          partyLanguage(submission, p),
        ]),
      ]),
    )
    .digest('hex')
    .slice(0, 16);
}

/** The language a party's dates and numbers are drawn in (src/i18n/signer-language.ts), as completion draws them. */
const partyLanguage = (submission: LoadedSubmission, party: Party) =>
  signerLanguage({ submitter: party, submission, account: submission.account });

const versionOf = (file: { metadata: unknown }) =>
  (file.metadata as { values_version?: unknown } | null)?.values_version ?? null;

/** The documents as filled so far: the kept ones for the current values, else drawn now and kept. */
async function previewDocuments(
  deps: SubmissionOutputDeps,
  submission: LoadedSubmission,
  schema: Schema,
  merge: boolean,
): Promise<SubmissionDocumentFile[]> {
  const parties = drawingOrder(submission.submitters);
  const version = valuesVersion(submission, parties);
  const kind = merge ? 'preview_merged' : 'preview';
  const expected = merge ? 1 : schema.length;
  const kept = submission.completedDocuments.filter((d) => d.kind === kind);
  if (kept.length === expected && kept.every((d) => versionOf(d.file) === version)) return kept.map(asDocument);

  const drawn = await drawPreviewDocuments(deps, submission, schema, parties, version);
  const made = merge
    ? [
        {
          name: mergedName(submission),
          position: 0,
          put: await deps.storage.putNamed(previewFileName(submission.slug, version, 'merged'), async () =>
            mergePdfs(await Promise.all(drawn.map((d) => deps.storage.read(d.put.key))), {
              owner: submission.accountId,
            }),
          ),
        },
      ]
    : drawn;
  return recordOutputs(deps, submission, kind, made, version);
}

/** `previews/<submission slug>/<values version>-<position or "merged">.pdf` (FileStorage.putNamed). */
const previewFileName = (slug: string, version: string, file: string) => `previews/${slug}/${version}-${file}.pdf`;

/** Each document with every party's values drawn on the original, stored under the version's names. */
async function drawPreviewDocuments(
  deps: SubmissionOutputDeps,
  submission: LoadedSubmission,
  schema: Schema,
  parties: readonly Party[],
  version: string,
): Promise<{ name: string; position: number; put: PutResult }[]> {
  const fields = parseFields(submission.templateFields);
  const files = await deps.db.storedFile.findMany({
    where: { id: { in: schema.map((d) => d.file_id) } },
    select: { id: true, storageKey: true, pages: true },
  });
  // Images of every party's values, read once for all documents.
  const images = await Promise.all(
    parties.map((p) => loadImages(deps.db, deps.storage, (p.values ?? {}) as Record<string, unknown>)),
  );
  const made = [];
  for (const [position, doc] of schema.entries()) {
    const original = files.find((f) => f.id === doc.file_id);
    if (!original) throw new Error(`submission ${submission.id}: stored file ${doc.file_id} is missing`);
    const put = await deps.storage.putNamed(previewFileName(submission.slug, version, String(position)), async () => {
      const pdf = await loadPdfForDrawing(await deps.storage.read(original.storageKey), doc.attachment_uuid);
      for (const [i, party] of parties.entries()) {
        await drawValuesOn(pdf, {
          pdf: new Uint8Array(),
          pages: original.pages as unknown as PdfPageInfo[],
          attachmentUuid: doc.attachment_uuid,
          fields: fields.filter((f) => f.submitter_uuid === party.roleUuid),
          values: (party.values ?? {}) as Record<string, unknown>,
          images: images[i]!,
          timeZone: submission.account.timezone,
          now: party.completedAt ?? new Date(),
          language: partyLanguage(submission, party),
        });
      }
      return saveDrawnPdf(pdf);
    });
    made.push({ name: doc.name, position, put });
  }
  return made;
}

/**
 * Records made files as the submission's `kind` rows (StoredFile + completed_documents), replacing
 * rows of that kind, under the submission's lock. When another request recorded the same kind
 * meanwhile (a merged or combined PDF; documents as filled of the same version), its rows are
 * answered and nothing is recorded.
 */
async function recordOutputs(
  deps: SubmissionOutputDeps,
  submission: LoadedSubmission,
  kind: string,
  made: { name: string; position: number; put: PutResult }[],
  version?: string,
): Promise<SubmissionDocumentFile[]> {
  return deps.effects.transaction(async (tx, effects) => {
    await lockSubmissionOutputs(tx, submission.id);
    const current = await tx.completedDocument.findMany({
      where: { submissionId: submission.id, kind },
      orderBy: [{ position: 'asc' }, { id: 'asc' }],
      select: {
        id: true,
        name: true,
        fileId: true,
        file: { select: { ...FILE.select, storageKey: true, sha256: true } },
      },
    });
    const isCurrent =
      current.length === made.length && current.every((d) => version === undefined || versionOf(d.file) === version);
    if (isCurrent) return current.map(asDocument);
    if (current.length > 0) {
      await tx.completedDocument.deleteMany({ where: { id: { in: current.map((d) => d.id) } } });
      await tx.storedFile.deleteMany({ where: { id: { in: current.map((d) => d.fileId) } } });
      // Their bytes go once the deletion has committed, if no other row uses them.
      effects.jobs.push(...unusedFilesJobs(current.map((d) => ({ key: d.file.storageKey, sha256: d.file.sha256 }))));
    }
    const recorded: SubmissionDocumentFile[] = [];
    for (const { name, position, put } of made) {
      const file = await recordStoredFile({ db: tx, storage: deps.storage }, put, {
        accountId: submission.accountId,
        filename: `${name}.pdf`,
        contentType: 'application/pdf',
        metadata: version === undefined ? {} : { values_version: version },
      });
      await tx.completedDocument.create({
        data: {
          accountId: submission.accountId,
          submissionId: submission.id,
          submitterId: null,
          fileId: file.id,
          kind,
          name,
          sha256: put.sha256,
          position,
        },
      });
      recorded.push({ name, file: { uuid: file.uuid, filename: file.filename } });
    }
    return recorded;
  });
}
