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
 *
 * Events (reference §10.1 step 6), recorded by the transaction that made what they announce
 * (the outbox, src/jobs/outbox.ts), so that a crash can neither lose them nor send them twice:
 * `form.completed` with a party's documents (key `form.completed:<submitterId>`), then
 * `submission.completed` with the audit log (key `submission.completed:<id>`) and the completed
 * emails' job (src/signing/completed-emails.ts). test/completion-restart.test.ts kills the
 * service inside the transaction and right after its commit.
 */
import { createHash } from 'node:crypto';
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import type { PdfPageInfo } from '../documents/pdf.ts';
import type { FileStorage } from '../documents/storage.ts';
import { storeFile } from '../documents/store-file.ts';
import type { DomainEvent, SideEffects } from '../events/events.ts';
import { AppError } from '../errors.ts';
import type { JobFailure, JobLogger, JobQueue } from '../jobs/job-queue.ts';
import type { OutboxJob } from '../jobs/outbox.ts';
import { type Field, parseFields, parseRoles } from '../templates/fields.ts';
// Pure and small (no PDF libraries): loaded with this module.
import {
  AUDIT_LOG_FILE_TYPES,
  AUDIT_LOG_IMAGE_TYPES,
  type AuditLogFile,
  listAuditLogValues,
} from './audit-log-values.ts';
import { completedEmailsJob } from './completed-emails.ts';
import type { ImageFile } from './draw-values.ts';

export const COMPLETE_SUBMISSION_JOB = 'complete-submission';

export interface CompletionDeps {
  db: Db;
  storage: FileStorage;
  config: Pick<Config, 'signingP12Path' | 'signingP12Password' | 'testPauseCompletion'>;
  /** Each step's transaction, with form.completed, submission.completed and the completed emails' job in it. */
  effects: Pick<SideEffects, 'transaction'>;
  logger?: Pick<JobLogger, 'warn'>;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** The job's data: the submission, and the party whose completion enqueued it (absent in jobs enqueued before it was added). */
export interface CompletionJobData {
  submissionId: number;
  submitterId?: number;
}

/**
 * Registers the completion job on a queue. A permanent failure (an AppError VALIDATION or
 * NOT_FOUND: a document or image it can never draw) stops it at once; others (the database,
 * storage) are retried 5 times in all, 5, 10, 20 and 40 s apart. Either way, when it gives up it
 * records why on the submission (recordCompletionFailure).
 */
export function defineCompletionJob(queue: JobQueue, deps: CompletionDeps): void {
  queue.define<CompletionJobData>(
    COMPLETE_SUBMISSION_JOB,
    ({ submissionId }) => completeSubmission(deps, submissionId),
    {
      concurrency: 2,
      retry: { maxAttempts: COMPLETION_MAX_ATTEMPTS, delayMs: (attempt) => 2 ** attempt * 5_000 },
      onGiveUp: (data, failure) => recordCompletionFailure(deps, data, failure),
    },
  );
}

/** Runs of the completion job in all after transient failures (docs/security.md "Documents and images"). */
export const COMPLETION_MAX_ATTEMPTS = 5;

/** The event type of a completion that gave up (a Signet event; docs/compatibility.md). */
export const FAIL_COMPLETION_EVENT = 'fail_completion';

/**
 * Records why the completion of a submission gave up, where users see it: the submission's
 * `completion_error` and `completion_failed_at` (GraphQL `Submission.completionError`, REST
 * `completion_error` of GET /submissions/{id}) and a `fail_completion` submission event whose
 * `data.reason` says the same (GraphQL events), for the party whose completion started the job.
 * The reason is the AppError's message (user-safe: "field \"Stamp\": the image … cannot be read");
 * for other errors a generic sentence, the details going to the log only.
 */
export async function recordCompletionFailure(
  deps: Pick<CompletionDeps, 'db'>,
  data: CompletionJobData,
  failure: JobFailure,
): Promise<void> {
  const reason =
    failure.error instanceof AppError
      ? failure.error.message
      : `The signed documents could not be produced after ${failure.attempt + 1} attempts (an internal error); the service logs say why.`;
  const submission = await deps.db.submission.findUnique({
    where: { id: data.submissionId },
    select: { accountId: true },
  });
  if (!submission) return;
  const failedAt = new Date();
  await deps.db.$transaction([
    deps.db.submission.update({
      where: { id: data.submissionId },
      data: { completionError: reason, completionFailedAt: failedAt },
    }),
    deps.db.submissionEvent.create({
      data: {
        accountId: submission.accountId,
        submissionId: data.submissionId,
        submitterId: data.submitterId ?? null,
        eventType: FAIL_COMPLETION_EVENT,
        eventTimestamp: failedAt,
        data: { reason, permanent: failure.permanent, attempts: failure.attempt + 1 },
      },
    }),
  ]);
}

/** The pipeline's job after a party completed, recorded by the completing transaction; one per party. */
export function completionJob(submissionId: number, submitterId: number): OutboxJob {
  return {
    name: COMPLETE_SUBMISSION_JOB,
    data: { submissionId, submitterId } satisfies CompletionJobData,
    uniqueKey: `${submissionId}:${submitterId}`,
  };
}

/**
 * Produces whatever is missing for a submission: documents of completed parties, then (all
 * completed) the signed final documents and audit log, each step in one transaction with the
 * events of what it made (see the module comment).
 * @throws the database's, storage's or PDF libraries' errors (the job retries; nothing is half-written)
 */
export async function completeSubmission(deps: CompletionDeps, submissionId: number): Promise<void> {
  const { db } = deps;
  // Loaded on the first completion only: fonts, PDF and crypto libraries are tens of MB of memory
  // that an idle service need not hold (bench/README.md, idle RSS).
  const [
    { buildAuditLog },
    { loadSigningIdentity },
    { drawValues, drawValuesOn, loadPdfForDrawing },
    { signPdf, signPdfDocument },
  ] = await Promise.all([
    import('./audit-log.ts'),
    import('./certificates.ts'),
    import('./draw-values.ts'),
    import('./sign-pdf.ts'),
  ]);
  // The signing identity is loaded (or generated once) outside the work transaction, on first need.
  let identityPromise: ReturnType<typeof loadSigningIdentity> | undefined;
  const identityFor = (account: { id: number; name: string }) =>
    (identityPromise ??= loadSigningIdentity(
      { db, config: deps.config },
      { accountId: account.id, signerName: account.name },
    ));
  for (;;) {
    const progressed = await deps.effects.transaction(
      async (tx, effects) => {
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
        const done = new Set(
          submission.completedDocuments.filter((d) => d.kind === 'document').map((d) => d.submitterId),
        );
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
              (previous &&
                submission.completedDocuments.find(
                  (d) => d.kind === 'document' && d.submitterId === previous.id && d.position === position,
                )?.fileId) ??
              doc.file_id;
            const base = await tx.storedFile.findUniqueOrThrow({ where: { id: baseFileId } });
            const original = await tx.storedFile.findUniqueOrThrow({
              where: { id: doc.file_id },
              select: { pages: true },
            });
            const drawing = {
              pdf: await deps.storage.read(base.storageKey),
              pages: original.pages as unknown as PdfPageInfo[],
              attachmentUuid: doc.attachment_uuid,
              fields: fields.filter((f) => f.submitter_uuid === next.roleUuid),
              values: next.values as Record<string, unknown>,
              images,
              timeZone: submission.account.timezone,
              now: next.completedAt ?? new Date(),
            };
            let pdf: Uint8Array;
            if (identity) {
              // The last party: drawn and signed in one parse and one save of the file.
              const loaded = await loadPdfForDrawing(drawing.pdf, drawing.attachmentUuid);
              await drawValuesOn(loaded, drawing);
              pdf = await signPdfDocument(loaded, identity, { name: identity.name });
            } else {
              pdf = await drawValues(drawing);
            }
            const stored = await storeFile(
              { db: tx, storage: deps.storage },
              {
                accountId: submission.accountId,
                bytes: pdf,
                filename: `${doc.name}.pdf`,
                contentType: 'application/pdf',
                pageCount: (original.pages as unknown[] | null)?.length,
                pages: original.pages,
              },
            );
            await tx.completedDocument.create({
              data: {
                accountId: submission.accountId,
                submissionId,
                submitterId: next.id,
                fileId: stored.id,
                kind: 'document',
                name: doc.name,
                sha256: stored.sha256,
                position,
              },
            });
          }
          // A run that makes progress ends an earlier failure (the data was fixed, or it was transient).
          if (submission.completionError !== null)
            await tx.submission.update({
              where: { id: submissionId },
              data: { completionError: null, completionFailedAt: null },
            });
          effects.events.push(formCompleted(submission.accountId, next));
          await testPause(deps, 'drawn', { submissionId, submitterId: next.id });
          return true;
        }

        // Nothing left to make.
        const hasAuditLog = submission.completedDocuments.some((d) => d.kind === 'audit_log');
        if (!everyoneDone || hasAuditLog) return false;

        // Everyone has completed and every party's documents exist: the audit log, then done.
        const last = completed.at(-1)!;
        const finals = await tx.completedDocument.findMany({
          where: { submissionId, submitterId: last.id, kind: 'document' },
          orderBy: { position: 'asc' },
        });
        const originals = await tx.storedFile.findMany({
          where: { id: { in: schema.map((d) => d.file_id) } },
          select: { id: true, sha256: true },
        });
        const events = await tx.submissionEvent.findMany({
          where: { submissionId },
          orderBy: [{ eventTimestamp: 'asc' }, { id: 'asc' }],
        });
        const roles = parseRoles(submission.templateSubmitters);
        const files = await loadAuditLogFiles(tx, deps.storage, fields, submission.submitters);
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
              .map((e) => ({
                type: e.eventType,
                at: e.eventTimestamp,
                ip: (e.data as { ip?: string }).ip ?? null,
                userAgent: (e.data as { ua?: string }).ua ?? null,
                data: e.data as Record<string, unknown>,
              })),
            values: listAuditLogValues(fields, s.roleUuid, (s.values ?? {}) as Record<string, unknown>, files, {
              timeZone: submission.account.timezone,
              now: s.completedAt ?? undefined,
            }),
          })),
          generatedAt: new Date(),
          timeZone: submission.account.timezone,
        });
        const identity = await identityFor(submission.account);
        const signed = await signPdf(log, identity, { name: identity.name });
        const stored = await storeFile(
          { db: tx, storage: deps.storage },
          { accountId: submission.accountId, bytes: signed, filename: 'Audit Log.pdf', contentType: 'application/pdf' },
        );
        await tx.completedDocument.create({
          data: {
            accountId: submission.accountId,
            submissionId,
            submitterId: null,
            fileId: stored.id,
            kind: 'audit_log',
            name: 'Audit Log',
            sha256: sha256(signed),
            position: 0,
          },
        });
        const completedAt = submission.completedAt ?? last.completedAt ?? new Date();
        if (!submission.completedAt || submission.completionError !== null) {
          await tx.submission.update({
            where: { id: submissionId },
            data: { completedAt, completionError: null, completionFailedAt: null },
          });
        }
        effects.events.push(submissionCompleted(submission.accountId, submissionId, completedAt));
        effects.jobs.push(completedEmailsJob(submissionId));
        await testPause(deps, 'drawn', { submissionId, auditLog: true });
        return true;
      },
      { timeout: 120_000, maxWait: 60_000 },
    );
    if (!progressed) return;
    // Committed, with its events and emails: a kill here must lose nothing (completion-restart test).
    await testPause(deps, 'committed', { submissionId });
  }
}

const formCompleted = (accountId: number, submitter: { id: number; completedAt: Date | null }): DomainEvent => ({
  type: 'form.completed',
  accountId,
  recordId: submitter.id,
  at: submitter.completedAt ?? new Date(),
  key: `form.completed:${submitter.id}`,
});

const submissionCompleted = (accountId: number, submissionId: number, at: Date): DomainEvent => ({
  type: 'submission.completed',
  accountId,
  recordId: submissionId,
  at,
  key: `submission.completed:${submissionId}`,
});

/**
 * TEST_PAUSE_COMPLETION (tests only, NODE_ENV=test): sleeps at `point` so that a test can kill
 * the process there, after saying so in the log.
 */
async function testPause(
  deps: CompletionDeps,
  point: 'drawn' | 'committed',
  context: Record<string, unknown>,
): Promise<void> {
  const pause = deps.config.testPauseCompletion;
  if (!pause || pause.point !== point) return;
  deps.logger?.warn({ ...context, point, ms: pause.ms }, `TEST_PAUSE_COMPLETION: pausing at ${point}`);
  await new Promise((resolve) => setTimeout(resolve, pause.ms));
}

/**
 * The stored files the parties' values refer to, for the audit log, by uuid: names of every
 * file, and the bytes of signature, initials, image and stamp values (read once per file).
 */
async function loadAuditLogFiles(
  tx: Parameters<Parameters<Db['$transaction']>[0]>[0],
  storage: FileStorage,
  fields: Field[],
  submitters: { values: unknown }[],
): Promise<Map<string, AuditLogFile>> {
  const imageUuids = new Set<string>();
  const uuids = new Set<string>();
  for (const submitter of submitters) {
    const values = (submitter.values ?? {}) as Record<string, unknown>;
    for (const field of fields) {
      const isImage = AUDIT_LOG_IMAGE_TYPES.has(field.type);
      if (!isImage && !AUDIT_LOG_FILE_TYPES.has(field.type)) continue;
      for (const value of [values[field.uuid]].flat()) {
        if (typeof value !== 'string' || !/^[0-9a-f-]{36}$/i.test(value)) continue;
        uuids.add(value);
        if (isImage) imageUuids.add(value);
      }
    }
  }
  const files = new Map<string, AuditLogFile>();
  if (uuids.size === 0) return files;
  const rows = await tx.storedFile.findMany({
    where: { uuid: { in: [...uuids] } },
    select: { uuid: true, filename: true, contentType: true, storageKey: true },
  });
  await Promise.all(
    rows.map(async (row) => {
      const bytes = imageUuids.has(row.uuid) ? await storage.read(row.storageKey) : undefined;
      files.set(row.uuid, { filename: row.filename, contentType: row.contentType, ...(bytes ? { bytes } : {}) });
    }),
  );
  return files;
}

/** The image files of a party's attachment values (uuids of stored files), by uuid. */
async function loadImages(
  tx: Parameters<Parameters<Db['$transaction']>[0]>[0],
  storage: FileStorage,
  values: Record<string, unknown>,
): Promise<Map<string, ImageFile>> {
  const uuids = Object.values(values)
    .flatMap((v) => (Array.isArray(v) ? v : [v]))
    .filter((v): v is string => typeof v === 'string' && /^[0-9a-f-]{36}$/i.test(v));
  const images = new Map<string, ImageFile>();
  if (uuids.length === 0) return images;
  const files = await tx.storedFile.findMany({ where: { uuid: { in: uuids } } });
  for (const file of files)
    images.set(file.uuid, { bytes: await storage.read(file.storageKey), contentType: file.contentType });
  return images;
}
