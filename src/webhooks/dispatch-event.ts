/**
 * The `dispatch-event` job (src/events/events.ts records one per domain event, in the change's
 * transaction, when an endpoint of the account subscribes to it): turns an event into webhook
 * deliveries (reference/docuseal-behaviour.md §9 "Fan-out").
 *
 * For the endpoints of the event's account that are enabled and subscribe to its type, it builds
 * the payload once (src/webhooks/payloads.ts) and serialises it once, writes one
 * webhook_deliveries row per endpoint and enqueues one `deliver-webhook` job per delivery
 * (attempt 0, unique per delivery, carrying that serialisation), all in the same turn of the
 * event loop, so the job queue stores them in one statement.
 *
 * Its own statements are plain SQL (it runs for every event; src/db/queries/webhook-dispatch.ts):
 * the endpoints, then one INSERT of every delivery returning the deliveries to enqueue; those of
 * the dispatches running at once go in one statement each (src/db/turn-batch.ts). The payload is
 * src/webhooks/payloads.ts's.
 *
 * Idempotent: a delivery's uuid is derived from the dispatch job's id and the endpoint's id (a
 * name-based UUID, RFC 9562 §5.5), and webhook_deliveries.uuid is unique, so a re-run of the
 * same dispatch job (after a crash or a retry) inserts nothing twice and re-enqueues only what
 * the unique job keys already hold.
 */
import { createHash } from 'node:crypto';
import type { Config } from '../config.ts';
import type { Db } from '../db/client.ts';
import { dispatchStatements } from '../db/queries/webhook-dispatch.ts';
import { DISPATCH_EVENT_JOB, recordTypeOf, type DispatchEventData } from '../events/events.ts';
import type { FileUrlSigner } from '../documents/file-urls.ts';
import type { JobLogger, JobQueue, JobRun } from '../jobs/job-queue.ts';
import { defineDeliverWebhookJob, enqueueAttempt, type DeliveryDeps } from './deliver-webhook.ts';
import { createPayloadBuilder, type PayloadBuilder } from './payloads.ts';

/** Namespace of delivery uuids (a fixed random UUID). */
const DELIVERY_NAMESPACE = Buffer.from('5b0c3f0e9a6d4e2f8c1b7a3d2e4f6a81', 'hex');

/**
 * The uuid of the delivery of dispatch `eventId` to endpoint `endpointId`: a version-5
 * (SHA-1, name-based) UUID of "<eventId>:<endpointId>", the same on every run.
 */
export function deliveryUuid(eventId: string, endpointId: number): string {
  const hash = createHash('sha1').update(DELIVERY_NAMESPACE).update(`${eventId}:${endpointId}`).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

export interface DispatchDeps {
  db: Db;
  jobs: JobQueue;
  payloads: PayloadBuilder;
  logger: JobLogger;
}

/**
 * Dispatches one event (the job handler): see the module comment.
 * @param job the dispatch job's run; its id names the event
 */
export async function dispatchEvent(
  deps: DispatchDeps,
  event: DispatchEventData,
  job: Pick<JobRun, 'id'>,
): Promise<void> {
  const statements = dispatchStatements(deps.db);
  // Plain SQL: this runs for every event, and most accounts have no endpoint (issue 4's bench).
  const endpointIds = await statements.endpoints.load({ accountId: event.accountId, type: event.type });
  if (endpointIds.length === 0) return;

  const payload = await deps.payloads.build({
    type: event.type,
    accountId: event.accountId,
    recordId: event.recordId,
    at: new Date(event.at),
  });
  if (!payload) {
    deps.logger.info({ event }, 'webhook: the event’s record is gone; nothing to deliver');
    return;
  }
  const body = JSON.stringify(payload);
  const recordType = recordTypeOf(event.type);
  const deliveries = await statements.deliveries.load(
    endpointIds.map((endpointId) => ({
      uuid: deliveryUuid(job.id, endpointId),
      endpointId,
      accountId: event.accountId,
      eventType: event.type,
      recordType,
      recordId: event.recordId,
      payload: body,
    })),
  );
  // In one turn of the event loop: the queue stores these jobs in one statement.
  await Promise.all(
    deliveries
      .filter((d) => d.status === 'pending' && d.attemptCount === 0)
      .map((d) =>
        enqueueAttempt(deps.jobs, {
          deliveryId: d.id,
          attempt: 0,
          body,
          accountId: event.accountId,
          endpointId: d.endpointId,
        }),
      ),
  );
}

/**
 * Registers the webhook jobs (`dispatch-event`, `deliver-webhook`) on a queue, building payloads
 * from the domain read models with file URLs signed by `files` (src/app.ts calls this once).
 */
export function defineWebhookJobs(
  jobs: JobQueue,
  options: {
    db: Db;
    config: Pick<Config, 'appUrl' | 'webhooks'>;
    logger: JobLogger;
    files: Pick<FileUrlSigner, 'url'>;
    /** Told each recorded delivery attempt's outcome (DeliveryDeps.onAttempt). */
    onAttempt?: DeliveryDeps['onAttempt'];
  },
): void {
  const { db, logger } = options;
  const payloads = createPayloadBuilder({ db, files: options.files, appUrl: options.config.appUrl });
  const deliveryDeps: DeliveryDeps = {
    db,
    jobs,
    payloads,
    config: options.config.webhooks,
    logger,
    ...(options.onAttempt ? { onAttempt: options.onAttempt } : {}),
  };
  // 10 at once: a dispatch waits for its payload and two statements; at 5 a burst of events queued
  // here (bench:webhooks).
  jobs.define<DispatchEventData>(
    DISPATCH_EVENT_JOB,
    (event, run) => dispatchEvent({ db, jobs, payloads, logger }, event, run),
    {
      concurrency: 10,
      retry: { maxAttempts: 5, delayMs: (attempt) => 2 ** attempt * 1000 },
    },
  );
  defineDeliverWebhookJob(deliveryDeps);
}
