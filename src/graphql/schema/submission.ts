/**
 * Submissions and submitters over GraphQL: the types, and the `createSubmissions` mutation that
 * the DocuSeal create routes (POST /submissions, /submissions/init, /templates/{id}/submissions,
 * /submissions/emails) also use.
 */
import { z } from 'zod';
import { parseInput } from '../../accounts/api-keys.ts';
import { AppError } from '../../errors.ts';
import { createSubmissions, recordCreated, type SubmissionRequest } from '../../submissions/create-submissions.ts';
import { buildValues, roleName, submissionStatus, submitterStatus } from '../../submissions/status.ts';
import { checkItems, MAX_ITEMS } from '../../limits.ts';
import { SubmissionSettingsInput, SubmitterInput } from '../../submissions/submitter-input.ts';
import { parseFields, parseRoles } from '../../templates/fields.ts';
import { builder } from '../builder.ts';
import { requireViewer } from '../context.ts';
import { withoutNulls } from './template.ts';

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
      description: 'DocuSeal values: [{field, value}] (attachments as signed URLs).',
      select: { roleUuid: true, values: true, completedAt: true, submission: { select: { templateFields: true } } },
      resolve: async (s, _args, ctx) => {
        const values = (s.values ?? {}) as Record<string, unknown>;
        const uuids = Object.values(values)
          .flatMap((v) => (Array.isArray(v) ? v : [v]))
          .filter((v): v is string => typeof v === 'string');
        const files = await ctx.loaders.storedFileByUuid.loadMany(uuids);
        const byUuid = new Map(uuids.map((u, i) => [u, files[i]]));
        return buildValues(
          parseFields(s.submission.templateFields),
          { roleUuid: s.roleUuid, values, completedAt: s.completedAt },
          (uuid) => {
            const file = byUuid.get(uuid);
            return file && !(file instanceof Error) ? ctx.files.url(file) : null;
          },
        );
      },
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

export const SubmissionRef = builder.prismaObject('Submission', {
  description: 'One signing request made from a template, with its own copy of the roles, fields and documents.',
  // Only the columns the query asks for: the copies of the template's fields and documents are large.
  select: { id: true },
  fields: (t) => ({
    id: t.exposeInt('id'),
    slug: t.exposeString('slug'),
    name: t.exposeString('name', { nullable: true }),
    source: t.exposeString('source'),
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
  }),
});

const FieldConfigInput = builder.inputType('SubmitterFieldInput', {
  fields: (t) => ({
    name: t.string(),
    uuid: t.string(),
    defaultValue: t.field({ type: 'JSON' }),
    readonly: t.boolean(),
    required: t.boolean(),
    title: t.string(),
    description: t.string(),
    validationPattern: t.string(),
    invalidMessage: t.string(),
    preferences: t.field({ type: 'JSON' }),
  }),
});

const MessageInputRef = builder.inputType('EmailMessageInput', {
  fields: (t) => ({
    subject: t.string(),
    body: t.string({ description: 'May use {{template.name}}, {{submitter.link}}, {{account.name}}, …' }),
  }),
});

const SubmitterInputRef = builder.inputType('SubmitterInput', {
  fields: (t) => ({
    uuid: t.string({ description: 'Template role uuid.' }),
    role: t.string({ description: 'Template role name (case-insensitive); else the role at this position.' }),
    email: t.string(),
    name: t.string(),
    phone: t.string({ description: 'E.164.' }),
    values: t.field({ type: 'JSON', description: 'Prefilled values keyed by field name or uuid.' }),
    externalId: t.string(),
    completed: t.boolean({ description: 'Mark completed now (an api_complete_form event).' }),
    metadata: t.field({ type: 'JSON' }),
    sendEmail: t.boolean(),
    sendSms: t.boolean(),
    completedRedirectUrl: t.string(),
    replyTo: t.string(),
    message: t.field({ type: MessageInputRef }),
    fields: t.field({ type: [FieldConfigInput] }),
    readonlyFields: t.stringList(),
    order: t.int({ description: 'Signing group: parties with the same number are sent together.' }),
  }),
});

const SubmissionGroupInput = builder.inputType('SubmissionGroupInput', {
  fields: (t) => ({ submitters: t.field({ type: [SubmitterInputRef], required: true }) }),
});

const CreateSubmissionsInput = builder.inputType('CreateSubmissionsInput', {
  fields: (t) => ({
    templateId: t.int({ required: true }),
    submitters: t.field({ type: [SubmitterInputRef], required: true }),
    sendEmail: t.boolean({ description: 'Default true.' }),
    sendSms: t.boolean({ description: 'Default false.' }),
    order: t.string({ description: 'preserved (default) or random.' }),
    completedRedirectUrl: t.string(),
    bccCompleted: t.string(),
    replyTo: t.string(),
    message: t.field({ type: MessageInputRef }),
    expireAt: t.field({ type: 'DateTime' }),
    name: t.string(),
    variables: t.field({ type: 'JSON' }),
    emailsMode: t.boolean({
      description: 'One submission per submitter, all to the first role (POST /submissions/emails).',
    }),
    moreSubmissions: t.field({
      type: [SubmissionGroupInput],
      description: 'Further submissions of the same template in one call (the earlier shape `submissions: [...]`).',
    }),
  }),
});

const CreateSubmissionsPayload = builder.objectRef<{ submissionIds: number[] }>('CreateSubmissionsPayload').implement({
  fields: (t) => ({
    submissionIds: t.exposeIntList('submissionIds', {
      description: 'The ids of the submissions created, in request order.',
    }),
    submissions: t.prismaField({
      type: [SubmissionRef],
      resolve: (query, payload, _args, ctx) =>
        ctx.db.submission.findMany({ ...query, where: { id: { in: payload.submissionIds } }, orderBy: { id: 'asc' } }),
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

const Order = z.enum(['preserved', 'random'], { error: 'order must be one of preserved, random' });

type SubmitterGraphQLInput = Record<string, unknown> & {
  fields?: Record<string, unknown>[] | null;
  message?: Record<string, unknown> | null;
};

/**
 * GraphQL's camelCase submitter input as the request shape the service validates (DocuSeal keys).
 * @param at where it is in the request, for messages ("submitters[0]")
 */
function toSubmitterInput(raw: SubmitterGraphQLInput, at: string): z.infer<typeof SubmitterInput> {
  const s = withoutNulls(raw) as Record<string, unknown> & {
    fields?: Record<string, unknown>[];
    message?: Record<string, unknown>;
  };
  return parseInput(
    SubmitterInput,
    withoutNulls({
      uuid: s.uuid,
      role: s.role,
      email: s.email,
      name: s.name,
      phone: s.phone,
      values: s.values,
      external_id: s.externalId,
      completed: s.completed,
      metadata: s.metadata,
      send_email: s.sendEmail,
      send_sms: s.sendSms,
      completed_redirect_url: s.completedRedirectUrl,
      reply_to: s.replyTo,
      message: s.message ? withoutNulls(s.message) : undefined,
      readonly_fields: s.readonlyFields,
      order: s.order,
      fields: s.fields?.map((f) => {
        const field = withoutNulls(f);
        return withoutNulls({
          name: field.name,
          uuid: field.uuid,
          default_value: field.defaultValue,
          readonly: field.readonly,
          required: field.required,
          title: field.title,
          description: field.description,
          validation_pattern: field.validationPattern,
          invalid_message: field.invalidMessage,
          preferences: field.preferences,
        });
      }),
    }),
    { at },
  );
}

builder.mutationField('createSubmissions', (t) =>
  t.field({
    type: CreateSubmissionsPayload,
    description:
      'Creates a submission from a template and sends the requests (in order unless `order: "random"`). With `emailsMode`, one submission per submitter.',
    args: { input: t.arg({ type: CreateSubmissionsInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account, user } = requireViewer(ctx);
      const order = input.order ? parseInput(Order, input.order) : 'preserved';
      // Sizes (src/limits.ts) before anything else: counts first, then each part.
      if (input.emailsMode) checkItems(input.submitters, MAX_ITEMS.submissions, 'emails');
      else checkItems(input.submitters, MAX_ITEMS.submitters, 'submitters');
      checkItems(input.moreSubmissions, MAX_ITEMS.submissions - 1, 'submissions');
      parseInput(
        SubmissionSettingsInput,
        withoutNulls({
          completed_redirect_url: input.completedRedirectUrl,
          bcc_completed: input.bccCompleted,
          reply_to: input.replyTo,
          message: input.message ? withoutNulls(input.message) : undefined,
          name: input.name,
          variables: input.variables,
        }),
      );
      if (input.message && !input.message.body && input.message.subject)
        throw new AppError('VALIDATION', 'body is required in `message`.');
      const submitters = input.submitters.map((s, i) =>
        toSubmitterInput(s as SubmitterGraphQLInput, `${input.emailsMode ? 'emails' : 'submitters'}[${i}]`),
      );
      const submissions: SubmissionRequest[] = input.emailsMode
        ? submitters.map((s) => ({ submitters: [{ ...s, role: undefined, uuid: undefined }], path: 'submitters' }))
        : [
            { submitters, path: 'submitters' },
            ...(input.moreSubmissions ?? []).map((group, i) => {
              const path = `submissions[${i + 1}].submitters`;
              checkItems(group.submitters, MAX_ITEMS.submitters, path);
              return {
                submitters: group.submitters.map((s, j) =>
                  toSubmitterInput(s as SubmitterGraphQLInput, `${path}[${j}]`),
                ),
                path,
              };
            }),
          ];
      // The requests, expiry, completions and submission.created are written with the submissions.
      const created = await createSubmissions(ctx, {
        accountId: account.id,
        userId: user.id,
        templateId: input.templateId,
        source: 'api',
        settings: {
          sendEmail: input.sendEmail ?? true,
          sendSms: input.sendSms ?? false,
          order: input.emailsMode ? 'random' : order,
          completedRedirectUrl: input.completedRedirectUrl ?? undefined,
          bccCompleted: input.bccCompleted ?? undefined,
          replyTo: input.replyTo ?? undefined,
          message: input.message ? (withoutNulls(input.message) as { subject?: string; body?: string }) : undefined,
          expireAt: input.expireAt ?? undefined,
          name: input.name ?? undefined,
          variables: (input.variables as Record<string, unknown> | null) ?? undefined,
        },
        submissions,
        download: {
          allowPrivate: ctx.config.downloadAllowPrivate,
          maxBytes: ctx.config.downloadMaxBytes,
          timeoutMs: ctx.config.downloadTimeout,
        },
        images: ctx.config.images,
      });
      // For adapters answering from what was written (the REST create routes).
      recordCreated(ctx, created);
      return { submissionIds: created.map((c) => c.id) };
    },
  }),
);
