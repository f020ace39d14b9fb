/**
 * Live events: the pub/sub behind GraphQL subscriptions (`formEvents`, `submissionUpdated`).
 *
 * Every domain event is published, right after its transaction commits (EventSink.emit), as a
 * small message on its account's topic, `account-events:<accountId>`; a subscription listens to
 * its caller's account topic only and loads what it returns from the database, scoped to that
 * account. With REDIS_URL set the topics are Redis channels (`@graphql-yoga/redis-event-target`),
 * so a subscriber on one instance gets the events raised on another; without it, graphql-yoga's
 * in-process pub/sub (../shared/DESIGN.md, "Components": live events).
 *
 * Delivery is best effort: a subscriber connected while the event is published gets it; nothing
 * is stored for later (webhooks are the durable path: the `dispatch-event` job). An event emitted
 * again with the same key (a completion job run twice) is published again. A subscriber more than
 * SUBSCRIBER_BUFFER events behind loses the oldest ones.
 *
 * Credential revocations do not travel here: PostgreSQL announces them to every instance, with or
 * without Redis (src/accounts/credential-sessions.ts).

 *
 * Why the event target and not graphql-yoga's createPubSub on top of it: createPubSub gives each
 * subscription an unbuffered Repeater that throws once 1,024 events wait for a slow subscriber,
 * inside the event target's dispatch (an uncaught exception for an in-process EventTarget), and
 * its `repeaterBuffer` option is one buffer shared by every subscription. So each subscription
 * here is a Repeater with its own sliding buffer, listening on the same event targets createPubSub
 * would use: an in-process EventTarget, or `createRedisEventTarget`.
 */
import { createHash } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { Repeater, SlidingBuffer } from 'graphql-yoga';
import type { Redis } from 'ioredis';
import type { Db } from '../db/client.ts';
import { recordTypeOf, type DomainEvent, type EventType } from './events.ts';

/**
 * What a live message carries: ids, type and time; never the record itself (subscriptions load
 * it, scoped to the subscriber's account, so a message holds nothing a subscriber may not see).
 */
export interface LiveEvent {
  /** A domain event's type, or BULK_SEND_PROGRESS. */
  type: EventType | typeof BULK_SEND_PROGRESS;
  accountId: number;
  /** When it happened, ISO 8601 UTC. */
  at: string;
  /** The submitter of a form.* event; null otherwise. */
  submitterId: number | null;
  /** The submission of a form.* or submission.* event; null for template.* events. */
  submissionId: number | null;
  /** The template the event is about (for form.* and submission.*: the submission's template). */
  templateId: number | null;
  /** The bulk send of a BULK_SEND_PROGRESS message; absent otherwise. */
  bulkSendId?: number;
}

/**
 * The live message of a bulk send's progress (src/submissions/bulk-send-job.ts: after each batch,
 * and when it completes or fails), for the `bulkSendProgress` subscription. Not a domain event: no
 * webhook, no submission_events row.
 */
export const BULK_SEND_PROGRESS = 'bulk_send.progress';

/**
 * The topic of an account's events. With Redis the channel is
 * `signet:<deployment>:account-events:<accountId>`, `<deployment>` being derived from the secret
 * key base that every instance of one deployment shares: deployments (or test databases, whose
 * account ids start at 1 alike) sharing a Redis server do not hear each other.
 */
export const ACCOUNT_EVENTS_TOPIC = 'account-events';

/** The event objects delivered to subscriptions: one object per published event and instance. */
const delivered = new WeakSet<object>();

/**
 * Whether `value` is a LiveEvent object as delivered to this instance's subscriptions (every
 * subscriber of the account gets this same object), so results computed from it may be shared
 * (src/graphql/shared-subscription-results.ts).
 */
export function isLiveEvent(value: unknown): value is LiveEvent {
  return typeof value === 'object' && value !== null && delivered.has(value);
}

/** Events a subscriber may lag behind before the oldest are dropped. */
export const SUBSCRIBER_BUFFER = 1000;

/** The Redis channel prefix of a deployment: 12 hex characters of SHA-256 over a label and the secret. */
export function redisChannelPrefix(secretKeyBase: string): string {
  return `signet:${createHash('sha256').update(`signet live events\0${secretKeyBase}`).digest('hex').slice(0, 12)}:`;
}

/** What both event targets (EventTarget, createRedisEventTarget) offer; `detail` carries the LiveEvent. */
interface LiveEventTarget {
  addEventListener(topic: string, listener: (event: CustomEvent<LiveEvent | null>) => void): void;
  removeEventListener(topic: string, listener: (event: CustomEvent<LiveEvent | null>) => void): void;
  dispatchEvent(event: CustomEvent<LiveEvent>): boolean;
}

export interface LiveEvents {
  /** `redis` when REDIS_URL is set, else `memory`. */
  readonly transport: 'redis' | 'memory';
  /**
   * Publishes committed domain events to their accounts' subscribers: looks up the ids a
   * message carries (one query for form.* events, one for submission.* events), then publishes
   * one message per event. Never throws: a failure (database, Redis) is logged and the events are
   * not published live (webhooks still get them through their job). Events whose record is gone
   * or belongs to another account than the event's are dropped.
   */
  publish(events: DomainEvent[]): Promise<void>;
  /**
   * Publishes that a bulk send of the account moved on (a BULK_SEND_PROGRESS message). Never
   * throws: a failure is logged (the progress is read from the database anyway).
   */
  publishBulkSendProgress(bulkSend: { id: number; accountId: number; templateId: number }): Promise<void>;
  /**
   * The events of one account that `keep` accepts (default: all), as they are published, until
   * the consumer stops (return()) or endSubscriptions() is called. Listening starts at the first
   * next(); with Redis, the channel is subscribed in the background (once per account and
   * instance). `keep` runs when the event arrives, so rejected events cost the subscriber nothing.
   */
  subscribe(accountId: number, keep?: (event: LiveEvent) => boolean): Repeater<LiveEvent>;
  /** Subscriptions listening on this instance (all accounts, or one). */
  subscriberCount(accountId?: number): number;
  /** Ends every subscription on this instance (their clients get `complete`); later ones end at once. For shutdown. */
  endSubscriptions(): void;
  /** Ends subscriptions and disconnects from Redis; publish() is a no-op afterwards. */
  close(): Promise<void>;
}

/**
 * Creates the live-event pub/sub of one service instance.
 * @param options.redis REDIS_URL and the deployment's secret key base (channel names, see
 *   ACCOUNT_EVENTS_TOPIC); unset: in-process. Redis is connected to in the background: an
 *   unreachable server is retried (and logged), it does not stop the start.
 */
export async function createLiveEvents(options: {
  db: Db;
  logger: FastifyBaseLogger;
  redis?: { url: string; secretKeyBase: string } | undefined;
}): Promise<LiveEvents> {
  const { db, logger } = options;
  const redis = options.redis ? await connectRedis(options.redis.url, logger) : undefined;
  const prefix = options.redis ? redisChannelPrefix(options.redis.secretKeyBase) : '';
  const topicOf = (accountId: number) => `${prefix}${ACCOUNT_EVENTS_TOPIC}:${accountId}`;
  const target: LiveEventTarget = redis?.eventTarget ?? (new EventTarget() as unknown as LiveEventTarget);

  /** The stop function of each listening subscription, by account, to count them and end them. */
  const active = new Map<number, Set<() => void>>();
  let ended = false;
  let closed = false;

  async function send(event: LiveEvent): Promise<void> {
    // With Redis, publish through our own client so that a failure is awaited and logged (the
    // event target's dispatchEvent does not wait for Redis). Subscribers on this instance get it
    // back from Redis like everyone else: once.
    if (redis) await redis.publishClient.publish(topicOf(event.accountId), JSON.stringify(event));
    else target.dispatchEvent(new CustomEvent(topicOf(event.accountId), { detail: event }));
  }

  const live: LiveEvents = {
    transport: redis ? 'redis' : 'memory',

    async publish(events) {
      if (closed) return;
      // In process, an account nobody listens to needs no lookup at all.
      const wanted = redis ? events : events.filter((e) => (active.get(e.accountId)?.size ?? 0) > 0);
      if (wanted.length === 0) return;
      try {
        for (const message of await toLiveEvents(db, wanted)) await send(message);
      } catch (error) {
        logger.error({ err: error, events: wanted.map((e) => `${e.type}:${e.recordId}`) }, 'live events not published');
      }
    },

    async publishBulkSendProgress(bulkSend) {
      if (closed || (!redis && (active.get(bulkSend.accountId)?.size ?? 0) === 0)) return;
      try {
        await send({
          type: BULK_SEND_PROGRESS,
          accountId: bulkSend.accountId,
          at: new Date().toISOString(),
          submitterId: null,
          submissionId: null,
          templateId: bulkSend.templateId,
          bulkSendId: bulkSend.id,
        });
      } catch (error) {
        logger.error({ err: error, bulkSendId: bulkSend.id }, 'bulk send progress not published');
      }
    },

    subscribe(accountId, keep) {
      // A Repeater, not an async generator: its return() ends it at once, even while it waits
      // for the next event (a generator would stay listening until one came).
      return new Repeater<LiveEvent>((push, stop) => {
        if (ended) return stop();
        const stops = active.get(accountId) ?? new Set<() => void>();
        active.set(accountId, stops);
        stops.add(stop);
        const topic = topicOf(accountId);
        const listener = (event: CustomEvent<LiveEvent | null>) => {
          // The topic is the account's; checked again so that no other account's event can pass.
          // push() never throws: the sliding buffer drops the oldest event instead.
          const live = event.detail;
          if (live?.accountId !== accountId || (keep && !keep(live))) return;
          delivered.add(live);
          void push(live);
        };
        target.addEventListener(topic, listener);
        void stop.then(() => {
          target.removeEventListener(topic, listener);
          stops.delete(stop);
          if (stops.size === 0 && active.get(accountId) === stops) active.delete(accountId);
        });
      }, new SlidingBuffer(SUBSCRIBER_BUFFER));
    },

    subscriberCount(accountId) {
      if (accountId !== undefined) return active.get(accountId)?.size ?? 0;
      let count = 0;
      for (const stops of active.values()) count += stops.size;
      return count;
    },

    endSubscriptions() {
      ended = true;
      // A stopped Repeater is done for its consumer: the subscription completes.
      for (const stops of active.values()) for (const stop of [...stops]) stop();
    },

    async close() {
      live.endSubscriptions();
      closed = true;
      if (redis) await redis.quit();
    },
  };
  return live;
}

/** Looks up the ids each message carries; drops events whose record is gone or in another account. */
async function toLiveEvents(db: Db, events: DomainEvent[]): Promise<LiveEvent[]> {
  const idsOf = (type: 'Submitter' | 'Submission') => [
    ...new Set(events.filter((e) => recordTypeOf(e.type) === type).map((e) => e.recordId)),
  ];
  const submitterIds = idsOf('Submitter');
  const submissionIds = idsOf('Submission');
  const [submitters, submissions] = await Promise.all([
    submitterIds.length
      ? db.submitter.findMany({
          where: { id: { in: submitterIds } },
          select: { id: true, accountId: true, submissionId: true, submission: { select: { templateId: true } } },
        })
      : [],
    submissionIds.length
      ? db.submission.findMany({
          where: { id: { in: submissionIds } },
          select: { id: true, accountId: true, templateId: true },
        })
      : [],
  ]);
  const submitterById = new Map(submitters.map((s) => [s.id, s]));
  const submissionById = new Map(submissions.map((s) => [s.id, s]));
  const messages: LiveEvent[] = [];
  for (const event of events) {
    const base = { type: event.type, accountId: event.accountId, at: event.at.toISOString() };
    const recordType = recordTypeOf(event.type);
    if (recordType === 'Submitter') {
      const submitter = submitterById.get(event.recordId);
      if (submitter?.accountId !== event.accountId) continue;
      messages.push({
        ...base,
        submitterId: submitter.id,
        submissionId: submitter.submissionId,
        templateId: submitter.submission.templateId,
      });
    } else if (recordType === 'Submission') {
      const submission = submissionById.get(event.recordId);
      if (submission?.accountId !== event.accountId) continue;
      messages.push({ ...base, submitterId: null, submissionId: submission.id, templateId: submission.templateId });
    } else {
      messages.push({ ...base, submitterId: null, submissionId: null, templateId: event.recordId });
    }
  }
  return messages;
}

interface RedisConnection {
  eventTarget: LiveEventTarget;
  publishClient: Redis;
  quit(): Promise<void>;
}

/**
 * Two Redis connections (a subscribing connection can do nothing else): one publishes, one
 * subscribes. ioredis reconnects with backoff and re-subscribes its channels by itself. Loaded on
 * first use, so an instance without REDIS_URL never loads ioredis.
 */
async function connectRedis(url: string, logger: FastifyBaseLogger): Promise<RedisConnection> {
  const [{ Redis }, { createRedisEventTarget }] = await Promise.all([
    import('ioredis'),
    import('@graphql-yoga/redis-event-target'),
  ]);
  const retryStrategy = (times: number) => Math.min(times * 200, 5000);
  // Publishing fails fast while Redis is away (the emit must not hang); subscribing waits for it
  // (its commands are never rejected, so the event target, which does not await them, cannot
  // leave a rejection unhandled).
  const publishClient = new Redis(url, { retryStrategy, maxRetriesPerRequest: 1, connectionName: 'signet-publish' });
  const subscribeClient = new Redis(url, {
    retryStrategy,
    maxRetriesPerRequest: null,
    connectionName: 'signet-subscribe',
  });
  let reported = false;
  for (const client of [publishClient, subscribeClient]) {
    client.on('error', (error: Error) => {
      // Once per outage, not once per reconnection attempt.
      if (!reported) logger.warn({ err: error }, 'Redis (REDIS_URL) unreachable; live events wait for it');
      reported = true;
    });
    client.on('ready', () => {
      if (reported) logger.info('Redis (REDIS_URL) reachable again');
      reported = false;
    });
  }
  return {
    eventTarget: createRedisEventTarget<CustomEvent<LiveEvent>>({
      publishClient,
      subscribeClient,
    }) as unknown as LiveEventTarget,
    publishClient,
    async quit() {
      // quit() would wait for the commands queued while Redis is away (a SUBSCRIBE waits forever):
      // a client that is not connected is just disconnected.
      await Promise.all(
        [publishClient, subscribeClient].map((c) =>
          c.status === 'ready' ? c.quit().catch(() => c.disconnect()) : c.disconnect(),
        ),
      );
    },
  };
}
