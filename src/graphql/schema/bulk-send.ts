/**
 * Bulk sends over GraphQL (issue 16): the `BulkSend` type (progress and the report of each row),
 * the `createBulkSend` mutation (src/submissions/create-bulk-send.ts), the `bulkSend(id)` query and
 * the `bulkSendProgress(id)` subscription: the bulk send now, then again after each batch, as the
 * job publishes its progress (src/submissions/bulk-send-job.ts, src/events/pubsub.ts).
 */
import { Repeater } from 'graphql-yoga';
import { BulkSendColumn, CreateBulkSendRequest } from '../../submissions/bulk-send-input.ts';
import { createBulkSend } from '../../submissions/create-bulk-send.ts';
import { findBulkSendForAccount } from '../../submissions/find.ts';
import { BULK_SEND_PROGRESS } from '../../events/pubsub.ts';
import { MAX_ITEMS } from '../../limits.ts';
import { builder } from '../builder.ts';
import { requireViewer } from '../context.ts';
import { createLoaders } from '../loaders.ts';
import { fromGraphQLInput, zodInputType } from '../zod-input.ts';

const ROW_STATUSES = ['pending', 'created', 'rejected'] as const;

const BulkSendRowRef = builder
  .objectRef<{ row: number; status: string; error: string | null; submissionId: number | null }>('BulkSendRow')
  .implement({
    description: 'One row of a bulk send and what became of it.',
    fields: (t) => ({
      row: t.exposeInt('row', {
        description: '1-based: the first row after the CSV header (or the first JSON row) is 1.',
      }),
      status: t.exposeString('status', { description: `${ROW_STATUSES.join(', ')}.` }),
      error: t.exposeString('error', {
        nullable: true,
        description: 'Why it was rejected: the message createSubmissions (POST /submissions) gives for its submitters.',
      }),
      submissionId: t.exposeInt('submissionId', { nullable: true, description: 'The submission made from it.' }),
    }),
  });

export const BulkSendRef = builder.prismaObject('BulkSend', {
  description:
    'Many submissions of one template, one per row of a CSV or of JSON rows, created in the background; ' +
    'invitations are released at `ratePerMinute`.',
  fields: (t) => ({
    id: t.exposeInt('id'),
    templateId: t.exposeInt('templateId'),
    template: t.relation('template'),
    status: t.exposeString('status', {
      description: 'queued, processing, completed, or failed (see `error`: the rows still pending were not made).',
    }),
    totalRows: t.exposeInt('totalRows'),
    processedRows: t.int({
      description: 'Rows done: created + rejected.',
      resolve: (b) => b.createdCount + b.rejectedCount,
    }),
    createdCount: t.exposeInt('createdCount', { description: 'Rows made into a submission.' }),
    rejectedCount: t.exposeInt('rejectedCount', { description: 'Rows refused (see `rows(status: "rejected")`).' }),
    ratePerMinute: t.exposeInt('ratePerMinute', { description: 'Invitations (emails and SMS) released per minute.' }),
    invitationsScheduled: t.exposeInt('invitationsScheduled', {
      description: 'Signature requests scheduled so far (email and SMS each count).',
    }),
    invitationsSent: t.int({
      description: 'Of the submissions made, signature requests handed to the email or SMS provider so far.',
      resolve: async (b, _args, ctx) => {
        const where = { kind: 'signature_request', status: 'sent', submission: { bulkSendRow: { bulkSendId: b.id } } };
        const [emails, sms] = await Promise.all([
          ctx.db.emailMessage.count({ where }),
          ctx.db.smsMessage.count({ where }),
        ]);
        return emails + sms;
      },
    }),
    invitationsDueBy: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the last invitation scheduled so far is due (null before the first).',
      resolve: (b) =>
        b.nextInvitationAt && b.invitationsScheduled > 0
          ? new Date(b.nextInvitationAt.getTime() - Math.round(60_000 / b.ratePerMinute))
          : null,
    }),
    error: t.exposeString('error', { nullable: true, description: 'Why it failed (status failed).' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    completedAt: t.expose('completedAt', { type: 'DateTime', nullable: true }),
    rows: t.field({
      type: [BulkSendRowRef],
      description: `Its rows in order, optionally only those of one status; at most ${MAX_ITEMS.bulkSendRows} a page.`,
      args: {
        status: t.arg.string({ description: `${ROW_STATUSES.join(', ')}.` }),
        after: t.arg.int({ description: 'Rows after this row number.' }),
        limit: t.arg.int({ description: `Default and maximum ${MAX_ITEMS.bulkSendRows}.` }),
      },
      resolve: (b, args, ctx) =>
        ctx.db.bulkSendRow.findMany({
          where: {
            bulkSendId: b.id,
            ...(args.status != null ? { status: args.status } : {}),
            ...(args.after != null ? { row: { gt: args.after } } : {}),
          },
          orderBy: { row: 'asc' },
          take: Math.max(1, Math.min(args.limit ?? MAX_ITEMS.bulkSendRows, MAX_ITEMS.bulkSendRows)),
          select: { row: true, status: true, error: true, submissionId: true },
        }),
    }),
  }),
});

// The request's input types, derived from its one definition (src/submissions/bulk-send-input.ts).
zodInputType('BulkSendColumnInput', BulkSendColumn);
const CreateBulkSendInputRef = zodInputType('CreateBulkSendInput', CreateBulkSendRequest);

const CreateBulkSendPayload = builder.objectRef<{ id: number }>('CreateBulkSendPayload').implement({
  fields: (t) => ({
    bulkSend: t.prismaField({
      type: BulkSendRef,
      resolve: (query, payload, _args, ctx) =>
        ctx.db.bulkSend.findUniqueOrThrow({ ...query, where: { id: payload.id } }),
    }),
  }),
});

builder.mutationField('createBulkSend', (t) =>
  t.field({
    type: CreateBulkSendPayload,
    description:
      'Starts a bulk send: one submission per row of `csv` (or `rows`), each row judged as createSubmissions ' +
      'judges a request (a refused row is reported, not made), created in the background; the invitations leave ' +
      'at `ratePerMinute`. Refused at once (nothing stored): the template, the settings, the data over its limits.',
    args: { input: t.arg({ type: CreateBulkSendInputRef, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { account, user, folders } = requireViewer(ctx);
      return createBulkSend(
        ctx,
        { accountId: account.id, userId: user.id, folders },
        fromGraphQLInput(CreateBulkSendRequest, input),
      );
    },
  }),
);

builder.queryField('bulkSend', (t) =>
  t.prismaField({
    type: BulkSendRef,
    args: { id: t.arg.int({ required: true }) },
    resolve: async (query, _root, { id }, ctx) => {
      const { account, folders } = requireViewer(ctx);
      await findBulkSendForAccount(ctx.db, { id, accountId: account.id, folders });
      return ctx.db.bulkSend.findUniqueOrThrow({ ...query, where: { id } });
    },
  }),
);

builder.subscriptionField('bulkSendProgress', (t) =>
  t.prismaField({
    type: BulkSendRef,
    description:
      'The bulk send as it is now, then again after each batch of rows; the subscription ends with the ' +
      'message whose status is completed or failed.',
    args: { id: t.arg.int({ required: true }) },
    subscribe: async (_root, { id }, ctx) => {
      const { account, folders } = requireViewer(ctx);
      await findBulkSendForAccount(ctx.db, { id, accountId: account.id, folders });
      const events = ctx.live.subscribe(account.id, (e) => e.type === BULK_SEND_PROGRESS && e.bulkSendId === id);
      // Over once completed or failed; judged before each message, so that the message (loaded after)
      // shows that state: a state only moves forward, and the batch that ends it publishes after.
      const over = async () => {
        const bulkSend = await ctx.db.bulkSend.findUnique({ where: { id }, select: { status: true } });
        return !bulkSend || bulkSend.status === 'completed' || bulkSend.status === 'failed';
      };
      // A Repeater, so that the subscriber's return() ends it at once (see src/events/pubsub.ts).
      return new Repeater<{ id: number }>(async (push, stop) => {
        void stop.then(() => events.return());
        let last = await over();
        await push({ id });
        for await (const _event of last ? [] : events) {
          last = await over();
          await push({ id });
          if (last) break;
        }
        stop();
      });
    },
    resolve: (query, _event, { id }, ctx) => {
      ctx.loaders = createLoaders(ctx.db);
      return ctx.db.bulkSend.findUniqueOrThrow({ ...query, where: { id, accountId: requireViewer(ctx).account.id } });
    },
  }),
);
