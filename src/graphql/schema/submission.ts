/**
 * Submissions and submitters over GraphQL: the types, and the `createSubmissions` mutation (the
 * request is carried out by createSubmissionsForRequest, which the DocuSeal create routes call
 * directly: docs/architecture.md).
 */
import { typedTextOf } from '../../documents/typed-signature.ts';
import { signerLanguage } from '../../i18n/signer-language.ts';
import { createSubmissionsForRequest } from '../../submissions/create-submissions-request.ts';
import {
  buildFieldValues,
  buildValues,
  roleName,
  submissionStatus,
  submitterStatus,
} from '../../submissions/status.ts';
import {
  CreateSubmissionsRequest,
  FieldConfig,
  MessageInput,
  SubmissionGroupInput,
  SubmitterInput,
} from '../../submissions/submitter-input.ts';
import { parseFields, parseRoles } from '../../templates/fields.ts';
import { builder } from '../builder.ts';
import { type GraphQLContext, requireActor } from '../context.ts';
import { FieldRef } from './template.ts';
import { fromGraphQLInput, zodInputType } from '../zod-input.ts';
import { effectiveReminders } from '../../notifications/reminder-settings.ts';
// Registered first: the settings input is part of CreateSubmissionsInput.
import { ReminderSettingsRef } from './reminders.ts';

/** The columns a submitter's `values` and `fields` are made of. */
const VALUES_SELECT = {
  roleUuid: true,
  values: true,
  completedAt: true,
  submission: { select: { templateFields: true } },
} as const;

/**
 * The arguments of buildValues / buildFieldValues for a submitter: the submission's fields, the
 * party's values, and the signed URL (and typed text) of each stored file they name (one DataLoader batch).
 */
async function valuesInput(
  s: {
    roleUuid: string;
    values: unknown;
    completedAt: Date | null;
    submission: { templateFields: unknown };
  },
  ctx: GraphQLContext,
): Promise<Parameters<typeof buildValues>> {
  const values = (s.values ?? {}) as Record<string, unknown>;
  const uuids = Object.values(values)
    .flatMap((v) => (Array.isArray(v) ? v : [v]))
    .filter((v): v is string => typeof v === 'string');
  const files = await ctx.loaders.storedFileByUuid.loadMany(uuids);
  const byUuid = new Map(uuids.map((u, i) => [u, files[i]]));
  return [
    parseFields(s.submission.templateFields),
    { roleUuid: s.roleUuid, values, completedAt: s.completedAt },
    (uuid) => {
      const file = byUuid.get(uuid);
      return file && !(file instanceof Error)
        ? { url: ctx.files.url(file), typedText: typedTextOf(file.metadata) }
        : null;
    },
  ];
}

const SubmitterFieldValueRef = builder
  .objectRef<{ name: string; uuid: string; value: unknown; readonly: boolean }>('SubmitterFieldValue')
  .implement({
    description: "One of a party's fields and its value (DocuSeal's `include=fields` entry).",
    fields: (t) => ({
      name: t.exposeString('name', { description: 'The field name, else "<Type> Field <n>".' }),
      uuid: t.exposeString('uuid'),
      value: t.field({
        type: 'JSON',
        nullable: true,
        description: 'As in `values`: attachments as signed URLs; null when unfilled.',
        resolve: (f) => (f.value === undefined ? null : f.value),
      }),
      readonly: t.exposeBoolean('readonly'),
    }),
  });

export const SubmitterRef = builder.prismaObject('Submitter', {
  description: 'A signer of a submission. `slug` is the capability in its signing link.',
  // Only the columns the query asks for (values and preferences are JSON worth not reading for nothing).
  select: { id: true },
  fields: (t) => ({
    id: t.exposeInt('id'),
    uuid: t.exposeString('uuid'),
    slug: t.exposeString('slug'),
    submissionId: t.exposeInt('submissionId'),
    email: t.exposeString('email', { nullable: true }),
    name: t.exposeString('name', { nullable: true }),
    phone: t.exposeString('phone', { nullable: true }),
    externalId: t.exposeString('externalId', { nullable: true }),
    metadata: t.field({ type: 'JSON', select: { metadata: true }, resolve: (s) => s.metadata }),
    preferences: t.field({ type: 'JSON', select: { preferences: true }, resolve: (s) => s.preferences }),
    roleUuid: t.exposeString('roleUuid'),
    language: t.exposeString('language', {
      nullable: true,
      description:
        "The party's own language as set through the API (a code: de, ar, …; a Signet extension); null when none. " +
        'What it is written to in: `signerLanguage`.',
    }),
    signerLanguage: t.string({
      description:
        'The language its emails, SMS, audit log and dates are written in: its own `language`, else its ' +
        "submission's, its `metadata.lang`, its account's default language, else English " +
        '(src/i18n/signer-language.ts; on the signing page the browser’s language comes before English).',
      select: {
        language: true,
        metadata: true,
        submission: { select: { language: true, account: { select: { preferences: true } } } },
      },
      resolve: (s) => signerLanguage({ submitter: s, submission: s.submission, account: s.submission.account }),
    }),
    role: t.string({
      nullable: true,
      select: { roleUuid: true, submission: { select: { templateSubmitters: true } } },
      resolve: (s) => roleName(parseRoles(s.submission.templateSubmitters), s.roleUuid),
    }),
    status: t.string({
      description: 'awaiting, sent, opened, completed or declined.',
      select: { declinedAt: true, completedAt: true, openedAt: true, sentAt: true },
      resolve: (s) => submitterStatus(s),
    }),
    values: t.field({
      type: 'JSON',
      description:
        'DocuSeal values: [{field, value}] (attachments as signed URLs; a typed signature twice: image URL, text).',
      select: VALUES_SELECT,
      resolve: async (s, _args, ctx) => buildValues(...(await valuesInput(s, ctx))),
    }),
    fields: t.field({
      type: [SubmitterFieldValueRef],
      description:
        "This party's fields with their values, as DocuSeal's `include=fields` lists them: the fields `values` " +
        'lists (chosen and named the same way), with uuid and read-only flag.',
      select: VALUES_SELECT,
      resolve: async (s, _args, ctx) => buildFieldValues(...(await valuesInput(s, ctx))),
    }),
    embedSrc: t.string({
      description: 'The signing form address.',
      select: { slug: true },
      resolve: (s, _args, ctx) => `${ctx.config.appUrl}/s/${s.slug}`,
    }),
    sentAt: t.expose('sentAt', { type: 'DateTime', nullable: true }),
    openedAt: t.expose('openedAt', { type: 'DateTime', nullable: true }),
    completedAt: t.expose('completedAt', { type: 'DateTime', nullable: true }),
    declinedAt: t.expose('declinedAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

/** An account's stored default reminder settings (`preferences.reminders`). */
const accountDefault = (account: { preferences: unknown }) =>
  (account.preferences as { reminders?: unknown } | null)?.reminders;

export const SubmissionRef = builder.prismaObject('Submission', {
  description: 'One signing request made from a template, with its own copy of the roles, fields and documents.',
  // Only the columns the query asks for: the copies of the template's fields and documents are large.
  select: { id: true },
  fields: (t) => ({
    id: t.exposeInt('id'),
    slug: t.exposeString('slug'),
    name: t.exposeString('name', { nullable: true }),
    source: t.exposeString('source'),
    language: t.exposeString('language', {
      nullable: true,
      description:
        'The language of its parties without one of their own (a code: de, ar, …; a Signet extension); null when none.',
    }),
    submittersOrder: t.exposeString('submittersOrder'),
    status: t.string({
      description: 'pending, completed, declined or expired.',
      select: { completedAt: true, expireAt: true, submitters: { select: { declinedAt: true } } },
      resolve: (s) => submissionStatus(s, s.submitters),
    }),
    variables: t.field({ type: 'JSON', select: { variables: true }, resolve: (s) => s.variables }),
    expireAt: t.expose('expireAt', { type: 'DateTime', nullable: true }),
    completedAt: t.expose('completedAt', { type: 'DateTime', nullable: true }),
    archivedAt: t.expose('archivedAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    template: t.relation('template'),
    createdByUser: t.relation('createdByUser', { nullable: true }),
    submitters: t.relation('submitters', { query: { orderBy: { id: 'asc' } } }),
    reminders: t.field({
      type: ReminderSettingsRef,
      nullable: true,
      description:
        "The reminder settings that apply (docs/reminders.md): the submission's own, else its account's default; " +
        'null when none.',
      select: { preferences: true, account: { select: { preferences: true } } },
      resolve: (s) =>
        effectiveReminders((s.preferences as { reminders?: unknown } | null)?.reminders, accountDefault(s.account)),
    }),
    fields: t.field({
      type: [FieldRef],
      description:
        "The submission's own copy of the template's fields (DocuSeal's `include=fields`): later template edits " +
        'do not change it.',
      select: { templateFields: true },
      resolve: (s) => parseFields(s.templateFields),
    }),
  }),
});

// The create request's input types, derived from its one definition (src/submissions/submitter-input.ts).
zodInputType('SubmitterFieldInput', FieldConfig);
zodInputType('EmailMessageInput', MessageInput);
zodInputType('SubmitterInput', SubmitterInput);
zodInputType('SubmissionGroupInput', SubmissionGroupInput);
const CreateSubmissionsInputRef = zodInputType('CreateSubmissionsInput', CreateSubmissionsRequest);

export const CreateSubmissionsPayload = builder
  .objectRef<{ submissionIds: number[] }>('CreateSubmissionsPayload')
  .implement({
    fields: (t) => ({
      submissionIds: t.exposeIntList('submissionIds', {
        description: 'The ids of the submissions created, in request order.',
      }),
      submissions: t.prismaField({
        type: [SubmissionRef],
        resolve: (query, payload, _args, ctx) =>
          ctx.db.submission.findMany({
            ...query,
            where: { id: { in: payload.submissionIds } },
            orderBy: { id: 'asc' },
          }),
      }),
      submitters: t.prismaField({
        type: [SubmitterRef],
        description: 'Every submitter created, in request order.',
        resolve: (query, payload, _args, ctx) =>
          ctx.db.submitter.findMany({
            ...query,
            where: { submissionId: { in: payload.submissionIds } },
            orderBy: { id: 'asc' },
          }),
      }),
    }),
  });

builder.mutationField('createSubmissions', (t) =>
  t.field({
    type: CreateSubmissionsPayload,
    description:
      'Creates a submission from a template and sends the requests (in order unless `order: "random"`). With ' +
      '`emailsMode`, one submission per submitter.',
    args: { input: t.arg({ type: CreateSubmissionsInputRef, required: true }) },
    resolve: async (_root, { input: raw }, ctx) => {
      // The requests, expiry, completions and submission.created are written with the submissions.
      const created = await createSubmissionsForRequest(
        ctx,
        requireActor(ctx),
        fromGraphQLInput(CreateSubmissionsRequest, raw),
      );
      return { submissionIds: created.map((c) => c.id) };
    },
  }),
);
