/**
 * Domain events: what happened to a submitter, submission or template, raised by the services
 * after their transaction commits and delivered to webhooks and GraphQL subscriptions (issue
 * "Webhooks"). Event names and triggers: ../shared/reference/docuseal-behaviour.md §6 (table
 * "Webhook event triggers") and ../shared/DESIGN.md (`form.viewed` on the first open only).
 */
import type { JobQueue } from '../jobs/job-queue.ts';

export const EVENT_TYPES = [
  'form.viewed',
  'form.started',
  'form.completed',
  'form.declined',
  'submission.created',
  'submission.completed',
  'submission.expired',
  'submission.archived',
  'template.created',
  'template.updated',
  'template.archived',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** form.* events are about a submitter, submission.* about a submission, template.* about a template. */
export type EventRecordType = 'Submitter' | 'Submission' | 'Template';

export const recordTypeOf = (type: EventType): EventRecordType =>
  type.startsWith('form.') ? 'Submitter' : type.startsWith('submission.') ? 'Submission' : 'Template';

export interface DomainEvent {
  type: EventType;
  accountId: number;
  /** The submitter (form.*), submission (submission.*) or template (template.*) id. */
  recordId: number;
  /** When it happened (ISO 8601 in the payload's `timestamp`). */
  at: Date;
  /**
   * Idempotency key: emitting the same key twice delivers the event once (e.g.
   * `form.completed:<submitterId>` from a completion job that may run again). Default: none,
   * every emit is a new event (e.g. template.updated on every PUT).
   */
  key?: string;
}

/** Where services send events, after commit. */
export interface EventSink {
  emit(events: DomainEvent[]): Promise<void>;
}

/** The job that turns one event into webhook deliveries and subscription messages. */
export const DISPATCH_EVENT_JOB = 'dispatch-event';

/** Serialised form of a DomainEvent in the job's data. */
export interface DispatchEventData {
  type: EventType;
  accountId: number;
  recordId: number;
  at: string;
}

/** Where the sink also publishes events for GraphQL subscriptions (src/events/pubsub.ts, LiveEvents). */
export interface LiveEventPublisher {
  publish(events: DomainEvent[]): Promise<void>;
}

/**
 * The event sink of the service: one persisted `dispatch-event` job per event (so a restart
 * loses none), deduplicated by `key`, whose handler (the webhooks module) delivers webhooks; and,
 * at the same time, the events published live to GraphQL subscribers (`live`, never throwing).
 * @param live the instance's LiveEvents; omitted (unit tests of other modules): jobs only
 * @param subscribed for each event, whether a webhook endpoint subscribes to it now
 *   (src/webhooks/dispatch-event.ts subscribedEvents): jobs only for those, so endpoints receive
 *   the events raised while they exist and subscribe; omitted: a job for every event
 * @throws the job store's or the check's error when the database is unreachable (the live
 *   publication is still attempted)
 */
export function createJobEventSink(
  jobs: JobQueue,
  live?: LiveEventPublisher,
  subscribed?: (events: readonly DomainEvent[]) => Promise<boolean[]>,
): EventSink {
  return {
    async emit(events) {
      const enqueue = async () => {
        const wanted = subscribed ? await subscribed(events) : events.map(() => true);
        for (const [index, event] of events.entries()) {
          if (!wanted[index]) continue;
          const data: DispatchEventData = { type: event.type, accountId: event.accountId, recordId: event.recordId, at: event.at.toISOString() };
          await jobs.enqueue(DISPATCH_EVENT_JOB, data, event.key ? { uniqueKey: event.key } : {});
        }
      };
      // Side by side: subscribers need not wait for the job rows.
      const [enqueued] = await Promise.allSettled([enqueue(), live?.publish(events)]);
      if (enqueued.status === 'rejected') throw enqueued.reason;
    },
  };
}
