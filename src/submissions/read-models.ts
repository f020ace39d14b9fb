/**
 * Submissions and submitters as DocuSeal shows them, read straight from the database: the read
 * models src/docuseal-shapes/ turns into DocuSeal's wire JSON (SubmissionListData for a
 * GET /submissions item, SubmissionGetData for GET /submissions/{id} and the submission.* webhooks,
 * FormSubmitterData for the form.* webhooks; reference/docuseal-behaviour.md §5.1, §5.2, §5.6).
 *
 * No GraphQL and no viewer: the webhooks (src/webhooks/payloads.ts) and the REST routes load
 * through these functions, scoped by the account given. Each loader takes a page of ids and makes
 * a fixed number of queries for the whole page (one Prisma findMany with its nested selections,
 * one for the stored files that values name, one per level of folder nesting), never one per
 * record.
 *
 * The rules read models share with the GraphQL resolvers live here once and both call them:
 * EVENT_ORDER, submissionDocuments (the documents of the last submitter to complete),
 * completedOutputFile (audit_log_url, combined_document_url), completionErrorOf. The statuses,
 * values and role names are src/submissions/status.ts's; template folder names are
 * src/templates/read-models.ts's. Timestamps are written as the GraphQL DateTime scalar writes
 * them (src/graphql/builder.ts): Date.toISOString(), UTC with milliseconds.
 */
import type { KeyFolders } from '../accounts/key-scopes.ts';
import { typedTextOf } from '../documents/typed-signature.ts';
import type { Db, Prisma } from '../db/client.ts';
import type {
  SubmissionFieldsData,
  SubmissionGetData,
  SubmissionListData,
  SubmissionTemplateData,
} from '../docuseal-shapes/submission.ts';
import type { SubmitterBaseData } from '../docuseal-shapes/submitter.ts';
import type { FormSubmitterData } from '../docuseal-shapes/webhook-data.ts';
import { AppError } from '../errors.ts';
import { parseFields, parseRoles } from '../templates/fields.ts';
import { loadFolderNames, templateFieldData, templateFolderName } from '../templates/read-models.ts';
import { findSubmissionForAccount } from './find.ts';
import {
  buildFieldValues,
  buildValues,
  roleName,
  submissionStatus,
  submitterStatus,
  VALUE_FILE_SELECT,
} from './status.ts';

/** What the loaders need besides the database. */
export interface ReadModelDeps {
  db: Db;
  /** Signed, expiring URL of a stored file (src/documents/file-urls.ts, FileUrlSigner.url). */
  files: { url(file: { uuid: string; filename: string }): string };
}

/** Which records, of which account: a record of another account reads as unknown (null). */
export interface ReadModelRequest {
  accountId: number;
  /** Record ids; may repeat; any order. */
  ids: readonly number[];
}

type StoredFileRef = { uuid: string; filename: string };

/** Order of a submission's (or submitter's) events: oldest first, ties by id (reference §5.1 `submission_events`). */
export const EVENT_ORDER = [
  { eventTimestamp: 'asc' },
  { id: 'asc' },
] satisfies Prisma.SubmissionEventOrderByWithRelationInput[];

/**
 * A submission's `documents` (reference §5.1): once completed, the signed documents of the
 * submitter who completed last (each completion re-signs every document, so the last set holds
 * every signature); [] before.
 * @param documents the submission's completed documents of kind "document", in position order
 */
export function submissionDocuments<D extends { submitterId: number | null }>(
  submission: { completedAt: Date | null },
  submitters: readonly { id: number; completedAt: Date | null }[],
  documents: readonly D[],
): D[] {
  if (!submission.completedAt) return [];
  let last: { id: number; completedAt: Date | null } | undefined;
  for (const s of submitters)
    if (s.completedAt && (!last || s.completedAt.getTime() > last.completedAt!.getTime())) last = s;
  return documents.filter((d) => d.submitterId === last?.id);
}

/**
 * The file of a completion output (the audit log or the combined PDF: `audit_log_url`,
 * `combined_document_url`, reference §5.1) once the submission is completed, else null.
 * @param outputs the submission's completed documents of that kind
 */
export function completedOutputFile<F>(
  submission: { completedAt: Date | null },
  outputs: readonly { file: F }[],
): F | null {
  return submission.completedAt && outputs[0] ? outputs[0].file : null;
}

/**
 * `completion_error` (a Signet extension, docs/compatibility.md): why the completion pipeline
 * gave up (src/signing/complete-submission.ts writes it), or null.
 */
export function completionErrorOf(s: {
  completionError: string | null;
  completionFailedAt: Date | null;
}): { message: string; failedAt: Date } | null {
  return s.completionError === null
    ? null
    : { message: s.completionError, failedAt: s.completionFailedAt ?? new Date(0) };
}

const iso = (date: Date) => date.toISOString();
const isoOrNull = (date: Date | null) => (date === null ? null : date.toISOString());

/** Stored file uuids are UUIDs; other strings in values (text, dates) are not looked up. */
const UUID = /^[0-9a-f-]{36}$/i;

/** The stored files (uuid, filename, metadata) named by string values, in one query. */
async function storedFilesNamedBy(
  db: Db,
  valueSets: readonly unknown[],
): Promise<Map<string, StoredFileRef & { metadata: unknown }>> {
  const uuids = new Set<string>();
  for (const values of valueSets) {
    for (const value of Object.values((values ?? {}) as Record<string, unknown>)) {
      for (const item of Array.isArray(value) ? value : [value])
        if (typeof item === 'string' && UUID.test(item)) uuids.add(item);
    }
  }
  if (uuids.size === 0) return new Map();
  const rows = await db.storedFile.findMany({
    where: { uuid: { in: [...uuids] } },
    select: VALUE_FILE_SELECT,
  });
  return new Map(rows.map((r) => [r.uuid, r]));
}

const FILE_SELECT = { select: { uuid: true, filename: true } } satisfies Prisma.StoredFileDefaultArgs;

/** A submission's completed documents (signed documents and outputs), in position order. */
const COMPLETED_DOCUMENTS = {
  orderBy: [{ position: 'asc' }, { id: 'asc' }],
  select: { kind: true, name: true, submitterId: true, file: FILE_SELECT },
} satisfies Prisma.Submission$completedDocumentsArgs;

/** Columns of a submitter every shape shows (reference §5.2). */
const SUBMITTER_BASE_SELECT = {
  id: true,
  submissionId: true,
  uuid: true,
  email: true,
  slug: true,
  sentAt: true,
  openedAt: true,
  completedAt: true,
  declinedAt: true,
  createdAt: true,
  updatedAt: true,
  name: true,
  phone: true,
  externalId: true,
  metadata: true,
  preferences: true,
  roleUuid: true,
  language: true,
} satisfies Prisma.SubmitterSelect;

type SubmitterBaseRow = {
  id: number;
  submissionId: number;
  uuid: string;
  email: string | null;
  slug: string;
  sentAt: Date | null;
  openedAt: Date | null;
  completedAt: Date | null;
  declinedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  name: string | null;
  phone: string | null;
  externalId: string | null;
  metadata: unknown;
  preferences: unknown;
  roleUuid: string;
  language: string | null;
};

function submitterBase(s: SubmitterBaseRow, roles: ReturnType<typeof parseRoles>): SubmitterBaseData {
  return {
    id: s.id,
    submissionId: s.submissionId,
    uuid: s.uuid,
    email: s.email,
    slug: s.slug,
    sentAt: isoOrNull(s.sentAt),
    openedAt: isoOrNull(s.openedAt),
    completedAt: isoOrNull(s.completedAt),
    declinedAt: isoOrNull(s.declinedAt),
    createdAt: iso(s.createdAt),
    updatedAt: iso(s.updatedAt),
    name: s.name,
    phone: s.phone,
    externalId: s.externalId,
    metadata: s.metadata,
    status: submitterStatus(s),
    preferences: s.preferences,
    role: roleName(roles, s.roleUuid),
    language: s.language,
  };
}

/** Columns of a submission every shape shows, with its template and creator (reference §5.1). */
const SUBMISSION_BASE_SELECT = {
  id: true,
  accountId: true,
  name: true,
  slug: true,
  source: true,
  submittersOrder: true,
  expireAt: true,
  createdAt: true,
  updatedAt: true,
  archivedAt: true,
  variables: true,
  completedAt: true,
  language: true,
  templateSubmitters: true,
  template: { select: { id: true, name: true, externalId: true, createdAt: true, updatedAt: true, folderId: true } },
  createdByUser: { select: { id: true, email: true, firstName: true, lastName: true } },
  // The completion outputs; "document" ones only where a shape shows documents (see below).
  completedDocuments: { where: { kind: { in: ['audit_log', 'combined'] } }, ...COMPLETED_DOCUMENTS },
} satisfies Prisma.SubmissionSelect;

type TemplateRow = {
  id: number;
  name: string;
  externalId: string | null;
  createdAt: Date;
  updatedAt: Date;
  folderId: number | null;
};
type OutputRow = { kind: string; name: string; submitterId: number | null; file: StoredFileRef };

function submissionTemplate(t: TemplateRow, folderNames: Map<number, string>): SubmissionTemplateData {
  return {
    id: t.id,
    name: t.name,
    externalId: t.externalId,
    createdAt: iso(t.createdAt),
    updatedAt: iso(t.updatedAt),
    folderName: templateFolderName(t.folderId, (id) => folderNames.get(id) ?? ''),
  };
}

/** The urls of the audit log and the combined PDF (completedOutputFile), signed. */
function outputUrls(deps: ReadModelDeps, s: { completedAt: Date | null; completedDocuments: OutputRow[] }) {
  const url = (kind: string) => {
    const file = completedOutputFile(
      s,
      s.completedDocuments.filter((d) => d.kind === kind),
    );
    return file ? deps.files.url(file) : null;
  };
  return { auditLogUrl: url('audit_log'), combinedDocumentUrl: url('combined') };
}

/** One answer per requested id, in request order: null for an unknown id or another account's record. */
function inRequestOrder<R extends { id: number; accountId: number }, T>(
  request: ReadModelRequest,
  rows: readonly R[],
  build: (row: R) => T,
): (T | null)[] {
  const byId = new Map<number, T>();
  for (const row of rows) if (row.accountId === request.accountId) byId.set(row.id, build(row));
  return request.ids.map((id) => byId.get(id) ?? null);
}

/**
 * GET /submissions list items (SubmissionListData: submitters without values or documents) of
 * the submissions `request.ids`, in one Prisma query plus one per level of folder nesting.
 * @param request.accountId the account whose submissions these are
 * @param request.ids submission ids, any order, may repeat
 * @returns one item per id, in the same order; null for an unknown id or another account's
 *   submission. `status` is computed as of now (submissionStatus).
 */
export async function loadSubmissionListReadModels(
  deps: ReadModelDeps,
  request: ReadModelRequest,
): Promise<(SubmissionListData | null)[]> {
  if (request.ids.length === 0) return [];
  const rows = await deps.db.submission.findMany({
    where: { id: { in: [...new Set(request.ids)] }, accountId: request.accountId },
    select: {
      ...SUBMISSION_BASE_SELECT,
      submitters: { orderBy: { id: 'asc' }, select: SUBMITTER_BASE_SELECT },
    },
  });
  const folderNames = await loadFolderNames(
    deps.db,
    rows.map((r) => r.template.folderId),
  );
  const now = new Date();
  return inRequestOrder(request, rows, (s) => {
    const roles = parseRoles(s.templateSubmitters);
    return {
      ...submissionBase(deps, s, folderNames, now),
      submitters: s.submitters.map((x) => submitterBase(x, roles)),
    };
  });
}

type SubmissionBaseRow = {
  id: number;
  name: string | null;
  slug: string;
  source: string;
  submittersOrder: string;
  expireAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  archivedAt: Date | null;
  variables: unknown;
  completedAt: Date | null;
  language: string | null;
  template: TemplateRow;
  createdByUser: { id: number; email: string; firstName: string | null; lastName: string | null } | null;
  completedDocuments: OutputRow[];
  submitters: { declinedAt: Date | null }[];
};

function submissionBase(
  deps: ReadModelDeps,
  s: SubmissionBaseRow,
  folderNames: Map<number, string>,
  now: Date,
): Omit<SubmissionListData, 'submitters'> {
  return {
    id: s.id,
    name: s.name,
    slug: s.slug,
    source: s.source,
    submittersOrder: s.submittersOrder,
    expireAt: isoOrNull(s.expireAt),
    createdAt: iso(s.createdAt),
    updatedAt: iso(s.updatedAt),
    archivedAt: isoOrNull(s.archivedAt),
    variables: s.variables,
    status: submissionStatus(s, s.submitters, now),
    completedAt: isoOrNull(s.completedAt),
    ...outputUrls(deps, s),
    language: s.language,
    template: submissionTemplate(s.template, folderNames),
    createdByUser: s.createdByUser,
  };
}

/**
 * GET /submissions/{id} read models (SubmissionGetData: submitters with values and documents,
 * events, documents, completion error) of the submissions `request.ids`, in one Prisma query,
 * one for the stored files values name, and one per level of folder nesting.
 * @returns one per id, in the same order; null for an unknown id or another account's submission
 */
export async function loadSubmissionGetReadModels(
  deps: ReadModelDeps,
  request: ReadModelRequest,
): Promise<(SubmissionGetData | null)[]> {
  if (request.ids.length === 0) return [];
  const rows = await deps.db.submission.findMany({
    where: { id: { in: [...new Set(request.ids)] }, accountId: request.accountId },
    select: {
      ...SUBMISSION_BASE_SELECT,
      completedDocuments: COMPLETED_DOCUMENTS,
      templateFields: true,
      completionError: true,
      completionFailedAt: true,
      submitters: { orderBy: { id: 'asc' }, select: { ...SUBMITTER_BASE_SELECT, values: true } },
      events: {
        orderBy: [...EVENT_ORDER],
        select: { id: true, submitterId: true, eventType: true, eventTimestamp: true, data: true },
      },
    },
  });
  const [folderNames, files] = await Promise.all([
    loadFolderNames(
      deps.db,
      rows.map((r) => r.template.folderId),
    ),
    storedFilesNamedBy(
      deps.db,
      rows.flatMap((r) => r.submitters.map((x) => x.values)),
    ),
  ]);
  const fileOf = (uuid: string) => {
    const file = files.get(uuid);
    return file ? { url: deps.files.url(file), typedText: typedTextOf(file.metadata) } : null;
  };
  const link = (d: OutputRow) => ({ name: d.name, url: deps.files.url(d.file) });
  const now = new Date();
  return inRequestOrder(request, rows, (s) => {
    const roles = parseRoles(s.templateSubmitters);
    const fields = parseFields(s.templateFields);
    const documents = s.completedDocuments.filter((d) => d.kind === 'document');
    const failure = completionErrorOf(s);
    return {
      ...submissionBase(deps, s, folderNames, now),
      submitters: s.submitters.map((x) => ({
        ...submitterBase(x, roles),
        values: buildValues(
          fields,
          { roleUuid: x.roleUuid, values: (x.values ?? {}) as Record<string, unknown>, completedAt: x.completedAt },
          fileOf,
        ),
        documents: documents.filter((d) => d.submitterId === x.id).map(link),
      })),
      events: s.events.map((e) => ({
        id: e.id,
        submitterId: e.submitterId,
        eventType: e.eventType,
        eventTimestamp: iso(e.eventTimestamp),
        data: e.data,
      })),
      documents: submissionDocuments(s, s.submitters, documents).map(link),
      completionError: failure ? { message: failure.message, failedAt: iso(failure.failedAt) } : null,
    };
  });
}

/**
 * One submission of the account as GET /submissions/{id} shows it (loadSubmissionGetReadModels).
 * @throws AppError NOT_FOUND ("Submission <id> not found") or FORBIDDEN for another account's
 *   (findSubmissionForAccount, the one tenant check; asked only when the load found nothing, or
 *   first for a key limited to folders, `options.folders`: FORBIDDEN outside them)
 */
export async function readSubmissionForAccount(
  deps: ReadModelDeps,
  options: { id: number; accountId: number; folders?: KeyFolders | null | undefined },
): Promise<SubmissionGetData> {
  if (options.folders) await findSubmissionForAccount(deps.db, options);
  const [submission] = await loadSubmissionGetReadModels(deps, { accountId: options.accountId, ids: [options.id] });
  if (submission) return submission;
  await findSubmissionForAccount(deps.db, options);
  throw new AppError('NOT_FOUND', `Submission ${options.id} not found`);
}

/**
 * The form.* webhook read models (FormSubmitterData, src/docuseal-shapes/webhook-data.ts) of the
 * submitters `request.ids`: the submitter with values and documents, and its submission's id,
 * slug, status, output urls, variables, creation time and template. One Prisma query, one for
 * stored files, one per level of folder nesting.
 * @returns one per id, in the same order; null for an unknown id or another account's submitter
 */
export async function loadFormSubmitterReadModels(
  deps: ReadModelDeps,
  request: ReadModelRequest,
): Promise<(FormSubmitterData | null)[]> {
  if (request.ids.length === 0) return [];
  const rows = await deps.db.submitter.findMany({
    where: { id: { in: [...new Set(request.ids)] }, accountId: request.accountId },
    select: {
      ...SUBMITTER_BASE_SELECT,
      accountId: true,
      values: true,
      completedDocuments: {
        where: { kind: 'document' },
        orderBy: [{ position: 'asc' }, { id: 'asc' }],
        select: { name: true, file: FILE_SELECT },
      },
      submission: {
        select: {
          id: true,
          slug: true,
          variables: true,
          createdAt: true,
          completedAt: true,
          expireAt: true,
          templateSubmitters: true,
          templateFields: true,
          template: SUBMISSION_BASE_SELECT.template,
          completedDocuments: SUBMISSION_BASE_SELECT.completedDocuments,
          submitters: { select: { declinedAt: true } },
        },
      },
    },
  });
  const [folderNames, files] = await Promise.all([
    loadFolderNames(
      deps.db,
      rows.map((r) => r.submission.template.folderId),
    ),
    storedFilesNamedBy(
      deps.db,
      rows.map((r) => r.values),
    ),
  ]);
  const fileOf = (uuid: string) => {
    const file = files.get(uuid);
    return file ? { url: deps.files.url(file), typedText: typedTextOf(file.metadata) } : null;
  };
  const now = new Date();
  return inRequestOrder(request, rows, (x) => {
    const submission = x.submission;
    return {
      ...submitterBase(x, parseRoles(submission.templateSubmitters)),
      values: buildValues(
        parseFields(submission.templateFields),
        { roleUuid: x.roleUuid, values: (x.values ?? {}) as Record<string, unknown>, completedAt: x.completedAt },
        fileOf,
      ),
      documents: x.completedDocuments.map((d) => ({ name: d.name, url: deps.files.url(d.file) })),
      submission: {
        id: submission.id,
        slug: submission.slug,
        status: submissionStatus(submission, submission.submitters, now),
        ...outputUrls(deps, submission),
        variables: submission.variables,
        createdAt: iso(submission.createdAt),
        template: submissionTemplate(submission.template, folderNames),
      },
    };
  });
}

/**
 * What `include=fields` adds (SubmissionFieldsData, reference §5.1, §5.2) to the submissions
 * `request.ids`: each one's copy of the template's fields, and each submitter's own fields with
 * their values (buildFieldValues). One Prisma query and one for the stored files values name.
 * @returns one per id, in the same order; null for an unknown id or another account's submission
 */
export async function loadSubmissionFieldsReadModels(
  deps: ReadModelDeps,
  request: ReadModelRequest,
): Promise<(SubmissionFieldsData | null)[]> {
  if (request.ids.length === 0) return [];
  const rows = await deps.db.submission.findMany({
    where: { id: { in: [...new Set(request.ids)] }, accountId: request.accountId },
    select: {
      id: true,
      accountId: true,
      templateFields: true,
      submitters: {
        orderBy: { id: 'asc' },
        select: { id: true, roleUuid: true, values: true, completedAt: true },
      },
    },
  });
  const files = await storedFilesNamedBy(
    deps.db,
    rows.flatMap((r) => r.submitters.map((x) => x.values)),
  );
  const fileOf = (uuid: string) => {
    const file = files.get(uuid);
    return file ? { url: deps.files.url(file), typedText: typedTextOf(file.metadata) } : null;
  };
  return inRequestOrder(request, rows, (s) => {
    const fields = parseFields(s.templateFields);
    return {
      id: s.id,
      fields: fields.map(templateFieldData),
      submitters: s.submitters.map((x) => ({
        id: x.id,
        fields: buildFieldValues(
          fields,
          { roleUuid: x.roleUuid, values: (x.values ?? {}) as Record<string, unknown>, completedAt: x.completedAt },
          fileOf,
        ),
      })),
    };
  });
}

/**
 * `{id, archivedAt}` of submissions (the submission.archived webhook's data, reference §5.6).
 * @returns one per id, in the same order; null for an unknown id or another account's submission
 */
export async function loadSubmissionArchivedAt(
  deps: Pick<ReadModelDeps, 'db'>,
  request: ReadModelRequest,
): Promise<({ id: number; archivedAt: string | null } | null)[]> {
  if (request.ids.length === 0) return [];
  const rows = await deps.db.submission.findMany({
    where: { id: { in: [...new Set(request.ids)] }, accountId: request.accountId },
    select: { id: true, accountId: true, archivedAt: true },
  });
  return inRequestOrder(request, rows, (s) => ({ id: s.id, archivedAt: isoOrNull(s.archivedAt) }));
}
