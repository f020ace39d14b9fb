/**
 * GraphQL subscriptions over graphql-ws (WebSocket on /graphql) and SSE (`Accept:
 * text/event-stream` on /graphql): the live events of the caller's account
 * (src/events/pubsub.ts). Authentication as for queries: the API key in graphql-ws's
 * connectionParams, or in the SSE request's headers.
 *
 * A subscription listens to its own account's topic only, and loads what it returns from the
 * database with the caller's account in the query, when the event arrives (so it returns the
 * state after the event). Subscribers on one instance that receive the same event with the same
 * selection share one load.
 */
import { AppError } from '../../errors.ts';
import type { LiveEvent } from '../../events/pubsub.ts';
import { findSubmissionForAccount } from '../../submissions/find.ts';
import { findTemplateForAccount } from '../../templates/find-template.ts';
import { builder } from '../builder.ts';
import { requireViewer, type GraphQLContext } from '../context.ts';
import { createLoaders } from '../loaders.ts';
import { SubmissionRef, SubmitterRef } from './submission.ts';

builder.subscriptionType({});

/** Loads in flight or done, per event: by account, record and selection. Dropped with the event. */
const sharedLoads = new WeakMap<LiveEvent, Map<string, Promise<unknown>>>();

/**
 * One load per event, account and selection, whatever the number of subscribers: the same event
 * object reaches every subscriber of the account on this instance (in process and from Redis).
 */
function loadOnce<T>(event: LiveEvent, key: string, load: () => Promise<T>): Promise<T> {
  let loads = sharedLoads.get(event);
  if (!loads) sharedLoads.set(event, (loads = new Map()));
  let pending = loads.get(key) as Promise<T> | undefined;
  if (!pending) loads.set(key, (pending = load()));
  return pending;
}

/**
 * A subscription's context lives as long as the subscription; its per-request loaders' caches
 * must not: each event gets fresh ones.
 */
function freshLoaders(ctx: GraphQLContext): void {
  ctx.loaders = createLoaders(ctx.db);
}

/**
 * The submission an event is about, with the subscriber's selection.
 * @throws AppError NOT_FOUND when it was deleted meanwhile
 */
function loadSubmission(ctx: GraphQLContext, event: LiveEvent, query: object) {
  const accountId = requireViewer(ctx).account.id;
  const id = event.submissionId!;
  return loadOnce(event, `submission:${accountId}:${id}:${JSON.stringify(query)}`, async () => {
    const submission = await ctx.db.submission.findFirst({ ...query, where: { id, accountId } });
    if (!submission) throw new AppError('NOT_FOUND', `Submission ${id} not found`);
    return submission;
  });
}

const FORM_EVENT_TYPES = ['form.viewed', 'form.started', 'form.completed', 'form.declined'];

const FormEventRef = builder.objectRef<LiveEvent>('FormEvent').implement({
  description: "Something a submitter did in the signing form, or that completed the submitter's part.",
  fields: (t) => ({
    eventType: t.exposeString('type', { description: 'form.viewed, form.started, form.completed or form.declined.' }),
    timestamp: t.field({ type: 'DateTime', description: 'When it happened.', resolve: (event) => new Date(event.at) }),
    submitter: t.prismaField({
      type: SubmitterRef,
      description: 'The submitter, as it is after the event.',
      resolve: (query, event, _args, ctx) => {
        const accountId = requireViewer(ctx).account.id;
        const id = event.submitterId!;
        return loadOnce(event, `submitter:${accountId}:${id}:${JSON.stringify(query)}`, async () => {
          const submitter = await ctx.db.submitter.findFirst({ ...query, where: { id, accountId } });
          if (!submitter) throw new AppError('NOT_FOUND', `Submitter ${id} not found`);
          return submitter;
        });
      },
    }),
    submission: t.prismaField({
      type: SubmissionRef,
      description: "The submitter's submission, as it is after the event.",
      resolve: (query, event, _args, ctx) => loadSubmission(ctx, event, query),
    }),
  }),
});

builder.subscriptionField('formEvents', (t) =>
  t.field({
    type: FormEventRef,
    description:
      "The account's form events (form.viewed, form.started, form.completed, form.declined) as they happen, optionally only those of one template or one submission.",
    args: {
      templateId: t.arg.int({ description: 'Only events of submissions made from this template.' }),
      submissionId: t.arg.int({ description: "Only events of this submission's submitters." }),
    },
    subscribe: async (_root, args, ctx) => {
      const { account } = requireViewer(ctx);
      const { templateId, submissionId } = args;
      // Another account's id is refused as in queries (FORBIDDEN), not silently empty.
      if (templateId != null) await findTemplateForAccount(ctx.db, { id: templateId, accountId: account.id });
      if (submissionId != null) await findSubmissionForAccount(ctx.db, { id: submissionId, accountId: account.id });
      return ctx.live.subscribe(
        account.id,
        (event) =>
          FORM_EVENT_TYPES.includes(event.type) &&
          (templateId == null || event.templateId === templateId) &&
          (submissionId == null || event.submissionId === submissionId),
      );
    },
    resolve: (event, _args, ctx) => {
      freshLoaders(ctx);
      return event;
    },
  }),
);

builder.subscriptionField('submissionUpdated', (t) =>
  t.prismaField({
    type: SubmissionRef,
    description:
      'The submission, each time something happens to it or to one of its submitters (form.*, submission.* events), as it is after that.',
    args: { id: t.arg.int({ required: true }) },
    subscribe: async (_root, { id }, ctx) => {
      const { account } = requireViewer(ctx);
      await findSubmissionForAccount(ctx.db, { id, accountId: account.id });
      return ctx.live.subscribe(account.id, (event) => event.submissionId === id);
    },
    resolve: (query, event: LiveEvent, _args, ctx) => {
      freshLoaders(ctx);
      return loadSubmission(ctx, event, query);
    },
  }),
);
