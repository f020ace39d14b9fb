/**
 * Reading and changing submissions and submitters over GraphQL: lists with DocuSeal's filters
 * and cursor pagination, single records, events and documents, and the update/archive/delete mutations.
 */
import { z } from 'zod';
import { parseInput } from '../../accounts/api-keys.ts';
import type { Db } from '../../db/client.ts';
import { MAX_LENGTH, text } from '../../limits.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import { submittersInFolders } from '../../accounts/key-scopes.ts';
import { findSubmissionForAccount, findSubmitterForAccount } from '../../submissions/find.ts';
import { findTemplateForAccount } from '../../templates/find-template.ts';
import { submissionPageIds } from '../../db/queries/submission-page.ts';
import {
  archiveSubmission,
  deleteSubmission,
  updateSubmission,
  updateSubmitter,
} from '../../submissions/submission-actions.ts';
import { completedOutputFile, EVENT_ORDER, submissionDocuments } from '../../submissions/read-models.ts';
import { SUBMISSION_STATUS_FILTERS, SUBMISSION_STATUSES } from '../../submissions/status.ts';
import { UpdateSubmitterRequest } from '../../submissions/submitter-input.ts';
import { submissionChanges, UpdateSubmissionRequest } from '../../submissions/update-submission-input.ts';
import { idCursorWhere, PageArgs, pageSize, paginationOf } from '../../util/pagination.ts';
import { builder } from '../builder.ts';
import { type GraphQLContext, requireActor, requireViewer } from '../context.ts';
import { COMBINED_DOCUMENTS_PER_REQUEST } from '../../limits.ts';
import { fromGraphQLInput, zodInputType } from '../zod-input.ts';
import { SubmissionRef, SubmitterRef } from './submission.ts';
import { PaginationRef, withoutNulls } from './template.ts';

export const SubmissionEventRef = builder.prismaObject('SubmissionEvent', {
  description: 'An audit event: send_email, view_form, start_form, complete_form, decline_form, api_complete_form, …',
  fields: (t) => ({
    id: t.exposeInt('id'),
    submitterId: t.exposeInt('submitterId', { nullable: true }),
    eventType: t.exposeString('eventType'),
    eventTimestamp: t.expose('eventTimestamp', { type: 'DateTime' }),
    data: t.field({ type: 'JSON', resolve: (e) => e.data }),
  }),
});

export const DocumentLinkRef = builder.objectRef<{ name: string; url: string }>('DocumentLink').implement({
  fields: (t) => ({ name: t.exposeString('name'), url: t.exposeString('url') }),
});

type DocumentRow = { name: string; submitterId: number | null; file: { uuid: string; filename: string } };
const documentsSelect = {
  completedDocuments: {
    where: { kind: 'document' },
    orderBy: { position: 'asc' },
    select: { name: true, submitterId: true, file: { select: { uuid: true, filename: true } } },
  },
} as const;

builder.prismaObjectFields(SubmissionRef, (t) => ({
  events: t.relation('events', { query: { orderBy: EVENT_ORDER } }),
  documents: t.field({
    type: [DocumentLinkRef],
    description: 'The signed documents once completed (those of the last submitter to complete); [] before.',
    select: { completedAt: true, submitters: { select: { id: true, completedAt: true } }, ...documentsSelect },
    resolve: (s, _args, ctx) =>
      submissionDocuments(s, s.submitters, s.completedDocuments as DocumentRow[]).map((d) => ({
        name: d.name,
        url: ctx.files.url(d.file),
      })),
  }),
  auditLogUrl: t.string({
    nullable: true,
    select: {
      completedAt: true,
      completedDocuments: {
        where: { kind: 'audit_log' },
        select: { file: { select: { uuid: true, filename: true } } },
      },
    },
    resolve: (s, _args, ctx) => {
      const file = completedOutputFile(s, s.completedDocuments);
      return file ? ctx.files.url(file) : null;
    },
  }),
  combinedDocumentUrl: t.string({
    nullable: true,
    description:
      'The combined PDF (final documents, then the audit log, signed) once completed: made by the completion ' +
      "when the account's `combinePdfResult` is on; with `ensure: true`, made now if missing (DocuSeal's " +
      `\`include=combined_document_url\`; at most ${COMBINED_DOCUMENTS_PER_REQUEST} made per request, ` +
      'the others null).',
    args: { ensure: t.arg.boolean({ defaultValue: false }) },
    select: {
      id: true,
      accountId: true,
      completedAt: true,
      completedDocuments: { where: { kind: 'combined' }, select: { file: { select: { uuid: true, filename: true } } } },
    },
    resolve: async (s, { ensure }, ctx) => {
      let file = completedOutputFile(s, s.completedDocuments);
      if (!file && ensure && s.completedAt && takeCombinedBudget(ctx)) {
        const { ensureCombinedDocument } = await import('../../signing/submission-outputs.ts');
        file = (await ensureCombinedDocument(outputDeps(ctx), { accountId: s.accountId, id: s.id }))?.file ?? null;
      }
      return file ? ctx.files.url(file) : null;
    },
  }),
}));

/** What the documents made on request need from the context (src/signing/submission-outputs.ts). */
const outputDeps = (ctx: GraphQLContext) => ({
  db: ctx.db,
  storage: ctx.storage,
  config: ctx.config,
  effects: ctx.effects,
});

/** Combined PDFs made so far by each request (COMBINED_DOCUMENTS_PER_REQUEST). */
const combinedMade = new WeakMap<object, number>();

/** Whether this request may make one more combined PDF (and counts it). */
function takeCombinedBudget(ctx: GraphQLContext): boolean {
  const made = combinedMade.get(ctx) ?? 0;
  if (made >= COMBINED_DOCUMENTS_PER_REQUEST) return false;
  combinedMade.set(ctx, made + 1);
  return true;
}

/**
 * The combined PDFs of the completed submissions among `ids` that have none, made now (DocuSeal's
 * `include=combined_document_url` on GET /submissions), at most COMBINED_DOCUMENTS_PER_REQUEST per
 * request (one at a time; the others stay without one).
 */
async function ensureCombinedDocuments(ctx: GraphQLContext, accountId: number, ids: number[]): Promise<void> {
  const missing = await ctx.db.submission.findMany({
    where: {
      id: { in: ids },
      accountId,
      completedAt: { not: null },
      completedDocuments: { none: { kind: 'combined' } },
    },
    orderBy: { id: 'asc' },
    select: { id: true },
  });
  if (missing.length === 0) return;
  const { ensureCombinedDocument } = await import('../../signing/submission-outputs.ts');
  for (const { id } of missing) {
    if (!takeCombinedBudget(ctx)) return;
    await ensureCombinedDocument(outputDeps(ctx), { accountId, id });
  }
}

const SubmissionDocumentsRef = builder
  .objectRef<{ id: number; documents: { name: string; url: string }[] }>('SubmissionDocuments')
  .implement({
    description: 'A submission id and its documents (GET /submissions/{id}/documents).',
    fields: (t) => ({
      id: t.exposeInt('id'),
      documents: t.field({ type: [DocumentLinkRef], resolve: (d) => d.documents }),
    }),
  });

builder.queryField('submissionDocuments', (t) =>
  t.field({
    type: SubmissionDocumentsRef,
    description:
      "The documents of a submission as DocuSeal's GET /submissions/{id}/documents gives them: once completed, " +
      'the signed documents of the last party to complete; before, the documents as filled so far (every ' +
      "party's values drawn on the originals, not signed; made on request and kept per version of the values). " +
      '`merge: true` (with more than one document): one PDF of them all (signed once completed).',
    args: { id: t.arg.int({ required: true }), merge: t.arg.boolean({ defaultValue: false }) },
    resolve: async (_root, { id, merge }, ctx) => {
      const { account, folders } = requireViewer(ctx);
      await findSubmissionForAccount(ctx.db, { id, accountId: account.id, folders });
      const { submissionDocumentsAsFilled } = await import('../../signing/submission-outputs.ts');
      const documents = await submissionDocumentsAsFilled(outputDeps(ctx), {
        accountId: account.id,
        id,
        merge: merge === true,
      });
      return { id, documents: documents.map((d) => ({ name: d.name, url: ctx.files.url(d.file) })) };
    },
  }),
);

builder.prismaObjectFields(SubmitterRef, (t) => ({
  events: t.relation('events', { query: { orderBy: EVENT_ORDER } }),
  documents: t.field({
    type: [DocumentLinkRef],
    description: 'The documents produced when this submitter completed; [] before.',
    select: documentsSelect,
    resolve: (s, _args, ctx) =>
      (s.completedDocuments as DocumentRow[]).map((d) => ({ name: d.name, url: ctx.files.url(d.file) })),
  }),
  submission: t.relation('submission'),
}));

/**
 * A page of a list: the ids on it. `nodes` is loaded by a
 * prismaField so that the nested selection (submitters, template, events …) becomes part of one
 * query instead of one per relation and record.
 */
interface ListPage {
  ids: number[];
}

const SubmissionListRef = builder.objectRef<ListPage>('SubmissionList').implement({
  fields: (t) => ({
    nodes: t.prismaField({
      type: [SubmissionRef],
      resolve: (query, page, _args, ctx) =>
        ctx.db.submission.findMany({ ...query, where: { id: { in: page.ids } }, orderBy: { id: 'asc' } }),
    }),
    ids: t.field({
      type: ['Int'],
      description: 'The ids of the submissions on this page, ascending.',
      resolve: (page) => page.ids,
    }),
    pagination: t.field({ type: PaginationRef, resolve: (page) => paginationOf(page.ids.map((id) => ({ id }))) }),
  }),
});

const SubmitterListRef = builder.objectRef<ListPage>('SubmitterList').implement({
  fields: (t) => ({
    nodes: t.prismaField({
      type: [SubmitterRef],
      resolve: (query, page, _args, ctx) =>
        ctx.db.submitter.findMany({ ...query, where: { id: { in: page.ids } }, orderBy: { id: 'asc' } }),
    }),
    pagination: t.field({ type: PaginationRef, resolve: (page) => paginationOf(page.ids.map((id) => ({ id }))) }),
  }),
});

/** Filters: at most MAX_LENGTH.filter characters, a folder name MAX_LENGTH.folderName (src/limits.ts). */
const SubmissionsArgs = PageArgs.extend({
  templateId: z.number().int().optional(),
  q: text(MAX_LENGTH.filter).optional(),
  templateFolder: text(MAX_LENGTH.folderName).optional(),
  // The filters of src/submissions/status.ts (SUBMISSION_STATUS_FILTERS).
  status: z.enum(SUBMISSION_STATUSES, { error: `status must be one of ${SUBMISSION_STATUSES.join(', ')}` }).optional(),
  archived: z.boolean().optional(),
  slug: text(MAX_LENGTH.filter).optional(),
});

/** Submitters matching `q` on name, email or phone (case-insensitive substring). */
const submitterMatches = (q: string): Prisma.SubmitterWhereInput => ({
  OR: [
    { name: { contains: q, mode: 'insensitive' } },
    { email: { contains: q, mode: 'insensitive' } },
    { phone: { contains: q } },
  ],
});

async function folderIdsNamed(
  db: Db,
  loaders: import('../loaders.ts').Loaders,
  accountId: number,
  fullName: string,
): Promise<number[]> {
  const leaf = fullName.split(' / ').at(-1)?.trim() ?? '';
  const candidates = await db.folder.findMany({ where: { accountId, name: leaf }, select: { id: true } });
  const names = await loaders.folderName.loadMany(candidates.map((c) => c.id));
  return candidates.filter((_c, i) => names[i] === fullName.trim()).map((c) => c.id);
}

builder.queryField('submissions', (t) =>
  t.field({
    type: SubmissionListRef,
    description:
      "The account's submissions ascending by id. Archived ones are included unless `archived` is given " +
      '(true: archived only; false: active only), as DocuSeal.',
    args: {
      templateId: t.arg.int(),
      q: t.arg.string({ description: 'Substring of a submitter’s name, email or phone.' }),
      templateFolder: t.arg.string(),
      status: t.arg.string({ description: 'pending, completed, declined or expired.' }),
      archived: t.arg.boolean(),
      slug: t.arg.string(),
      limit: t.arg.int(),
      after: t.arg.int(),
      before: t.arg.int(),
      ensureCombinedDocuments: t.arg.boolean({
        description:
          "Make the page's missing combined PDFs now (DocuSeal's `include=combined_document_url`; at most " +
          `${COMBINED_DOCUMENTS_PER_REQUEST} per request).`,
      }),
    },
    resolve: async (_root, { ensureCombinedDocuments: ensure, ...raw }, ctx) => {
      const { account, folders } = requireViewer(ctx);
      const args = parseInput(SubmissionsArgs, withoutNulls(raw));
      // A filter id names a record like any other: another account's is FORBIDDEN, an unknown one
      // NOT_FOUND (docs/security.md).
      if (args.templateId !== undefined)
        await findTemplateForAccount(ctx.db, { id: args.templateId, accountId: account.id, folders });
      const named =
        args.templateFolder !== undefined
          ? await folderIdsNamed(ctx.db, ctx.loaders, account.id, args.templateFolder)
          : undefined;
      const ids = await submissionPageIds(ctx.db, {
        accountId: account.id,
        templateId: args.templateId,
        slug: args.slug,
        q: args.q || undefined,
        archived: args.archived,
        // A key limited to folders lists the submissions of templates in them only (src/accounts/key-scopes.ts).
        folderIds: folders ? (named ?? folders.ids).filter((id) => folders.ids.includes(id)) : named,
        facts: args.status ? SUBMISSION_STATUS_FILTERS[args.status] : undefined,
        after: args.after,
        before: args.before,
        limit: pageSize(args),
        now: new Date(),
      });
      if (ensure) await ensureCombinedDocuments(ctx, account.id, ids);
      return { ids };
    },
  }),
);

builder.queryField('submission', (t) =>
  t.prismaField({
    type: SubmissionRef,
    args: { id: t.arg.int({ required: true }) },
    resolve: async (query, _root, { id }, ctx) => {
      const { account, folders } = requireViewer(ctx);
      await findSubmissionForAccount(ctx.db, { id, accountId: account.id, folders });
      return ctx.db.submission.findUniqueOrThrow({ ...query, where: { id } });
    },
  }),
);

const SubmittersArgs = PageArgs.extend({
  submissionId: z.number().int().optional(),
  templateId: z.number().int().optional(),
  q: text(MAX_LENGTH.filter).optional(),
  externalId: text(MAX_LENGTH.filter).optional(),
  slug: text(MAX_LENGTH.filter).optional(),
  completedAfter: z.date().optional(),
  completedBefore: z.date().optional(),
});

builder.queryField('submitters', (t) =>
  t.field({
    type: SubmitterListRef,
    description: "The account's submitters ascending by id (those of archived submissions too).",
    args: {
      submissionId: t.arg.int(),
      templateId: t.arg.int(),
      q: t.arg.string(),
      externalId: t.arg.string(),
      slug: t.arg.string(),
      completedAfter: t.arg({ type: 'DateTime' }),
      completedBefore: t.arg({ type: 'DateTime' }),
      limit: t.arg.int(),
      after: t.arg.int(),
      before: t.arg.int(),
    },
    resolve: async (_root, raw, ctx) => {
      const { account, folders } = requireViewer(ctx);
      const args = parseInput(SubmittersArgs, withoutNulls(raw));
      // Filter ids are checked as in `submissions`.
      if (args.submissionId !== undefined)
        await findSubmissionForAccount(ctx.db, { id: args.submissionId, accountId: account.id, folders });
      if (args.templateId !== undefined)
        await findTemplateForAccount(ctx.db, { id: args.templateId, accountId: account.id, folders });
      // A key limited to folders lists the submitters of templates in them only.
      const and: Prisma.SubmitterWhereInput[] = [{ accountId: account.id }, submittersInFolders(folders)];
      if (args.submissionId !== undefined) and.push({ submissionId: args.submissionId });
      if (args.templateId !== undefined) and.push({ submission: { templateId: args.templateId } });
      if (args.q) and.push(submitterMatches(args.q));
      if (args.externalId !== undefined) and.push({ externalId: args.externalId });
      if (args.slug !== undefined) and.push({ slug: args.slug });
      if (args.completedAfter) and.push({ completedAt: { gte: args.completedAfter } });
      if (args.completedBefore) and.push({ completedAt: { lte: args.completedBefore } });
      const cursor = idCursorWhere(args);
      if (cursor) and.push({ id: cursor });
      const where = { AND: and };
      const rows = await ctx.db.submitter.findMany({
        where,
        orderBy: { id: 'asc' },
        take: pageSize(args),
        select: { id: true },
      });
      return { ids: rows.map((r) => r.id) };
    },
  }),
);

builder.queryField('submitter', (t) =>
  t.prismaField({
    type: SubmitterRef,
    args: { id: t.arg.int({ required: true }) },
    resolve: async (query, _root, { id }, ctx) => {
      const { account, folders } = requireViewer(ctx);
      await findSubmitterForAccount(ctx.db, { id, accountId: account.id, folders });
      return ctx.db.submitter.findUniqueOrThrow({ ...query, where: { id } });
    },
  }),
);

const SubmissionPayload = builder.objectRef<{ id: number }>('SubmissionPayload').implement({
  fields: (t) => ({
    submission: t.prismaField({
      type: SubmissionRef,
      resolve: (query, p, _a, ctx) => ctx.db.submission.findUniqueOrThrow({ ...query, where: { id: p.id } }),
    }),
  }),
});

// Derived from its one definition (src/submissions/update-submission-input.ts).
const UpdateSubmissionInput = zodInputType('UpdateSubmissionInput', UpdateSubmissionRequest);

builder.mutationField('updateSubmission', (t) =>
  t.field({
    type: SubmissionPayload,
    args: { input: t.arg({ type: UpdateSubmissionInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const actor = requireActor(ctx);
      const { id, ...request } = parseInput(UpdateSubmissionRequest, fromGraphQLInput(UpdateSubmissionRequest, input));
      await updateSubmission(ctx, actor, id, submissionChanges(request));
      return { id };
    },
  }),
);

builder.mutationField('archiveSubmission', (t) =>
  t.field({
    type: SubmissionPayload,
    args: {
      input: t.arg({
        type: builder.inputType('ArchiveSubmissionInput', { fields: (f) => ({ id: f.int({ required: true }) }) }),
        required: true,
      }),
    },
    resolve: async (_root, { input }, ctx) => {
      await archiveSubmission(ctx, requireActor(ctx), input.id);
      return { id: input.id };
    },
  }),
);

const DeleteSubmissionPayload = builder
  .objectRef<{ id: number; archivedAt: Date | null }>('DeleteSubmissionPayload')
  .implement({
    description: 'The deleted submission as it was: its id and archive time (null when it was not archived).',
    fields: (t) => ({
      id: t.exposeInt('id'),
      archivedAt: t.expose('archivedAt', { type: 'DateTime', nullable: true }),
    }),
  });

builder.mutationField('deleteSubmission', (t) =>
  t.field({
    type: DeleteSubmissionPayload,
    description:
      'Deletes a submission permanently, with its submitters, events, completed documents and messages, the ' +
      'webhook deliveries of its events, and the stored files nothing else uses. No event is raised. REST: ' +
      'DELETE /submissions/{id}?permanently=true.',
    args: {
      input: t.arg({
        type: builder.inputType('DeleteSubmissionInput', { fields: (f) => ({ id: f.int({ required: true }) }) }),
        required: true,
      }),
    },
    resolve: async (_root, { input }, ctx) => {
      return deleteSubmission(ctx, requireActor(ctx), input.id);
    },
  }),
);

const SubmitterPayload = builder.objectRef<{ id: number }>('SubmitterPayload').implement({
  fields: (t) => ({
    submitter: t.prismaField({
      type: SubmitterRef,
      resolve: (query, p, _a, ctx) => ctx.db.submitter.findUniqueOrThrow({ ...query, where: { id: p.id } }),
    }),
  }),
});

// Derived from its one definition (src/submissions/submitter-input.ts).
const UpdateSubmitterInputRef = zodInputType('UpdateSubmitterInput', UpdateSubmitterRequest);

builder.mutationField('updateSubmitter', (t) =>
  t.field({
    type: SubmitterPayload,
    args: { input: t.arg({ type: UpdateSubmitterInputRef, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const actor = requireActor(ctx);
      const { id, ...changes } = fromGraphQLInput(UpdateSubmitterRequest, input);
      await updateSubmitter(
        ctx,
        actor,
        id,
        changes,
        {
          allowPrivate: ctx.config.downloadAllowPrivate,
          maxBytes: ctx.config.downloadMaxBytes,
          timeoutMs: ctx.config.downloadTimeout,
        },
        ctx.config.images,
      );
      return { id };
    },
  }),
);
