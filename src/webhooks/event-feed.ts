/**
 * DocuSeal's polling feeds (reference/docuseal-behaviour.md §1.3; app/controllers/api/
 * form_events_controller.rb, submission_events_controller.rb, api_base_controller.rb#paginate):
 * `GET /events/form/:type` and `GET /events/submission/:type`, and the GraphQL `eventFeed` query.
 * Each item is the webhook that event sends — `{event_type, timestamp, data}` made by the same
 * payload builder (payloads.ts) — so a client may poll instead of receiving webhooks.
 *
 * DocuSeal ignores `:type` and lists completions only; here the type chooses the event, each
 * dated by its own column: form.viewed (opened_at: the latest open), form.started (started_at),
 * form.completed (completed_at), form.declined (declined_at); submission.created (created_at),
 * submission.completed (completed_at, archived ones left out as DocuSeal's `.active`),
 * submission.expired (expire_at passed, not completed, nobody declined), submission.archived
 * (archived_at). The type may be given with or without its prefix (`completed` or
 * `form.completed`); another is a 422 naming the types.
 *
 * Pagination as DocuSeal's `paginate(field:)`: newest first; `limit` default 10, at most 100;
 * `after` and `before` are UNIX seconds: `after=N` lists events strictly before second N (older
 * pages), `before=N` events from second N+1 on (newer ones); `pagination.next` is the last item's
 * time and `prev` the first's, in UNIX seconds. As in DocuSeal, events in the same second as the
 * page's last one are not reached by `after=next` — page with a larger `limit` when many events
 * share a second, or use webhooks.
 */
import { type KeyFolders, submissionsInFolders, submittersInFolders } from '../accounts/key-scopes.ts';
import type { Db } from '../db/client.ts';
import { AppError } from '../errors.ts';
import type { EventType } from '../events/events.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import type { PayloadBuilder, WebhookPayload } from './payloads.ts';

/** The feeds and the event types each lists. */
export const FEED_EVENT_TYPES = {
  form: ['form.viewed', 'form.started', 'form.completed', 'form.declined'],
  submission: ['submission.created', 'submission.completed', 'submission.expired', 'submission.archived'],
} as const satisfies Record<string, readonly EventType[]>;

export type FeedKind = keyof typeof FEED_EVENT_TYPES;

/** DocuSeal's ApiBaseController DEFAULT_LIMIT and MAX_LIMIT. */
export const FEED_DEFAULT_LIMIT = 10;
export const FEED_MAX_LIMIT = 100;

export interface FeedRequest {
  accountId: number;
  /**
   * The folders the caller's key is limited to (src/accounts/key-scopes.ts): only the events of
   * templates in them are listed; null or absent: every folder.
   */
  folders?: KeyFolders | null | undefined;
  kind: FeedKind;
  /** `completed` or `form.completed` (for the form feed), … */
  type: string;
  /** UNIX seconds: events strictly before this second. */
  after?: number | undefined;
  /** UNIX seconds: events from the second after this one on. */
  before?: number | undefined;
  limit?: number | undefined;
}

export interface FeedPage {
  data: WebhookPayload[];
  /** count: items on the page; next: the last item's time, prev: the first's (UNIX seconds), null on an empty page. */
  pagination: { count: number; next: number | null; prev: number | null };
}

/**
 * One page of a feed, newest first.
 * @throws AppError VALIDATION for a type the feed does not list, or a limit/after/before that is not a number
 */
export async function eventFeedPage(
  deps: { db: Db; payloads: PayloadBuilder },
  request: FeedRequest,
): Promise<FeedPage> {
  const type = feedEventType(request.kind, request.type);
  const limit = Math.min(Math.max(Math.trunc(request.limit ?? FEED_DEFAULT_LIMIT), 1), FEED_MAX_LIMIT);
  for (const [key, value] of [
    ['after', request.after],
    ['before', request.before],
    ['limit', request.limit],
  ] as const) {
    if (value !== undefined && !Number.isFinite(value)) throw new AppError('VALIDATION', `${key} must be a number`);
  }
  const range: { lt?: Date; gte?: Date } = {};
  if (request.after !== undefined) range.lt = new Date(Math.trunc(request.after) * 1000);
  if (request.before !== undefined) range.gte = new Date((Math.trunc(request.before) + 1) * 1000);
  const events = await feedRecords(deps.db, type, request.accountId, request.folders ?? null, range, limit);
  const built = await Promise.all(
    events.map((e) => deps.payloads.build({ type, accountId: request.accountId, recordId: e.id, at: e.at })),
  );
  const data = built.filter((p): p is WebhookPayload => p !== null);
  const seconds = (date: Date | undefined) => (date ? Math.floor(date.getTime() / 1000) : null);
  return {
    data,
    pagination: { count: data.length, next: seconds(events.at(-1)?.at), prev: seconds(events[0]?.at) },
  };
}

/** The event type a feed's `:type` names. @throws AppError VALIDATION naming the feed's types */
function feedEventType(kind: FeedKind, type: string): EventType {
  const types: readonly EventType[] = FEED_EVENT_TYPES[kind];
  const wanted = type.includes('.') ? type : `${kind}.${type}`;
  const found = types.find((t) => t === wanted);
  if (!found) throw new AppError('VALIDATION', `type must be one of ${types.map((t) => t.split('.')[1]).join(', ')}`);
  return found;
}

type Range = { lt?: Date; gte?: Date };

/** The records of one event type, newest first: id and the event's time. */
async function feedRecords(
  db: Db,
  type: EventType,
  accountId: number,
  folders: KeyFolders | null,
  range: Range,
  limit: number,
): Promise<{ id: number; at: Date }[]> {
  const submitters = async (column: 'openedAt' | 'startedAt' | 'completedAt' | 'declinedAt') => {
    const rows = await db.submitter.findMany({
      where: { accountId, ...submittersInFolders(folders), [column]: { not: null, ...range } },
      orderBy: [{ [column]: 'desc' }, { id: 'desc' }],
      take: limit,
      select: { id: true, openedAt: true, startedAt: true, completedAt: true, declinedAt: true },
    });
    return rows.map((r) => ({ id: r.id, at: r[column]! }));
  };
  const submissions = async (
    column: 'createdAt' | 'completedAt' | 'expireAt' | 'archivedAt',
    where: Prisma.SubmissionWhereInput = {},
    bound: { lte?: Date } = {},
  ) => {
    const rows = await db.submission.findMany({
      // created_at is never null (Prisma refuses `not: null` on it).
      where: {
        accountId,
        ...submissionsInFolders(folders),
        ...where,
        [column]: { ...(column === 'createdAt' ? {} : { not: null }), ...range, ...bound },
      },
      orderBy: [{ [column]: 'desc' }, { id: 'desc' }],
      take: limit,
      select: { id: true, createdAt: true, completedAt: true, expireAt: true, archivedAt: true },
    });
    return rows.map((r) => ({ id: r.id, at: r[column]! }));
  };
  switch (type) {
    case 'form.viewed':
      return submitters('openedAt');
    case 'form.started':
      return submitters('startedAt');
    case 'form.completed':
      return submitters('completedAt');
    case 'form.declined':
      return submitters('declinedAt');
    case 'submission.created':
      return submissions('createdAt');
    case 'submission.completed':
      return submissions('completedAt', { archivedAt: null });
    case 'submission.expired':
      // As the expiry job decides (src/submissions/send-requests.ts): passed, not completed, nobody declined.
      return submissions(
        'expireAt',
        { completedAt: null, submitters: { none: { declinedAt: { not: null } } } },
        { lte: new Date() },
      );
    case 'submission.archived':
      return submissions('archivedAt');
    default:
      return [];
  }
}
