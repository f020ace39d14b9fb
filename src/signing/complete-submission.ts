/**
 * The completion pipeline (issue "Signing"): for each completed party, in completion order, draw
 * its values on top of the previous party's output; when everyone has completed, sign the final
 * documents, build and sign the audit log, and mark the submission completed.
 *
 * Runs as the `complete-submission` job, once per submission at a time (a transaction-scoped
 * advisory lock per submission) and idempotent: a party whose documents exist is skipped, the
 * audit log is made once. Each party's documents are written in one transaction with the work
 * that made them, so a crash leaves either all of them or none (stored bytes without rows are
 * harmless: storage is content-addressed).
 */
import { createHash } from 'node:crypto';
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import type { PdfPageInfo } from '../documents/pdf.ts';
import type { FileStorage } from '../documents/storage.ts';
import { storeFile } from '../documents/store-file.ts';
import type { JobQueue } from '../jobs/job-queue.ts';
import { parseFields, parseRoles } from '../templates/fields.ts';
import type { ImageFile } from './draw-values.ts';

export const COMPLETE_SUBMISSION_JOB = 'complete-submission';

export interface CompletionDeps {
  db: Db;
  storage: FileStorage;
  config: Pick<Config, 'signingP12Path' | 'signingP12Password'>;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Registers the completion job on a queue. */
export function defineCompletionJob(queue: JobQueue, deps: CompletionDeps): void {
  queue.define<{ submissionId: number }>(COMPLETE_SUBMISSION_JOB, ({ submissionId }) => completeSubmission(deps, submissionId), {
    concurrency: 2,
    retry: { maxAttempts: 5, delayMs: (attempt) => 2 ** attempt * 5_000 },
  });
}

/** Enqueues the pipeline after a party completed (after commit); idempotent per party. */
export async function enqueueCompletion(queue: JobQueue, submissionId: number, submitterId: number): Promise<void> {
  await queue.enqueue(COMPLETE_SUBMISSION_JOB, { submissionId }, { uniqueKey: `${submissionId}:${submitterId}` });
}

/**
 * Produces whatever is missing for a submission: documents of completed parties, then (all
 * completed) the signed final documents and audit log.
 */
export async function completeSubmission(deps: CompletionDeps, submissionId: number): Promise<void> {
  const { db } = deps;
  // Loaded on the first completion only: fonts, PDF and crypto libraries are tens of MB of memory
  // that an idle service need not hold (bench/README.md, idle RSS).
  const [{ buildAuditLog }, { loadSigningIdentity }, { drawValues }, { signPdf }] = await Promise.all([
    import('./audit-log.ts'),
    import('./certificates.ts'),
    import('./draw-values.ts'),
    import('./sign-pdf.ts'),
  ]);
  // The signing identity is loaded (or generated once) outside the work transaction, on first need.
  let identityPromise: ReturnType<typeof loadSigningIdentity> | undefined;
  const identityFor = (account: { id: number; name: string }) =>
    (identityPromise ??= loadSigningIdentity({ db, config: deps.config }, { accountId: account.id, signerName: account.name }));
  for (;;) {
    const progressed = await db.$transaction(
      async (tx) => {
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(7301006, ${submissionId})`;
        const submission = await tx.submission.findUniqueOrThrow({
          where: { id: submissionId },
          include: {
            account: { select: { id: true, name: true, testing: true, timezone: true } },
            submitters: { orderBy: [{ completedAt: 'asc' }, { id: 'asc' }] },
            completedDocuments: { select: { submitterId: true, kind: true, position: true, fileId: true } },
          },
        });
        const schema = submission.templateSchema as { attachment_uuid: string; name: string; file_id: number }[];
        const fields = parseFields(submission.templateFields);
        const completed = submission.submitters.filter((s) => s.completedAt);
        const done = new Set(submission.completedDocuments.filter((d) => d.kind === 'document').map((d) => d.submitterId));
        const next = completed.find((s) => !done.has(s.id));
        const everyoneDone = submission.submitters.length > 0 && submission.submitters.every((s) => s.completedAt);

        if (next) {
          // The base of each document: the previous party's output, else the template's file.
          const previous = [...completed].filter((s) => done.has(s.id)).at(-1);
          const isLast = everyoneDone && completed.filter((s) => !done.has(s.id)).length === 1;
          const identity = isLast ? await identityFor(submission.account) : undefined;
          const images = await loadImages(tx, deps.storage, next.values as Record<string, unknown>);
          for (const [position, doc] of schema.entries()) {
            const baseFileId =
              (previous && submission.completedDocuments.find((d) => d.kind === 'document' && d.submitterId === previous.id && d.position === position)?.fileId) ??
              doc.file_id;
            const base = await tx.storedFile.findUniqueOrThrow({ where: { id: baseFileId } });
            const original = await tx.storedFile.findUniqueOrThrow({ where: { id: doc.file_id }, select: { pages: true } });
            let pdf: Uint8Array = await drawValues({
              pdf: await deps.storage.read(base.storageKey),
              pages: original.pages as unknown as PdfPageInfo[],
              attachmentUuid: doc.attachment_uuid,
              fields: fields.filter((f) => f.submitter_uuid === next.roleUuid),
              values: next.values as Record<string, unknown>,
              images,
              timeZone: submission.account.timezone,
              now: next.completedAt ?? new Date(),
            });
            if (identity) pdf = await signPdf(pdf, identity, { name: identity.name });
            const stored = await storeFile({ db: tx, storage: deps.storage }, {
              accountId: submission.accountId,
              bytes: pdf,
              filename: `${doc.name}.pdf`,
              contentType: 'application/pdf',
              pageCount: (original.pages as unknown[] | null)?.length,
              pages: original.pages,
            });
            await tx.completedDocument.create({
              data: { accountId: submission.accountId, submissionId, submitterId: next.id, fileId: stored.id, kind: 'document', name: doc.name, sha256: stored.sha256, position },
            });
          }
          return true;
        }

        const hasAuditLog = submission.completedDocuments.some((d) => d.kind === 'audit_log');
        if (!everyoneDone || hasAuditLog) return false;

        // Everyone has completed and every party's documents exist: the audit log, then done.
        const last = completed.at(-1)!;
        const finals = await tx.completedDocument.findMany({ where: { submissionId, submitterId: last.id, kind: 'document' }, orderBy: { position: 'asc' } });
        const originals = await tx.storedFile.findMany({ where: { id: { in: schema.map((d) => d.file_id) } }, select: { id: true, sha256: true } });
        const events = await tx.submissionEvent.findMany({ where: { submissionId }, orderBy: [{ eventTimestamp: 'asc' }, { id: 'asc' }] });
        const roles = parseRoles(submission.templateSubmitters);
        const log = await buildAuditLog({
          submissionId,
          accountName: submission.account.name,
          testing: submission.account.testing,
          documents: schema.map((doc, position) => ({
            name: doc.name,
            originalSha256: originals.find((o) => o.id === doc.file_id)?.sha256 ?? '',
            finalSha256: finals.find((f) => f.position === position)?.sha256 ?? '',
          })),
          parties: submission.submitters.map((s) => ({
            name: s.name,
            email: s.email,
            phone: s.phone,
            role: roles.find((r) => r.uuid === s.roleUuid)?.name ?? '',
            ip: s.ip,
            userAgent: s.ua,
            completedAt: s.completedAt,
            events: events
              .filter((e) => e.submitterId === s.id)
              .map((e) => ({ type: e.eventType, at: e.eventTimestamp, ip: (e.data as { ip?: string }).ip ?? null, userAgent: (e.data as { ua?: string }).ua ?? null })),
          })),
          generatedAt: new Date(),
          timeZone: submission.account.timezone,
        });
        const identity = await identityFor(submission.account);
        const signed = await signPdf(log, identity, { name: identity.name });
        const stored = await storeFile({ db: tx, storage: deps.storage }, { accountId: submission.accountId, bytes: signed, filename: 'Audit Log.pdf', contentType: 'application/pdf' });
        await tx.completedDocument.create({
          data: { accountId: submission.accountId, submissionId, submitterId: null, fileId: stored.id, kind: 'audit_log', name: 'Audit Log', sha256: sha256(signed), position: 0 },
        });
        if (!submission.completedAt) {
          await tx.submission.update({ where: { id: submissionId }, data: { completedAt: last.completedAt ?? new Date() } });
        }
        return false;
      },
      { timeout: 120_000, maxWait: 60_000 },
    );
    if (!progressed) return;
  }
}

/** The image files of a party's attachment values (uuids of stored files), by uuid. */
async function loadImages(tx: Parameters<Parameters<Db['$transaction']>[0]>[0], storage: FileStorage, values: Record<string, unknown>): Promise<Map<string, ImageFile>> {
  const uuids = Object.values(values)
    .flatMap((v) => (Array.isArray(v) ? v : [v]))
    .filter((v): v is string => typeof v === 'string' && /^[0-9a-f-]{36}$/i.test(v));
  const images = new Map<string, ImageFile>();
  if (uuids.length === 0) return images;
  const files = await tx.storedFile.findMany({ where: { uuid: { in: uuids } } });
  for (const file of files) images.set(file.uuid, { bytes: await storage.read(file.storageKey), contentType: file.contentType });
  return images;
}
