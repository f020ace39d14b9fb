/**
 * DocuSeal's polling feeds as a query (REST: GET /events/form/:type, GET /events/submission/:type):
 * each item is the webhook the event sends, newest first, paged by UNIX seconds as DocuSeal pages
 * them (src/webhooks/event-feed.ts).
 */
import { eventFeedPage, type FeedPage } from '../../webhooks/event-feed.ts';
import { createPayloadBuilder, type WebhookPayload } from '../../webhooks/payloads.ts';
import { builder } from '../builder.ts';
import { requireViewer } from '../context.ts';

const EventFeedKindRef = builder.enumType('EventFeedKind', {
  values: {
    form: { description: 'form.viewed, form.started, form.completed, form.declined (data: the form webhook data).' },
    submission: {
      description:
        'submission.created, submission.completed, submission.expired, submission.archived ' +
        '(data: the submission webhook data).',
    },
  } as const,
});

const EventFeedItemRef = builder.objectRef<WebhookPayload>('EventFeedItem').implement({
  description: 'An event as its webhook carries it.',
  fields: (t) => ({
    eventType: t.exposeString('event_type'),
    timestamp: t.exposeString('timestamp', { description: 'ISO 8601: when the event happened.' }),
    data: t.field({ type: 'JSON', description: 'The webhook `data`, in DocuSeal’s keys.', resolve: (p) => p.data }),
  }),
});

const EventFeedPaginationRef = builder.objectRef<FeedPage['pagination']>('EventFeedPagination').implement({
  fields: (t) => ({
    count: t.exposeInt('count'),
    next: t.exposeInt('next', {
      nullable: true,
      description: 'The last item’s time in UNIX seconds: pass as `after`.',
    }),
    prev: t.exposeInt('prev', {
      nullable: true,
      description: 'The first item’s time in UNIX seconds: pass as `before`.',
    }),
  }),
});

const EventFeedPageRef = builder.objectRef<FeedPage>('EventFeedPage').implement({
  fields: (t) => ({
    data: t.field({ type: [EventFeedItemRef], resolve: (p) => p.data }),
    pagination: t.field({ type: EventFeedPaginationRef, resolve: (p) => p.pagination }),
  }),
});

builder.queryField('eventFeed', (t) =>
  t.field({
    type: EventFeedPageRef,
    description:
      "The account's events of one type, newest first (DocuSeal's polling feeds). " +
      'A type the feed does not list is refused (VALIDATION).',
    args: {
      kind: t.arg({ type: EventFeedKindRef, required: true }),
      type: t.arg.string({ required: true, description: '`completed` or `form.completed`, …' }),
      after: t.arg.int({ description: 'UNIX seconds: events strictly before this second.' }),
      before: t.arg.int({ description: 'UNIX seconds: events from the next second on.' }),
      limit: t.arg.int({ description: 'Default 10, at most 100.' }),
    },
    resolve: (_root, args, ctx) => {
      const { account, folders } = requireViewer(ctx);
      return eventFeedPage(
        { db: ctx.db, payloads: createPayloadBuilder({ db: ctx.db, files: ctx.files, appUrl: ctx.config.appUrl }) },
        {
          accountId: account.id,
          folders,
          kind: args.kind,
          type: args.type,
          after: args.after ?? undefined,
          before: args.before ?? undefined,
          limit: args.limit ?? undefined,
        },
      );
    },
  }),
);
