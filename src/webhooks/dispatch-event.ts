/**
 * The `dispatch-event` job (src/events/events.ts records one per domain event, in the change's
 * transaction, when an endpoint of the account subscribes to it): turns an event into webhook deliveries (reference/docuseal-behaviour.md §9 "Fan-out").
 *
 * For the endpoints of the event's account that are enabled and subscribe to its type, it builds
 * the payload once (src/webhooks/payloads.ts) and serialises it once, writes one
 * webhook_deliveries row per endpoint and enqueues one `deliver-webhook` job per delivery
 * (attempt 0, unique per delivery, carrying that serialisation), all in the same turn of the
 * event loop, so the job queue stores them in one statement.
 *
 * Its own statements are plain SQL (it runs for every event): the endpoints, then one INSERT of
 * every delivery returning the deliveries to enqueue; those of the dispatches running at once go
 * in one statement each (src/db/turn-batch.ts). Only the payload goes through Prisma (the REST layer's
 * GraphQL operation).
 *
 * Idempotent: a delivery's uuid is derived from the dispatch job's id and the endpoint's id (a
 * name-based UUID, RFC 9562 §5.5), and webhook_deliveries.uuid is unique, so a re-run of the
 * same dispatch job (after a crash or a retry) inserts nothing twice and re-enqueues only what
 * the unique job keys already hold.
 */
import { createHash } from 'node:crypto';
import type DataLoader from 'dataloader';
import type { GraphQLSchema } from 'graphql';
import type { Config } from '../config.ts';
import { sqlPool, type Db } from '../db/client.ts';
import { DISPATCH_EVENT_JOB, recordTypeOf, type DispatchEventData } from '../events/events.ts';
import type { ContextFactory } from '../graphql/context.ts';
import type { JobLogger, JobQueue, JobRun } from '../jobs/job-queue.ts';
import { defineDeliverWebhookJob, enqueueAttempt, type DeliveryDeps } from './deliver-webhook.ts';
import { createAccountContexts, createPayloadBuilder, type PayloadBuilder } from './payloads.ts';
import { perClient, turnBatch } from '../db/turn-batch.ts';

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

/**
 * $1 accounts, $2 event types (same order): for each pair, the account's enabled endpoints
 * subscribed to the type, by id.
 */
const SUBSCRIBED_ENDPOINTS = {
  name: 'signet_webhook_subscribed_endpoints_batch',
  text: `
    SELECT i.n, e.id
      FROM unnest($1::int[], $2::text[]) WITH ORDINALITY AS i(account_id, type, n)
      JOIN webhook_endpoints e ON e.account_id = i.account_id AND e.disabled_at IS NULL AND i.type = ANY(e.events)
     ORDER BY i.n, e.id`,
};

/**
 * One row per delivery (arrays in the same order): $1 uuid, $2 endpoint, $3 account, $4 event
 * type, $5 record type, $6 record id, $7 payload (JSON text). Inserts the deliveries not stored
 * yet (uuid unique) and returns every delivery of the list, new (from the INSERT) or stored
 * before (the statement's snapshot does not see the new rows, so none comes twice), by id.
 */
const INSERT_DELIVERIES = {
  name: 'signet_webhook_insert_deliveries_batch',
  text: `
    WITH input AS (
      SELECT * FROM unnest($1::uuid[], $2::int[], $3::int[], $4::text[], $5::text[], $6::int[], $7::jsonb[])
        AS i(uuid, endpoint_id, account_id, event_type, record_type, record_id, payload)),
    inserted AS (
      INSERT INTO webhook_deliveries (uuid, account_id, endpoint_id, event_type, record_type, record_id, payload, created_at, updated_at)
      SELECT uuid, account_id, endpoint_id, event_type, record_type, record_id, payload, now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC' FROM input
      ON CONFLICT (uuid) DO NOTHING
      RETURNING id, uuid, status, attempt_count)
    SELECT id, uuid, status, attempt_count FROM inserted
    UNION ALL
    SELECT d.id, d.uuid, d.status, d.attempt_count FROM webhook_deliveries d JOIN input i ON i.uuid = d.uuid
    ORDER BY id`,
};

interface NewDelivery {
  uuid: string;
  endpointId: number;
  accountId: number;
  eventType: string;
  recordType: string;
  recordId: number;
  /** JSON text. */
  payload: string;
}

interface StoredDelivery {
  id: number;
  status: string;
  attemptCount: number;
}

interface DispatchStatements {
  /** The ids of the endpoints an event goes to. */
  endpoints: DataLoader<{ accountId: number; type: string }, number[]>;
  /** Stores an event's deliveries (those not stored yet); resolves with all of them, stored now or before, by id. */
  deliveries: DataLoader<NewDelivery[], StoredDelivery[]>;
}

/** The dispatch's statements on `db`'s pool, those of the jobs running at once in one statement each (src/db/turn-batch.ts). */
const dispatchStatements = perClient((db: Db): DispatchStatements => {
  const pool = sqlPool(db);
  return {
    endpoints: turnBatch(async (events) => {
      const { rows } = await pool.query<{ n: string; id: number }>({
        ...SUBSCRIBED_ENDPOINTS,
        values: [events.map((e) => e.accountId), events.map((e) => e.type)],
      });
      const ids = events.map((): number[] => []);
      for (const row of rows) ids[Number(row.n) - 1]!.push(row.id);
      return ids;
    }),
    deliveries: turnBatch(async (lists) => {
      const all = lists.flat();
      const column = <T>(pick: (d: NewDelivery) => T) => all.map(pick);
      const { rows } = await pool.query<{ id: number; uuid: string; status: string; attempt_count: number }>({
        ...INSERT_DELIVERIES,
        values: [
          column((d) => d.uuid),
          column((d) => d.endpointId),
          column((d) => d.accountId),
          column((d) => d.eventType),
          column((d) => d.recordType),
          column((d) => d.recordId),
          column((d) => d.payload),
        ],
      });
      const byUuid = new Map(
        rows.map((row) => [row.uuid, { id: row.id, status: row.status, attemptCount: row.attempt_count }]),
      );
      return lists.map((list) =>
        list
          .map((d) => byUuid.get(d.uuid))
          .filter((d): d is StoredDelivery => d !== undefined)
          .sort((a, b) => a.id - b.id),
      );
    }),
  };
});

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
      .map((d) => enqueueAttempt(deps.jobs, { deliveryId: d.id, attempt: 0, body })),
  );
}

/**
 * Registers the webhook jobs (`dispatch-event`, `deliver-webhook`) on a queue, building payloads
 * with `schema` in contexts from `contextFactory` (src/app.ts calls this once).
 */
export function defineWebhookJobs(
  jobs: JobQueue,
  options: {
    db: Db;
    config: Pick<Config, 'appUrl' | 'webhooks'>;
    logger: JobLogger;
    schema: GraphQLSchema;
    contextFactory: ContextFactory;
  },
): void {
  const { db, logger } = options;
  const payloads = createPayloadBuilder({
    schema: options.schema,
    db,
    appUrl: options.config.appUrl,
    contextFor: createAccountContexts(options.contextFactory, db),
  });
  const deliveryDeps: DeliveryDeps = { db, jobs, payloads, config: options.config.webhooks, logger };
  // 10 at once: a dispatch waits for its payload and two statements; at 5 a burst of events queued here (bench:webhooks).
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
