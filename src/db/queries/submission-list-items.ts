/**
 * The statements of the kept GET /submissions list items (table `submission_list_items`, one row
 * per submission). The items are rendered in TypeScript, by serializeSubmissionListItem
 * (src/docuseal-shapes/submission.ts) from loadSubmissionListReadModels; these statements only
 * judge, read and store that text. The REST layer's serializers/submission-list.ts drives them.
 *
 * The one invalidation rule (the triggers of migration 20261121200000_submission_list_items keep
 * its inputs current): **a kept item is served while its stamp is the submission's current stamp**,
 * the stamp being
 *   - `generation`: bumped by a trigger in the same transaction as every write to the submission,
 *     its submitters or its completed documents;
 *   - the account's `submission_list_epoch`: bumped by a trigger on every change to a template,
 *     folder or user an item shows (rare; every item of the account is rendered again);
 *   - `format`: the fingerprint of the TypeScript serializer, its loader and the status rules
 *     (LIST_ITEM_FORMAT, given by the caller), so a changed serializer renders again;
 *   - `stale_at`: the item's expire_at when that was still ahead as its rendering began (the only
 *     input that changes without a write: a pending submission's status turns "expired" then).
 * The stamp is read before the read models are loaded and the item is stored only if the row's
 * generation is still that one, skipping rows a writer holds locked: a write racing a rendering
 * never leaves a stale item, and a reader never waits for (or deadlocks with) a writer.
 *
 * Why database-side stamps (triggers) rather than a version computed from the rows' xmin in the
 * page's statement (measured on the bench database, 10,000 submissions, a page of 100, one
 * connection: bench/README.md "Submissions"): the stamps are one primary-key read of 100 narrow
 * rows, 0.13 ms per page (measured on the statement this one replaced; the two are the same within
 * noise); the xmins of each submission, its submitters, template, folder chain and creator cost
 * 0.48–0.71 ms (3–5×) on every request. The stamps also hold across instances sharing the database
 * (a write on one is seen by the next read on any) and survive a restart.
 */
import type DataLoader from 'dataloader';
import type pg from 'pg';
import { sqlPool, type Db } from '../client.ts';
import { perClient, turnBatch } from '../turn-batch.ts';

/** A kept item's condition for being current (the rule above): $2 now (timestamp, UTC), $3 account, $4 format. */
const CURRENT = `c.item IS NOT NULL AND c.format = $4
   AND c.rendered_generation = c.generation
   AND c.rendered_epoch = (SELECT a.submission_list_epoch FROM accounts a WHERE a.id = $3)
   AND (c.stale_at IS NULL OR c.stale_at > $2::timestamp)`;

/**
 * A kept item's version: its row version (xmin, new at every write of the row) with the
 * generation it was rendered at. Two readings with the same version have the same item text.
 */
const VERSION = `c.xmin::text || ':' || c.rendered_generation::text`;

/**
 * The stamps of $1 (submission ids, int[]): a current item's version and its completed documents
 * to sign URLs for; for an item not current, the generation and the account's epoch a rendering
 * begun now is stamped with. Without the item text: the service holds most of it in memory
 * already. (The columns a row does not need are null: this statement runs for every page.)
 */
const STAMPS_SQL = `
SELECT c.submission_id AS id, s.version,
       CASE WHEN s.version IS NULL THEN c.generation::text END AS generation,
       CASE WHEN s.version IS NULL THEN
         (SELECT a.submission_list_epoch FROM accounts a WHERE a.id = $3)::text END AS epoch,
       c.audit_log_file_uuid AS audit_uuid, c.audit_log_filename AS audit_filename,
       c.combined_file_uuid AS combined_uuid, c.combined_filename
  FROM submission_list_items c, LATERAL (SELECT CASE WHEN ${CURRENT} THEN ${VERSION} END AS version) s
 WHERE c.submission_id = ANY($1::int[])`;

/** The text of the current kept items of $1 (same parameters as STAMPS_SQL). */
const CURRENT_ITEMS_SQL = `
SELECT c.submission_id AS id, ${VERSION} AS version, c.item,
       c.audit_log_file_uuid AS audit_uuid, c.audit_log_filename AS audit_filename,
       c.combined_file_uuid AS combined_uuid, c.combined_filename
  FROM submission_list_items c
 WHERE c.submission_id = ANY($1::int[]) AND ${CURRENT}`;

/**
 * Stores rendered items ($1 ids, $2 the generation and $9 the account epoch each was stamped with,
 * $3 texts, $4 stale_at, $5–$8 completed documents) with format $10, each only where the row's
 * generation is still the stamped one and no writer holds the row (SKIP LOCKED; locked in id
 * order). Returns the stored rows' new versions.
 */
const STORE_SQL = `
WITH rendered AS (
  SELECT * FROM unnest($1::int[], $2::bigint[], $3::text[], $4::timestamp[], $5::text[], $6::text[], $7::text[],
                       $8::text[], $9::bigint[])
    AS r(id, generation, item, stale_at, audit_uuid, audit_filename, combined_uuid, combined_filename, epoch)
)
UPDATE submission_list_items c
   SET item = r.item, rendered_generation = r.generation, rendered_epoch = r.epoch, format = $10,
       stale_at = r.stale_at, audit_log_file_uuid = r.audit_uuid, audit_log_filename = r.audit_filename,
       combined_file_uuid = r.combined_uuid, combined_filename = r.combined_filename
  FROM rendered r
 WHERE c.submission_id = r.id AND c.generation = r.generation
   AND c.submission_id IN (
     SELECT l.submission_id FROM submission_list_items l
      WHERE l.submission_id = ANY($1::int[]) ORDER BY l.submission_id FOR UPDATE SKIP LOCKED)
RETURNING c.submission_id AS id, ${VERSION} AS version`;

/** The completed documents of an item, whose URLs are signed per request (null: none). */
export interface ItemFiles {
  audit_uuid: string | null;
  audit_filename: string | null;
  combined_uuid: string | null;
  combined_filename: string | null;
}

/** A kept item's stamps (STAMPS_SQL). */
export interface ItemStamp extends ItemFiles {
  id: number;
  /** The kept item's version (VERSION) when it is current, else null. */
  version: string | null;
  /**
   * When not current: the generation and account epoch to stamp a rendering begun after this
   * reading with (bigint as text); null for a current item.
   */
  generation: string | null;
  epoch: string | null;
}

/** A current kept item with its text (CURRENT_ITEMS_SQL). */
export interface KeptItem extends ItemFiles {
  id: number;
  version: string;
  item: string;
}

/** A page's ids, judged at `at` for `accountId` and serializer `format`. */
export interface StampsRequest {
  accountId: number;
  ids: number[];
  /** `now` as the statements take it (UTC, no zone). */
  at: string;
  format: string;
}

/**
 * The pool's STAMPS_SQL, shared by the pages asked for in one turn of the event loop
 * (src/db/turn-batch.ts): one statement per account and format over the union of their ids,
 * judged at the latest `now` among them (a few milliseconds apart; an item expiring in between is
 * only rendered again a little early). Each request gets the rows of its own ids.
 */
const stampLookups = perClient(
  (pool: pg.Pool): DataLoader<StampsRequest, ItemStamp[]> =>
    turnBatch<StampsRequest, ItemStamp[]>(async (requests) => {
      const groups = new Map<string, StampsRequest[]>();
      for (const request of requests) {
        const key = `${request.accountId}/${request.format}`;
        groups.set(key, [...(groups.get(key) ?? []), request]);
      }
      const rows = new Map<string, Map<number, ItemStamp>>();
      await Promise.all(
        [...groups].map(async ([key, group]) => {
          const ids = [...new Set(group.flatMap((request) => request.ids))];
          const at = group
            .map((request) => request.at)
            .sort()
            .at(-1)!;
          const result = await pool.query<ItemStamp>({
            name: 'rest_submission_list_stamps',
            text: STAMPS_SQL,
            values: [ids, at, group[0]!.accountId, group[0]!.format],
          });
          rows.set(key, new Map(result.rows.map((row) => [row.id, row])));
        }),
      );
      return requests.map((request) => {
        const byId = rows.get(`${request.accountId}/${request.format}`)!;
        return request.ids.flatMap((id) => byId.get(id) ?? []);
      });
    }),
);

/**
 * The stamps of the kept items of `ids` at `at` (UTC, no zone) for `accountId` and `format`:
 * whether each is current (its version) and what a new rendering is stamped with (STAMPS_SQL;
 * the pages of one turn share it). Ids without a kept row (none made for them) are left out.
 */
export function listItemStamps(db: Db, request: StampsRequest): Promise<ItemStamp[]> {
  return stampLookups(sqlPool(db)).load(request);
}

/** The text of the current kept items of `ids` (CURRENT_ITEMS_SQL); an item no longer current is left out. */
export async function currentListItems(db: Db, request: StampsRequest): Promise<KeptItem[]> {
  const { rows } = await sqlPool(db).query<KeptItem>({
    name: 'rest_submission_list_current',
    text: CURRENT_ITEMS_SQL,
    values: [request.ids, request.at, request.accountId, request.format],
  });
  return rows;
}

/** An item rendered from read models loaded after its stamp was read. */
export interface RenderedItem extends ItemFiles {
  id: number;
  /** The generation and account epoch of the stamp read before its read models were loaded. */
  generation: string;
  epoch: string;
  item: string;
  /** When the item goes stale without a write (UTC, no zone), or null. */
  staleAt: string | null;
}

/**
 * Keeps rendered items (STORE_SQL), each only if its submission was not written since its stamp
 * and no writer holds its row.
 * @param format the serializer's fingerprint the items were rendered with
 * @returns the version of each item stored (the others are not kept)
 */
export async function storeListItems(
  db: Db,
  items: RenderedItem[],
  format: string,
): Promise<{ id: number; version: string }[]> {
  if (items.length === 0) return [];
  const column = <K extends keyof RenderedItem>(key: K) => items.map((item) => item[key]);
  const { rows } = await sqlPool(db).query<{ id: number; version: string }>({
    name: 'rest_submission_list_store',
    text: STORE_SQL,
    values: [
      column('id'),
      column('generation'),
      column('item'),
      column('staleAt'),
      column('audit_uuid'),
      column('audit_filename'),
      column('combined_uuid'),
      column('combined_filename'),
      column('epoch'),
      format,
    ],
  });
  return rows;
}
