/**
 * DocuSeal's polling feeds (reference/docuseal-behaviour.md §1.3): `GET /events/form/:type` and
 * `GET /events/submission/:type` → `{data: [{event_type, timestamp, data}], pagination: {count,
 * next, prev}}`, with `after`, `before` (UNIX seconds) and `limit` as DocuSeal reads them; the
 * rules are src/webhooks/event-feed.ts's.
 */
import { AppError } from '../../src/errors.ts';
import type { RestRequest, RestRoute } from '../gateway.ts';

const OPERATION = /* GraphQL */ `
  query RestEventFeed($kind: EventFeedKind!, $type: String!, $after: Int, $before: Int, $limit: Int) {
    eventFeed(kind: $kind, type: $type, after: $after, before: $before, limit: $limit) {
      data { eventType timestamp data }
      pagination { count next prev }
    }
  }
`;

interface Data {
  eventFeed: {
    data: { eventType: string; timestamp: string; data: unknown }[];
    pagination: { count: number; next: number | null; prev: number | null };
  };
}

/** A query parameter as DocuSeal's `.to_i` reads it would accept junk; here a number or a 422. */
function seconds(request: RestRequest, key: 'after' | 'before' | 'limit'): number | undefined {
  const raw = request.query[key];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(Array.isArray(raw) ? raw[0] : raw);
  if (!Number.isInteger(value) || Math.abs(value) > 2 ** 31 - 1)
    throw new AppError('VALIDATION', `${key} must be an integer`);
  return value;
}

const feed = (kind: 'form' | 'submission'): RestRoute<Data> => ({
  method: 'GET',
  path: `/events/${kind}/:type`,
  operation: OPERATION,
  variables: (request) => ({
    kind,
    type: request.params.type ?? '',
    after: seconds(request, 'after'),
    before: seconds(request, 'before'),
    limit: seconds(request, 'limit'),
  }),
  serialize: ({ eventFeed }) => ({
    data: eventFeed.data.map((e) => ({ event_type: e.eventType, timestamp: e.timestamp, data: e.data })),
    pagination: eventFeed.pagination,
  }),
});

export const eventFeedRoutes: RestRoute[] = [feed('form'), feed('submission')];
