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

/**
 * The event sink of the service: one persisted `dispatch-event` job per event (so a restart
 * loses none), deduplicated by `key`. The handler is defined by the webhooks module.
 */
export function createJobEventSink(jobs: JobQueue): EventSink {
  return {
    async emit(events) {
      for (const event of events) {
        const data: DispatchEventData = { type: event.type, accountId: event.accountId, recordId: event.recordId, at: event.at.toISOString() };
        await jobs.enqueue(DISPATCH_EVENT_JOB, data, event.key ? { uniqueKey: event.key } : {});
      }
    },
  };
}
