/**
 * Webhooks over GraphQL: the account's endpoints, their deliveries and attempts, and the
 * mutations to manage them (docs/webhooks.md). Everything is scoped to the caller's account:
 * another account's endpoint or delivery is FORBIDDEN, an unknown one NOT_FOUND.
 */
import { z } from 'zod';
import { parseInput } from '../../accounts/api-keys.ts';
import { MAX_LENGTH, text } from '../../limits.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import { idCursorWhere, PageArgs, pageSize } from '../../util/pagination.ts';
import { findDeliveryForAccount, redeliverWebhook, type DeliveryDeps } from '../../webhooks/deliver-webhook.ts';
import {
  createWebhookEndpoint,
  findWebhookEndpoint,
  removeWebhookEndpoint,
  rotateWebhookSecret,
  updateWebhookEndpoint,
  webhookDestinationCheck,
} from '../../webhooks/endpoints.ts';
import { createPayloadBuilder } from '../../webhooks/payloads.ts';
import { sendTestWebhook } from '../../webhooks/send-test-webhook.ts';
import { AppError } from '../../errors.ts';
import type { Db } from '../../db/client.ts';
import { findSubmissionForAccount, findSubmitterForAccount } from '../../submissions/find.ts';
import { findTemplateForAccount } from '../../templates/find-template.ts';
import { builder } from '../builder.ts';
import { requireEveryFolder } from '../../accounts/key-scopes.ts';
import { requireViewer, type GraphQLContext } from '../context.ts';

/**
 * The caller of a webhook field: webhook endpoints receive, and deliveries carry, the events of
 * every template of the account, so a key limited to folders gets FORBIDDEN (src/accounts/key-scopes.ts).
 * @throws AppError UNAUTHENTICATED or FORBIDDEN
 */
function requireWebhookViewer(ctx: GraphQLContext) {
  const viewer = requireViewer(ctx);
  requireEveryFolder(viewer.folders, 'webhooks');
  return viewer;
}
import { withoutNulls } from './template.ts';

const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;

const DeliveryFilter = PageArgs.extend({
  eventType: text(MAX_LENGTH.filter).optional(),
  status: z.enum(DELIVERY_STATUSES, { error: `status must be one of ${DELIVERY_STATUSES.join(', ')}` }).optional(),
  recordType: z
    .enum(['Submitter', 'Submission', 'Template'], {
      error: 'recordType must be one of Submitter, Submission, Template',
    })
    .optional(),
  recordId: z.number().int().optional(),
});
type DeliveryFilter = z.infer<typeof DeliveryFilter>;

/** The Prisma filter of a delivery list (the account scoping is added by the caller). */
function deliveryWhere(args: DeliveryFilter): Prisma.WebhookDeliveryWhereInput {
  const cursor = idCursorWhere(args);
  return {
    ...(args.eventType !== undefined ? { eventType: args.eventType } : {}),
    ...(args.status !== undefined ? { status: args.status } : {}),
    ...(args.recordType !== undefined ? { recordType: args.recordType } : {}),
    ...(args.recordId !== undefined ? { recordId: args.recordId } : {}),
    ...(cursor ? { id: cursor } : {}),
  };
}

/**
 * The tenant check of the `recordId` filter, as for every id a caller names (docs/security.md):
 * with `recordType`, that record; without, a record of any type with that id (the account's own
 * in one type is enough).
 * @throws AppError FORBIDDEN when the id names only other accounts' records; NOT_FOUND
 *   ("<Type> <id> not found", "Record <id> not found") when none
 */
async function checkEventRecord(
  db: Db,
  options: { recordType?: 'Submitter' | 'Submission' | 'Template'; recordId: number; accountId: number },
): Promise<void> {
  const finders = {
    Submitter: () => findSubmitterForAccount(db, { id: options.recordId, accountId: options.accountId }),
    Submission: () => findSubmissionForAccount(db, { id: options.recordId, accountId: options.accountId }),
    Template: () => findTemplateForAccount(db, { id: options.recordId, accountId: options.accountId }),
  };
  if (options.recordType) {
    await finders[options.recordType]();
    return;
  }
  const outcomes = await Promise.allSettled(Object.values(finders).map((find) => find()));
  if (outcomes.some((o) => o.status === 'fulfilled')) return;
  const codes = outcomes.map((o) =>
    o.status === 'rejected' && o.reason instanceof AppError ? o.reason.code : undefined,
  );
  if (codes.includes('FORBIDDEN')) throw new AppError('FORBIDDEN');
  const unexpected = outcomes.find((o) => o.status === 'rejected' && !(o.reason instanceof AppError));
  if (unexpected) throw (unexpected as PromiseRejectedResult).reason;
  throw new AppError('NOT_FOUND', `Record ${options.recordId} not found`);
}

export const WebhookAttemptRef = builder.prismaObject('WebhookAttempt', {
  description: 'One HTTP try of a delivery.',
  fields: (t) => ({
    id: t.exposeInt('id'),
    attempt: t.exposeInt('attempt', { description: '0 for the first send, 1 for the first retry, …' }),
    statusCode: t.exposeInt('statusCode', {
      nullable: true,
      description:
        'The HTTP status of the answer; null when there was none (timeout, connection error, refused destination).',
    }),
    durationMs: t.exposeInt('durationMs', {
      description: 'Milliseconds from the start of the request to the end of the answer or the failure.',
    }),
    error: t.exposeString('error', { nullable: true, description: 'Why it failed; null on success.' }),
    responseBody: t.exposeString('responseBody', {
      nullable: true,
      description: 'The first 1,024 bytes of the answer’s body.',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the request started.' }),
  }),
});

export const WebhookDeliveryRef = builder.prismaObject('WebhookDelivery', {
  description: 'One event to one endpoint: the payload, its status and every attempt.',
  fields: (t) => ({
    id: t.exposeInt('id'),
    uuid: t.exposeString('uuid'),
    endpointId: t.exposeInt('endpointId'),
    endpoint: t.relation('endpoint'),
    eventType: t.exposeString('eventType'),
    recordType: t.exposeString('recordType', {
      description: 'Submitter (form.*), Submission (submission.*) or Template (template.*).',
    }),
    recordId: t.exposeInt('recordId'),
    payload: t.field({
      type: 'JSON',
      description: 'The body last sent (or to be sent): {event_type, timestamp, data}.',
      resolve: (d) => d.payload,
    }),
    status: t.exposeString('status', {
      description: 'pending (being sent or waiting for a retry), succeeded or failed (gave up).',
    }),
    attemptCount: t.exposeInt('attemptCount'),
    nextAttemptAt: t.expose('nextAttemptAt', {
      type: 'DateTime',
      nullable: true,
      description: 'When the next retry is due, while one is.',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    attempts: t.relation('attempts', { query: { orderBy: { attempt: 'asc' } } }),
  }),
});

export const WebhookEndpointRef = builder.prismaObject('WebhookEndpoint', {
  description:
    'Where the account’s events are POSTed. The signing secret is shown only by createWebhookEndpoint and ' +
    'rotateWebhookSecret.',
  fields: (t) => ({
    id: t.exposeInt('id'),
    url: t.exposeString('url'),
    events: t.exposeStringList('events'),
    headerName: t.exposeString('headerName', {
      nullable: true,
      description: 'The custom header sent with every delivery.',
    }),
    headerValue: t.exposeString('headerValue', { nullable: true }),
    enabled: t.boolean({ select: { disabledAt: true }, resolve: (e) => e.disabledAt === null }),
    previousSecretExpiresAt: t.expose('previousSecretExpiresAt', {
      type: 'DateTime',
      nullable: true,
      description: 'After a rotation, until when deliveries are signed with the previous secret too.',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    deliveries: t.relation('deliveries', {
      description: 'This endpoint’s deliveries ascending by id (cursor pagination as for every list).',
      args: {
        eventType: t.arg.string(),
        status: t.arg.string({ description: 'pending, succeeded or failed.' }),
        limit: t.arg.int(),
        after: t.arg.int(),
        before: t.arg.int(),
      },
      query: (args) => {
        const filter = parseInput(DeliveryFilter, withoutNulls(args));
        return { where: deliveryWhere(filter), orderBy: { id: 'asc' }, take: pageSize(filter) };
      },
    }),
  }),
});

builder.queryField('webhookEndpoints', (t) =>
  t.prismaField({
    type: [WebhookEndpointRef],
    description: "The account's webhook endpoints, oldest first.",
    resolve: (query, _root, _args, ctx) => {
      const { account } = requireWebhookViewer(ctx);
      return ctx.db.webhookEndpoint.findMany({ ...query, where: { accountId: account.id }, orderBy: { id: 'asc' } });
    },
  }),
);

builder.queryField('webhookEndpoint', (t) =>
  t.prismaField({
    type: WebhookEndpointRef,
    args: { id: t.arg.int({ required: true }) },
    resolve: async (query, _root, { id }, ctx) => {
      const { account } = requireWebhookViewer(ctx);
      await findWebhookEndpoint(ctx.db, { id, accountId: account.id });
      return ctx.db.webhookEndpoint.findUniqueOrThrow({ ...query, where: { id } });
    },
  }),
);

builder.queryField('webhookDeliveries', (t) =>
  t.prismaField({
    type: [WebhookDeliveryRef],
    description:
      "The account's webhook deliveries ascending by id, each with its attempts: per endpoint (endpointId), " +
      'per event (eventType, recordType, recordId), by status. Cursor pagination as for every list (limit ' +
      'default 10, at most 100).',
    args: {
      endpointId: t.arg.int(),
      eventType: t.arg.string(),
      recordType: t.arg.string(),
      recordId: t.arg.int(),
      status: t.arg.string(),
      limit: t.arg.int(),
      after: t.arg.int(),
      before: t.arg.int(),
    },
    resolve: async (query, _root, raw, ctx) => {
      const { account } = requireWebhookViewer(ctx);
      const { endpointId, ...rest } = withoutNulls(raw);
      const filter = parseInput(DeliveryFilter, rest);
      if (endpointId !== undefined) await findWebhookEndpoint(ctx.db, { id: endpointId, accountId: account.id });
      if (filter.recordId !== undefined)
        await checkEventRecord(ctx.db, {
          recordType: filter.recordType,
          recordId: filter.recordId,
          accountId: account.id,
        });
      return ctx.db.webhookDelivery.findMany({
        ...query,
        where: { accountId: account.id, ...(endpointId !== undefined ? { endpointId } : {}), ...deliveryWhere(filter) },
        orderBy: { id: 'asc' },
        take: pageSize(filter),
      });
    },
  }),
);

builder.queryField('webhookDelivery', (t) =>
  t.prismaField({
    type: WebhookDeliveryRef,
    args: { id: t.arg.int({ required: true }) },
    resolve: async (query, _root, { id }, ctx) => {
      const { account } = requireWebhookViewer(ctx);
      await findDeliveryForAccount(ctx.db, { id, accountId: account.id });
      return ctx.db.webhookDelivery.findUniqueOrThrow({ ...query, where: { id } });
    },
  }),
);

// ---------------------------------------------------------------------------------------------
// Mutations

const EndpointPayloadRef = builder.objectRef<{ id: number }>('WebhookEndpointPayload').implement({
  fields: (t) => ({
    endpoint: t.prismaField({
      type: WebhookEndpointRef,
      resolve: (query, p, _a, ctx) => ctx.db.webhookEndpoint.findUniqueOrThrow({ ...query, where: { id: p.id } }),
    }),
  }),
});

const EndpointWithSecretPayloadRef = builder
  .objectRef<{ id: number; secret: string }>('WebhookEndpointSecretPayload')
  .implement({
    description: 'An endpoint and its signing secret, shown this once.',
    fields: (t) => ({
      endpoint: t.prismaField({
        type: WebhookEndpointRef,
        resolve: (query, p, _a, ctx) => ctx.db.webhookEndpoint.findUniqueOrThrow({ ...query, where: { id: p.id } }),
      }),
      secret: t.exposeString('secret', { description: 'The signing secret (whsec_…). Shown once; store it now.' }),
    }),
  });

const DeliveryPayloadRef = builder.objectRef<{ id: number }>('WebhookDeliveryPayload').implement({
  fields: (t) => ({
    delivery: t.prismaField({
      type: WebhookDeliveryRef,
      resolve: (query, p, _a, ctx) => ctx.db.webhookDelivery.findUniqueOrThrow({ ...query, where: { id: p.id } }),
    }),
  }),
});

const DeleteEndpointPayloadRef = builder.objectRef<{ id: number }>('DeleteWebhookEndpointPayload').implement({
  fields: (t) => ({ id: t.exposeInt('id') }),
});

const CreateWebhookEndpointInput = builder.inputType('CreateWebhookEndpointInput', {
  fields: (t) => ({
    url: t.string({ required: true, description: 'An http or https URL.' }),
    events: t.stringList({
      description: 'Event types to send (default: form.viewed, form.started, form.completed, form.declined).',
    }),
    headerName: t.string({ description: 'A custom header sent with every delivery (with headerValue).' }),
    headerValue: t.string(),
  }),
});

builder.mutationField('createWebhookEndpoint', (t) =>
  t.field({
    type: EndpointWithSecretPayloadRef,
    description: 'Adds a webhook endpoint; the payload carries its signing secret, shown this once.',
    args: { input: t.arg({ type: CreateWebhookEndpointInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account } = requireWebhookViewer(ctx);
      const { endpoint, secret } = await createWebhookEndpoint(ctx.db, {
        accountId: account.id,
        ...input,
        destination: webhookDestinationCheck(ctx.config),
      });
      return { id: endpoint.id, secret };
    },
  }),
);

const UpdateWebhookEndpointInput = builder.inputType('UpdateWebhookEndpointInput', {
  fields: (t) => ({
    id: t.int({ required: true }),
    url: t.string(),
    events: t.stringList(),
    headerName: t.string({ description: 'null removes the custom header.' }),
    headerValue: t.string(),
    enabled: t.boolean({ description: 'false: no new deliveries, and pending retries stop.' }),
  }),
});

builder.mutationField('updateWebhookEndpoint', (t) =>
  t.field({
    type: EndpointPayloadRef,
    args: { input: t.arg({ type: UpdateWebhookEndpointInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account } = requireWebhookViewer(ctx);
      const { id, ...changes } = input;
      const endpoint = await updateWebhookEndpoint(ctx.db, {
        id,
        accountId: account.id,
        changes,
        destination: webhookDestinationCheck(ctx.config),
      });
      return { id: endpoint.id };
    },
  }),
);

const WebhookEndpointIdInput = builder.inputType('WebhookEndpointIdInput', {
  fields: (t) => ({ id: t.int({ required: true }) }),
});

builder.mutationField('deleteWebhookEndpoint', (t) =>
  t.field({
    type: DeleteEndpointPayloadRef,
    description: 'Removes an endpoint with its deliveries; retries still waiting send nothing.',
    args: { input: t.arg({ type: WebhookEndpointIdInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account } = requireWebhookViewer(ctx);
      return removeWebhookEndpoint(ctx.db, { id: input.id, accountId: account.id });
    },
  }),
);

builder.mutationField('rotateWebhookSecret', (t) =>
  t.field({
    type: EndpointWithSecretPayloadRef,
    description:
      'Replaces the signing secret; the previous one stays valid for 24 hours (deliveries carry a signature with ' +
      'each).',
    args: { input: t.arg({ type: WebhookEndpointIdInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account } = requireWebhookViewer(ctx);
      const { endpoint, secret } = await rotateWebhookSecret(ctx.db, { id: input.id, accountId: account.id });
      return { id: endpoint.id, secret };
    },
  }),
);

const SendTestWebhookInput = builder.inputType('SendTestWebhookInput', {
  fields: (t) => ({ endpointId: t.int({ required: true }) }),
});

builder.mutationField('sendTestWebhook', (t) =>
  t.field({
    type: DeliveryPayloadRef,
    description:
      "Sends a form.completed event of the account's latest completed submitter (else its latest submitter) to " +
      'one endpoint now, once, signed, without retries, and answers with the delivery and its attempt.',
    args: { input: t.arg({ type: SendTestWebhookInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account } = requireWebhookViewer(ctx);
      const delivery = await sendTestWebhook(deliveryDeps(ctx), {
        endpointId: input.endpointId,
        accountId: account.id,
      });
      return { id: delivery.id };
    },
  }),
);

const RedeliverWebhookInput = builder.inputType('RedeliverWebhookInput', {
  fields: (t) => ({ deliveryId: t.int({ required: true }) }),
});

builder.mutationField('redeliverWebhook', (t) =>
  t.field({
    type: DeliveryPayloadRef,
    description:
      'Sends a delivery’s event again now, as a new delivery (data as the record is now, the event’s timestamp, ' +
      'its own retries); the original keeps its history.',
    args: { input: t.arg({ type: RedeliverWebhookInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account } = requireWebhookViewer(ctx);
      const delivery = await redeliverWebhook(ctx, { deliveryId: input.deliveryId, accountId: account.id });
      return { id: delivery.id };
    },
  }),
);

/** Delivery dependencies inside a request: payloads read from the domain read models, as the jobs read them. */
function deliveryDeps(ctx: GraphQLContext): DeliveryDeps {
  return {
    db: ctx.db,
    jobs: ctx.jobs,
    payloads: createPayloadBuilder({ db: ctx.db, files: ctx.files, appUrl: ctx.config.appUrl }),
    config: ctx.config.webhooks,
    logger: ctx.logger,
  };
}
