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
 *
 * Each published event is one message, and the message says which event it is (`eventType`,
 * `timestamp`, the `submitter` it is about): completing a submission's last party raises two
 * events (that party's form.completed, then submission.completed) that load the same submission,
 * so without them a `submissionUpdated` subscriber saw two identical messages.
 */
import { filter } from 'graphql-yoga';
import type { KeyFolders } from '../../accounts/key-scopes.ts';
import { AppError } from '../../errors.ts';
import { EVENT_TYPES, recordTypeOf } from '../../events/events.ts';
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

/**
 * The submitter an event is about, with the subscriber's selection.
 * @throws AppError NOT_FOUND when it was deleted meanwhile
 */
function loadSubmitter(ctx: GraphQLContext, event: LiveEvent, submitterId: number, query: object) {
  const accountId = requireViewer(ctx).account.id;
  return loadOnce(event, `submitter:${accountId}:${submitterId}:${JSON.stringify(query)}`, async () => {
    const submitter = await ctx.db.submitter.findFirst({ ...query, where: { id: submitterId, accountId } });
    if (!submitter) throw new AppError('NOT_FOUND', `Submitter ${submitterId} not found`);
    return submitter;
  });
}

/**
 * The events of templates within the folders the caller's key is limited to (all without a limit):
 * the template's folder is looked up as each event arrives (it may have moved), once per event and
 * folder set however many subscribers hold such a key (loadOnce).
 */
function withinKeyFolders(
  ctx: GraphQLContext,
  source: AsyncIterable<LiveEvent>,
  folders: KeyFolders | null,
): AsyncIterable<LiveEvent> {
  if (!folders) return source;
  const ids = [...folders.ids];
  return filter((event: LiveEvent) => {
    const templateId = event.templateId;
    if (templateId === null) return false;
    return loadOnce(event, `folders:${templateId}:${ids.join(',')}`, async () => {
      const found = await ctx.db.template.count({ where: { id: templateId, folderId: { in: ids } } });
      return found > 0;
    });
  })(source);
}

/** Events about a submitter (form.*), and those about a submission or one of its submitters (form.*, submission.*). */
const FORM_EVENT_TYPES: readonly string[] = EVENT_TYPES.filter((type) => recordTypeOf(type) === 'Submitter');
const SUBMISSION_EVENT_TYPES: readonly string[] = EVENT_TYPES.filter((type) => recordTypeOf(type) !== 'Template');

const FormEventRef = builder.objectRef<LiveEvent>('FormEvent').implement({
  description: "Something a submitter did in the signing form, or that completed the submitter's part.",
  fields: (t) => ({
    eventType: t.exposeString('type', { description: `${FORM_EVENT_TYPES.join(', ')}.` }),
    timestamp: t.field({ type: 'DateTime', description: 'When it happened.', resolve: (event) => new Date(event.at) }),
    submitter: t.prismaField({
      type: SubmitterRef,
      description: 'The submitter, as it is after the event.',
      resolve: (query, event, _args, ctx) => loadSubmitter(ctx, event, event.submitterId!, query),
    }),
    submission: t.prismaField({
      type: SubmissionRef,
      description: "The submitter's submission, as it is after the event.",
      resolve: (query, event, _args, ctx) => loadSubmission(ctx, event, query),
    }),
  }),
});

const SubmissionUpdateRef = builder.objectRef<LiveEvent>('SubmissionUpdate').implement({
  description:
    'Something that happened to a submission or to one of its submitters: which event, when, the submitter it is ' +
    'about (null for an event about the whole submission), and the submission after it. One message per event.',
  fields: (t) => ({
    eventType: t.exposeString('type', {
      description:
        `${SUBMISSION_EVENT_TYPES.join(', ')}: form.* events are about one submitter, submission.* ` +
        `events about the whole submission.`,
    }),
    timestamp: t.field({ type: 'DateTime', description: 'When it happened.', resolve: (event) => new Date(event.at) }),
    submitter: t.prismaField({
      type: SubmitterRef,
      nullable: true,
      description:
        'The submitter the event is about (form.* events), as it is after the event; null for submission.* events.',
      resolve: (query, event, _args, ctx) =>
        event.submitterId === null ? null : loadSubmitter(ctx, event, event.submitterId, query),
    }),
    submission: t.prismaField({
      type: SubmissionRef,
      description: 'The submission, as it is after the event.',
      resolve: (query, event, _args, ctx) => loadSubmission(ctx, event, query),
    }),
  }),
});

builder.subscriptionField('formEvents', (t) =>
  t.field({
    type: FormEventRef,
    description:
      "The account's form events (form.viewed, form.started, form.completed, form.declined) as they happen, " +
      'optionally only those of one template or one submission.',
    args: {
      templateId: t.arg.int({ description: 'Only events of submissions made from this template.' }),
      submissionId: t.arg.int({ description: "Only events of this submission's submitters." }),
    },
    subscribe: async (_root, args, ctx) => {
      const { account, folders } = requireViewer(ctx);
      const { templateId, submissionId } = args;
      // Another account's id is refused as in queries (FORBIDDEN), not silently empty; so is one
      // outside the folders of the caller's key.
      if (templateId != null) await findTemplateForAccount(ctx.db, { id: templateId, accountId: account.id, folders });
      if (submissionId != null)
        await findSubmissionForAccount(ctx.db, { id: submissionId, accountId: account.id, folders });
      const events = ctx.live.subscribe(
        account.id,
        (event) =>
          FORM_EVENT_TYPES.includes(event.type) &&
          (templateId == null || event.templateId === templateId) &&
          (submissionId == null || event.submissionId === submissionId),
      );
      return withinKeyFolders(ctx, events, folders);
    },
    resolve: (event, _args, ctx) => {
      freshLoaders(ctx);
      return event;
    },
  }),
);

builder.subscriptionField('submissionUpdated', (t) =>
  t.field({
    type: SubmissionUpdateRef,
    description:
      'Each event about the submission or one of its submitters (form.*, submission.*), once, as it happens: its ' +
      'type, time and submitter, and the submission as it is after it.',
    args: { id: t.arg.int({ required: true }) },
    subscribe: async (_root, { id }, ctx) => {
      const { account, folders } = requireViewer(ctx);
      await findSubmissionForAccount(ctx.db, { id, accountId: account.id, folders });
      return withinKeyFolders(
        ctx,
        ctx.live.subscribe(account.id, (event) => event.submissionId === id),
        folders,
      );
    },
    resolve: (event, _args, ctx) => {
      freshLoaders(ctx);
      return event;
    },
  }),
);
