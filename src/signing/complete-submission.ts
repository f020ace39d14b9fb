/**
 * The completion pipeline (issue "Signing"): for each completed party, in completion order, draw
 * its values on top of the previous party's output; when everyone has completed, sign the final
 * documents, build and sign the audit log, and mark the submission completed.
 *
 * A chain of ensure-steps (as DocuSeal's Submissions::EnsureResultGenerated and
 * EnsureAuditGenerated, lib/submissions/; Documenso's sealDocument): each step makes its PDFs and
 * puts their bytes into storage outside any transaction, then records its output (StoredFile rows
 * + completed_documents rows) in one short transaction with the state change and the events it
 * causes. A step whose output rows exist is skipped, so a run repeated after a crash (the job is
 * retried, or taken back from a dead instance) makes only what is missing.
 *
 * Files stored but never recorded (the process died between a step's put and its transaction):
 * each output file is stored under a name derived from its step (FileStorage.putNamed,
 * `completions/<submission slug>/documents-<submitterId>-<position>.pdf` and `…/audit-log.pdf`),
 * first write wins. A repeated run finds the dead run's file under that name and records it instead
 * of making another, so storage holds no output that no row references, and no sweep is needed (a
 * content-addressed put would leave the first file behind: signing times and the audit log's
 * "generated at" make every run's bytes differ). No other writer shares these names (unlike
 * content-addressed keys), so nothing can race with keeping or recording them. The slug, random,
 * keeps a fresh database on an old DATA_DIR from finding an older submission's files.
 * One run per submission at a time: a session advisory lock (src/db/queries/completion.ts), which
 * PostgreSQL drops with a dead process's connection.
 *
 * 1. `documents`, once per completed party: the party's documents (the last party's also signed).
 *    Its transaction records `form.completed` (key `form.completed:<submitterId>`).
 * 2. `audit-log`, once everyone has completed: the signed audit log. Its transaction also sets the
 *    submission's completed_at and records `submission.completed` (key `submission.completed:<id>`)
 *    and the completed emails' job (src/signing/completed-emails.ts). When the account's
 *    `combine_pdf_result` is on, the step also makes the combined PDF (the final documents and the
 *    audit log, signed; `…/combined.pdf`) and records it in the same transaction, so
 *    `submission.completed` carries its `combined_document_url` (DocuSeal's order, §10.1 step 3).
 *
 * A submission deleted permanently (src/templates/delete-records.ts) ends the run quietly:
 * a job that finds it gone does nothing, and a step whose transaction finds it gone (it locks the
 * row, so a delete waits for a step that went first, and then deletes its output too) records
 * nothing and removes the files it stored (src/documents/unused-files.ts).
 *
 * Events (reference §10.1 step 6) go through the outbox (src/jobs/outbox.ts), so a crash can
 * neither lose them nor send them twice. Tests stop a run at each step's boundaries through
 * CompletionDeps.hooks (test/completion-restart.test.ts kills the service there with SIGKILL).
 */
import { typedTextOf } from '../documents/typed-signature.ts';
import type { Db } from '../db/client.ts';
import { lockSubmissionForStep, withCompletionLock } from '../db/queries/completion.ts';
import type { FreedKey } from '../db/queries/permanent-delete.ts';
import type { PdfPageInfo } from '../documents/pdf.ts';
import type { FileStorage, PutResult } from '../documents/storage.ts';
import { recordStoredFile } from '../documents/store-file.ts';
import { removeUnusedBytes } from '../documents/unused-files.ts';
import type { DomainEvent, SideEffects } from '../events/events.ts';
import { AppError } from '../errors.ts';
import { signerLanguage } from '../i18n/signer-language.ts';
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
import { headOf } from './audit-chain.ts';
import { completedEmailsJob } from './completed-emails.ts';
import { parseAccountPreferences } from '../accounts/account-preferences.ts';
import { loadImages, stepFileName } from './completion-files.ts';
import type { SigningConfig } from './certificates.ts';

export const COMPLETE_SUBMISSION_JOB = 'complete-submission';

export interface CompletionDeps {
  db: Db;
  storage: FileStorage;
  config: SigningConfig;
  /** Each step's transaction, with form.completed, submission.completed and the completed emails' job in it. */
  effects: Pick<SideEffects, 'transaction'>;
  logger?: Pick<JobLogger, 'warn'>;
  /** Tests only (see CompletionHooks); the service passes none. */
  hooks?: CompletionHooks;
}

/**
 * The job's data: the submission, and the party whose completion enqueued it (absent in jobs
 * enqueued before it was added).
 */
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
      : `The signed documents could not be produced after ${failure.attempt + 1} attempts (an internal error); ` +
        'the service logs say why.';
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

/** A completion step (see the module comment). */
export type CompletionStep = 'documents' | 'audit-log';

/**
 * Where a run stands at a step's boundary: `stored` once the step's files are in storage and
 * before its transaction, `committed` once its transaction (with its events) has committed.
 */
export interface CompletionBoundary {
  submissionId: number;
  step: CompletionStep;
  /** The party of a `documents` step. */
  submitterId?: number;
  phase: 'stored' | 'committed';
}

/**
 * Test seams, never set by the service (`npm start`): tests inject them through main.ts's
 * startSignet or buildApp's `completionHooks` (test/helpers/paused-service.ts pauses a real process
 * at a boundary, to kill it there).
 */
export interface CompletionHooks {
  /** Awaited at each step boundary. */
  atBoundary?(boundary: CompletionBoundary): Promise<void>;
}

/** How long a step's transaction may take: a few inserts and an update, no file or PDF work. */
const STEP_TRANSACTION = { timeout: 15_000, maxWait: 15_000 };

type CompletionLibraries = Awaited<ReturnType<typeof loadCompletionLibraries>>;

// Loaded on the first completion only: fonts, PDF and crypto libraries are tens of MB of memory
// that an idle service need not hold (bench/README.md, idle RSS).
async function loadCompletionLibraries() {
  const [
    { buildAuditLog },
    { loadSigningIdentity },
    { drawValues, drawValuesOn, loadPdfForDrawing },
    sign,
    outputs,
    { padesServices },
  ] = await Promise.all([
    import('./audit-log.ts'),
    import('./certificates.ts'),
    import('./draw-values.ts'),
    import('./sign-pdf.ts'),
    import('./submission-outputs.ts'),
    import('./pades-services.ts'),
  ]);
  const { signPdf, signPdfDocument } = sign;
  const { buildCombinedPdf } = outputs;
  return {
    buildAuditLog,
    loadSigningIdentity,
    padesServices,
    drawValues,
    drawValuesOn,
    loadPdfForDrawing,
    signPdf,
    signPdfDocument,
    buildCombinedPdf,
  };
}

/** What the steps of one run read (loaded once, under the lock) and add to. */
async function loadCompletionState(db: Db, submissionId: number) {
  const submission = await db.submission.findUnique({
    where: { id: submissionId },
    include: {
      account: { select: { id: true, name: true, testing: true, timezone: true, preferences: true } },
      template: { select: { name: true } },
      submitters: { orderBy: [{ completedAt: 'asc' }, { id: 'asc' }] },
      completedDocuments: { select: { submitterId: true, kind: true, position: true, fileId: true, sha256: true } },
    },
  });
  if (!submission) return null;
  return {
    submission,
    schema: submission.templateSchema as { attachment_uuid: string; name: string; file_id: number }[],
    fields: parseFields(submission.templateFields),
    /** Output rows: those found, then those the run's steps recorded. */
    outputs: submission.completedDocuments,
    /** Completion errors are cleared by the first step that records something. */
    completionError: submission.completionError,
  };
}

type CompletionState = NonNullable<Awaited<ReturnType<typeof loadCompletionState>>>;

/** A step's transaction found the submission deleted: it recorded nothing; `files` are what it stored. */
class SubmissionGone extends Error {
  constructor(readonly files: FreedKey[]) {
    super('the submission was deleted');
  }
}

type Party = CompletionState['submission']['submitters'][number];

interface CompletionRun {
  deps: CompletionDeps;
  libs: CompletionLibraries;
  state: CompletionState;
  /** The account's signing identity, loaded (or generated once) on first need. */
  identity(): ReturnType<CompletionLibraries['loadSigningIdentity']>;
  /** The signatures' timestamps and validation data (PAdES B-T/B-LT/B-LTA). */
  pades: ReturnType<CompletionLibraries['padesServices']>;
  boundary(step: CompletionStep, phase: CompletionBoundary['phase'], submitterId?: number): Promise<void>;
}

/**
 * Produces whatever is missing for a submission: the documents of each completed party, then
 * (everyone completed) the audit log, which completes the submission. Each step is skipped when
 * its output exists (see the module comment); runs for one submission wait for each other. A
 * submission that is gone (deleted permanently) ends it quietly.
 * @throws the database's, storage's or PDF libraries' errors, or an AppError VALIDATION/NOT_FOUND
 *   for a document or image it can never draw (the job retries; a step records all or nothing)
 */
export async function completeSubmission(deps: CompletionDeps, submissionId: number): Promise<void> {
  const libs = await loadCompletionLibraries();
  await withCompletionLock(deps.db, submissionId, async () => {
    const state = await loadCompletionState(deps.db, submissionId);
    if (!state) return;
    const { account } = state.submission;
    let identity: ReturnType<CompletionLibraries['loadSigningIdentity']> | undefined;
    const run: CompletionRun = {
      deps,
      libs,
      state,
      identity: () =>
        (identity ??= libs.loadSigningIdentity(
          { db: deps.db, config: deps.config, logger: deps.logger },
          { accountId: account.id, signerName: account.name },
        )),
      pades: libs.padesServices({ db: deps.db, config: deps.config, logger: deps.logger }),
      boundary: async (step, phase, submitterId) =>
        deps.hooks?.atBoundary?.({ submissionId, step, phase, ...(submitterId ? { submitterId } : {}) }),
    };
    const parties = state.submission.submitters;
    const completed = parties.filter((s) => s.completedAt);
    try {
      for (const party of completed) await ensurePartyDocuments(run, party);
      if (parties.length > 0 && completed.length === parties.length) await ensureAuditLog(run);
    } catch (error) {
      if (!(error instanceof SubmissionGone)) throw error;
      // Deleted while this run made its files: nothing refers to them.
      await removeUnusedBytes(deps, error.files);
    }
  });
}

/**
 * Step 1, for one completed party: its documents, each drawn on the previous party's output (else
 * the template's file), the last party's also signed; recorded with `form.completed`. Skipped
 * when the party's documents exist. Parties are ensured in completion order, so the previous
 * party's output exists.
 */
async function ensurePartyDocuments(run: CompletionRun, party: Party): Promise<void> {
  const { deps, libs, state } = run;
  const { submission, schema, fields } = state;
  const documentsOf = (submitterId: number) =>
    state.outputs.filter((d) => d.kind === 'document' && d.submitterId === submitterId);
  if (documentsOf(party.id).length > 0) return;

  const completed = submission.submitters.filter((s) => s.completedAt);
  const index = completed.indexOf(party);
  const previous = index > 0 ? completed[index - 1] : undefined;
  // The last party's output is final: drawn and signed in one parse and one save of each file.
  const isFinal = completed.length === submission.submitters.length && index === completed.length - 1;
  const identity = isFinal ? await run.identity() : undefined;
  const values = party.values as Record<string, unknown>;
  const images = await loadImages(deps.db, deps.storage, values);
  const baseIds = schema.map(
    (doc, position) =>
      (previous && documentsOf(previous.id).find((d) => d.position === position)?.fileId) ?? doc.file_id,
  );
  const files = await deps.db.storedFile.findMany({
    where: { id: { in: [...new Set([...baseIds, ...schema.map((d) => d.file_id)])] } },
    select: { id: true, storageKey: true, pages: true },
  });
  const fileById = (id: number) => {
    const file = files.find((f) => f.id === id);
    if (!file) throw new Error(`completion of submission ${submission.id}: stored file ${id} is missing`);
    return file;
  };

  const made: { position: number; doc: (typeof schema)[number]; pages: unknown; put: PutResult }[] = [];
  for (const [position, doc] of schema.entries()) {
    const original = fileById(doc.file_id);
    const name = stepFileName(submission.slug, `documents-${party.id}-${position}`);
    // A run that died after storing this file left it under the name: kept, not made again.
    const put = await deps.storage.putNamed(name, async () => {
      const drawing = {
        pdf: await deps.storage.read(fileById(baseIds[position]!).storageKey),
        pages: original.pages as unknown as PdfPageInfo[],
        attachmentUuid: doc.attachment_uuid,
        fields: fields.filter((f) => f.submitter_uuid === party.roleUuid),
        values,
        images,
        timeZone: submission.account.timezone,
        now: party.completedAt ?? new Date(),
        language: signerLanguage({ submitter: party, submission, account: submission.account }),
      };
      if (!identity) return libs.drawValues(drawing);
      const loaded = await libs.loadPdfForDrawing(drawing.pdf, drawing.attachmentUuid);
      await libs.drawValuesOn(loaded, drawing);
      return libs.signPdfDocument(loaded, identity, { name: identity.name, pades: run.pades });
    });
    made.push({ position, doc, pages: original.pages, put });
  }
  await run.boundary('documents', 'stored', party.id);

  const rows = await deps.effects.transaction(async (tx, effects) => {
    if (!(await lockSubmissionForStep(tx, submission.id)))
      throw new SubmissionGone(made.map(({ put }) => ({ key: put.key, sha256: put.sha256 })));
    const rows = [];
    for (const { position, doc, pages, put } of made) {
      const file = await recordStoredFile({ db: tx, storage: deps.storage }, put, {
        accountId: submission.accountId,
        filename: `${doc.name}.pdf`,
        contentType: 'application/pdf',
        pageCount: (pages as unknown[] | null)?.length,
        pages,
      });
      // The unique index (submission, submitter, kind, position) refuses a second set.
      rows.push(
        await tx.completedDocument.create({
          data: {
            accountId: submission.accountId,
            submissionId: submission.id,
            submitterId: party.id,
            fileId: file.id,
            kind: 'document',
            name: doc.name,
            sha256: file.sha256,
            position,
          },
          select: { submitterId: true, kind: true, position: true, fileId: true, sha256: true },
        }),
      );
    }
    await clearCompletionError(tx, state);
    effects.events.push(formCompleted(submission.accountId, party));
    return rows;
  }, STEP_TRANSACTION);
  state.outputs.push(...rows);
  state.completionError = null;
  await run.boundary('documents', 'committed', party.id);
}

/**
 * Step 2, once everyone has completed and every party's documents exist: the audit log (parties,
 * events, values, the original and final documents' SHA-256), signed; recorded with the
 * submission's completion, `submission.completed` and the completed emails' job. Skipped when the
 * audit log exists.
 */
async function ensureAuditLog(run: CompletionRun): Promise<void> {
  const { deps, libs, state } = run;
  const { submission, schema, fields } = state;
  if (state.outputs.some((d) => d.kind === 'audit_log')) return;
  const { db } = deps;
  const last = submission.submitters.filter((s) => s.completedAt).at(-1)!;
  const finals = state.outputs.filter((d) => d.kind === 'document' && d.submitterId === last.id);
  // A run that died after storing the audit log left it under the name: kept, not built again.
  const put = await deps.storage.putNamed(stepFileName(submission.slug, 'audit-log'), async () => {
    const [originals, events, files] = await Promise.all([
      db.storedFile.findMany({
        where: { id: { in: schema.map((d) => d.file_id) } },
        select: { id: true, sha256: true },
      }),
      db.submissionEvent.findMany({
        where: { submissionId: submission.id },
        orderBy: [{ eventTimestamp: 'asc' }, { id: 'asc' }],
      }),
      loadAuditLogFiles(db, deps.storage, fields, submission.submitters),
    ]);
    const roles = parseRoles(submission.templateSubmitters);
    const log = await libs.buildAuditLog({
      submissionId: submission.id,
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
          // As its documents show them.
          language: signerLanguage({ submitter: s, submission, account: submission.account }),
        }),
      })),
      generatedAt: new Date(),
      timeZone: submission.account.timezone,
      auditChain: headOf(events),
      // DocuSeal's rule (generate_audit_trail.rb: the last completed submitter's metadata.lang):
      // the language of the party who completed last, as signerLanguage gives it.
      language: signerLanguage({ submitter: last, submission, account: submission.account }),
    });
    const identity = await run.identity();
    return libs.signPdf(log, identity, { name: identity.name, pades: run.pades });
  });
  const combined = await ensureCombinedPut(run, finals, put);
  await run.boundary('audit-log', 'stored');

  const completedAt = submission.completedAt ?? last.completedAt ?? new Date();
  const row = await deps.effects.transaction(async (tx, effects) => {
    if (!(await lockSubmissionForStep(tx, submission.id)))
      throw new SubmissionGone([put, ...(combined ? [combined] : [])].map(({ key, sha256 }) => ({ key, sha256 })));
    const file = await recordStoredFile({ db: tx, storage: deps.storage }, put, {
      accountId: submission.accountId,
      filename: 'Audit Log.pdf',
      contentType: 'application/pdf',
    });
    const row = await tx.completedDocument.create({
      data: {
        accountId: submission.accountId,
        submissionId: submission.id,
        submitterId: null,
        fileId: file.id,
        kind: 'audit_log',
        name: 'Audit Log',
        sha256: put.sha256,
        position: 0,
      },
      select: { submitterId: true, kind: true, position: true, fileId: true, sha256: true },
    });
    if (combined) {
      const name = submission.name || submission.template.name;
      const combinedFile = await recordStoredFile({ db: tx, storage: deps.storage }, combined, {
        accountId: submission.accountId,
        filename: `${name}.pdf`,
        contentType: 'application/pdf',
      });
      await tx.completedDocument.create({
        data: {
          accountId: submission.accountId,
          submissionId: submission.id,
          submitterId: null,
          fileId: combinedFile.id,
          kind: 'combined',
          name,
          sha256: combined.sha256,
          position: 0,
        },
      });
    }
    if (!submission.completedAt || state.completionError !== null) {
      await tx.submission.update({
        where: { id: submission.id },
        data: { completedAt, completionError: null, completionFailedAt: null },
      });
    }
    effects.events.push(submissionCompleted(submission.accountId, submission.id, completedAt));
    effects.jobs.push(completedEmailsJob(submission.id));
    return row;
  }, STEP_TRANSACTION);
  state.outputs.push(row);
  state.completionError = null;
  await run.boundary('audit-log', 'committed');
}

/**
 * The combined PDF of the audit-log step, when the account's `combine_pdf_result` is on (DocuSeal's
 * ProcessSubmitterCompletionJob: EnsureCombinedGenerated for the last party,
 * app/jobs/process_submitter_completion_job.rb): the final documents then the audit log, merged and
 * signed (src/signing/submission-outputs.ts buildCombinedPdf), stored under its step name.
 * @returns the stored file, or null when the account does not want it
 */
async function ensureCombinedPut(
  run: CompletionRun,
  finals: { fileId: number; position: number }[],
  auditLog: PutResult,
): Promise<PutResult | null> {
  const { deps, libs, state } = run;
  const { submission } = state;
  if (parseAccountPreferences(submission.account.preferences).combine_pdf_result !== true) return null;
  return deps.storage.putNamed(stepFileName(submission.slug, 'combined'), async () => {
    const ordered = [...finals].sort((a, b) => a.position - b.position);
    const files = await deps.db.storedFile.findMany({
      where: { id: { in: ordered.map((d) => d.fileId) } },
      select: { id: true, storageKey: true },
    });
    const parts = await Promise.all(
      ordered.map((d) => deps.storage.read(files.find((f) => f.id === d.fileId)!.storageKey)),
    );
    parts.push(await deps.storage.read(auditLog.key));
    return libs.buildCombinedPdf(
      { db: deps.db, config: deps.config, logger: deps.logger },
      { accountId: submission.account.id, accountName: submission.account.name, parts },
    );
  });
}

/** A run that records something ends an earlier failure (the data was fixed, or it was transient). */
async function clearCompletionError(
  tx: Parameters<Parameters<SideEffects['transaction']>[0]>[0],
  state: CompletionState,
): Promise<void> {
  if (state.completionError === null) return;
  await tx.submission.update({
    where: { id: state.submission.id },
    data: { completionError: null, completionFailedAt: null },
  });
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
 * The stored files the parties' values refer to, for the audit log, by uuid: names of every
 * file, the bytes of signature, initials, image and stamp values (read once per file), and a typed
 * signature's text.
 */
async function loadAuditLogFiles(
  db: Db,
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
  const rows = await db.storedFile.findMany({
    where: { uuid: { in: [...uuids] } },
    select: { uuid: true, filename: true, contentType: true, storageKey: true, metadata: true },
  });
  await Promise.all(
    rows.map(async (row) => {
      const bytes = imageUuids.has(row.uuid) ? await storage.read(row.storageKey) : undefined;
      const typedText = typedTextOf(row.metadata);
      files.set(row.uuid, {
        filename: row.filename,
        contentType: row.contentType,
        ...(bytes ? { bytes } : {}),
        ...(typedText ? { typedText } : {}),
      });
    }),
  );
  return files;
}
