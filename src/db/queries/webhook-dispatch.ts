/**
 * The statements of the `dispatch-event` job (src/webhooks/dispatch-event.ts): the endpoints an
 * event goes to, and the idempotent INSERT of its deliveries. Plain SQL (it runs for every
 * event), those of the dispatches running at once in one statement each (src/db/turn-batch.ts).
 */
import type DataLoader from 'dataloader';
import { sqlPool, type Db } from '../client.ts';
import { perClient, turnBatch } from '../turn-batch.ts';

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
      INSERT INTO webhook_deliveries (uuid, account_id, endpoint_id, event_type, record_type, record_id, payload,
                                      created_at, updated_at)
      SELECT uuid, account_id, endpoint_id, event_type, record_type, record_id, payload,
             now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC'
        FROM input
      ON CONFLICT (uuid) DO NOTHING
      RETURNING id, uuid, status, attempt_count, endpoint_id)
    SELECT id, uuid, status, attempt_count, endpoint_id FROM inserted
    UNION ALL
    SELECT d.id, d.uuid, d.status, d.attempt_count, d.endpoint_id
      FROM webhook_deliveries d JOIN input i ON i.uuid = d.uuid
    ORDER BY id`,
};

export interface NewDelivery {
  uuid: string;
  endpointId: number;
  accountId: number;
  eventType: string;
  recordType: string;
  recordId: number;
  /** JSON text. */
  payload: string;
}

export interface StoredDelivery {
  id: number;
  status: string;
  attemptCount: number;
  endpointId: number;
}

export interface DispatchStatements {
  /** The ids of the endpoints an event goes to. */
  endpoints: DataLoader<{ accountId: number; type: string }, number[]>;
  /** Stores an event's deliveries (those not stored yet); resolves with all of them, stored now or before, by id. */
  deliveries: DataLoader<NewDelivery[], StoredDelivery[]>;
}

/**
 * The dispatch's statements on `db`'s pool, those of the jobs
 * running at once in one statement each (src/db/turn-batch.ts).
 */
export const dispatchStatements = perClient((db: Db): DispatchStatements => {
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
      const { rows } = await pool.query<{
        id: number;
        uuid: string;
        status: string;
        attempt_count: number;
        endpoint_id: number;
      }>({
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
        rows.map((row) => [
          row.uuid,
          { id: row.id, status: row.status, attemptCount: row.attempt_count, endpointId: row.endpoint_id },
        ]),
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
