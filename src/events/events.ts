/**
 * Domain events: what happened to a submitter, submission or template, recorded by the services
 * in the transaction of the change (with the other side effects: SideEffects below) and
 * delivered to webhooks and GraphQL subscriptions (issue "Webhooks"). Event names and triggers:
 * ../shared/reference/docuseal-behaviour.md §6 (table "Webhook event triggers") and ../shared/DESIGN.md (`form.viewed`
 * on the first open only).
 */
import type { Db, Prisma } from '../db/client.ts';
import type { JobQueue } from '../jobs/job-queue.ts';
import { recordJobs, type OutboxJob } from '../jobs/outbox.ts';

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

/** The job that turns one event into webhook deliveries (src/webhooks/dispatch-event.ts). */
export const DISPATCH_EVENT_JOB = 'dispatch-event';

/** Serialised form of a DomainEvent in the job's data. */
export interface DispatchEventData {
  type: EventType;
  accountId: number;
  recordId: number;
  at: string;
}

/** Where events are also published for GraphQL subscriptions (src/events/pubsub.ts, LiveEvents). */
export interface LiveEventPublisher {
  publish(events: DomainEvent[]): Promise<void>;
}

/** What a change causes, collected while it runs and recorded in its transaction. */
export interface Effects {
  /** Background jobs (a signature request, a completion, an expiry...). */
  jobs: OutboxJob[];
  /** Domain events: their webhook dispatch is a job; they are published live once committed. */
  events: DomainEvent[];
}

/** An empty Effects. */
export const noEffects = (): Effects => ({ jobs: [], events: [] });

/**
 * The outbox jobs of `effects`: its jobs, then one `dispatch-event` job per event, kept only if an
 * enabled webhook endpoint of the event's account subscribes to its type when the change is
 * written (so endpoints receive the events raised while they subscribe, and an account without
 * webhooks costs no job), deduplicated by the event's `key`.
 */
export function effectJobs(effects: Effects): OutboxJob[] {
  return [
    ...effects.jobs,
    ...effects.events.map((event): OutboxJob => {
      const data: DispatchEventData = {
        type: event.type,
        accountId: event.accountId,
        recordId: event.recordId,
        at: event.at.toISOString(),
      };
      return {
        name: DISPATCH_EVENT_JOB,
        data,
        ...(event.key ? { uniqueKey: event.key } : {}),
        ifWebhook: { accountId: event.accountId, eventType: event.type },
      };
    }),
  ];
}

/** Prisma's interactive transaction options (milliseconds). */
export interface TransactionOptions {
  timeout?: number;
  maxWait?: number;
}

/**
 * How services make a change with side effects (the transactional outbox, src/jobs/outbox.ts,
 * docs/security.md "Side effects"): the change and the jobs and events it causes are written in
 * one database transaction; once it has committed, the jobs are relayed into the job store and
 * the events published live.
 */
export interface SideEffects {
  /**
   * Runs `change` in one transaction (Prisma's interactive transaction) with an empty Effects
   * to add to, then writes those effects into the outbox in the same transaction. After the
   * commit, hands them on (see committed()). A thrown error rolls everything back, effects too.
   * @returns what `change` returned
   */
  transaction<T>(
    change: (tx: Prisma.TransactionClient, effects: Effects) => Promise<T>,
    options?: TransactionOptions,
  ): Promise<T>;
  /**
   * Records effects that follow no other write (e.g. an expiry that came due), in one statement,
   * and hands them on.
   */
  emit(events: DomainEvent[], jobs?: OutboxJob[]): Promise<void>;
  /**
   * After a commit whose own statement wrote `effects` (effectJobs through selectOutboxRows, as
   * the submission create statement does): asks for the jobs to be relayed, and publishes the
   * events live; resolves once they are published (so that a caller's events reach subscribers
   * in the order of its calls). Never rejects (a failed live publication is logged by the publisher).
   */
  committed(effects: Effects): Promise<void>;
}

/**
 * The service's SideEffects.
 * @param deps.jobs the job queue whose relayOutbox() moves the outbox rows after each commit
 * @param deps.live where events are published live; omitted: not published (tools, tests of jobs)
 */
export function createSideEffects(deps: {
  db: Db;
  jobs: Pick<JobQueue, 'relayOutbox'>;
  live?: LiveEventPublisher | undefined;
}): SideEffects {
  const committed = async (effects: Effects): Promise<void> => {
    if (effects.jobs.length > 0 || effects.events.length > 0) deps.jobs.relayOutbox();
    if (effects.events.length > 0 && deps.live) await deps.live.publish(effects.events).catch(() => undefined);
  };
  return {
    async transaction(change, options) {
      let recorded: Effects = noEffects();
      const result = await deps.db.$transaction(async (tx) => {
        const effects = noEffects();
        const value = await change(tx, effects);
        await recordJobs(tx, effectJobs(effects));
        recorded = effects;
        return value;
      }, options);
      await committed(recorded);
      return result;
    },
    async emit(events, jobs = []) {
      const effects = { jobs, events };
      await recordJobs(deps.db, effectJobs(effects));
      await committed(effects);
    },
    committed,
  };
}
