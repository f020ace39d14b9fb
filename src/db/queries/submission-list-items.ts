/**
 * The statements of GET /submissions' list items (the REST layer's serializers/submission-list.ts
 * assembles the response from their rows): items rendered to JSON text by PostgreSQL and kept in
 * `submission_list_items`, kept fresh by the triggers of migration
 * 20261121200000_submission_list_items (see that file's comment for the invalidation rules).
 */
import { createHash } from 'node:crypto';
import type DataLoader from 'dataloader';
import type pg from 'pg';
import { sqlPool, type Db } from '../client.ts';
import { perClient, turnBatch } from '../turn-batch.ts';

/** `timestamp(3)` (UTC) as the DateTime scalar writes it: 2026-11-21T15:54:27.000Z. */
const ts = (column: string) => `to_char(${column}, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * Renders (and stores) the items of $1 (submission ids, int[]); $2: now (timestamp, UTC) for
 * the `expired` status, $3: the account's id, $4: FORMAT. Rows ascending by id; key order as
 * serializeSubmissionListItem writes them.
 */
const LIST_ITEMS_SQL = `
WITH RECURSIVE epoch AS (
  SELECT a.submission_list_epoch AS value FROM accounts a WHERE a.id = $3
), page AS (
  -- LEFT: a submission without its row (not made by the trigger) is still listed, just not kept.
  SELECT s.*, COALESCE(c.generation, 0) AS list_generation
    FROM submissions s LEFT JOIN submission_list_items c ON c.submission_id = s.id
   WHERE s.id = ANY($1::int[])
), chain AS (
  SELECT f.id AS leaf, f.name, f.parent_folder_id, 0 AS depth
    FROM folders f WHERE f.id IN (SELECT t.folder_id FROM templates t WHERE t.id IN (SELECT template_id FROM page))
  UNION ALL
  SELECT c.leaf, p.name, p.parent_folder_id, c.depth + 1
    FROM chain c JOIN folders p ON p.id = c.parent_folder_id WHERE c.depth < 64
), folder_names AS (
  SELECT leaf, string_agg(name, ' / ' ORDER BY depth DESC) AS full_name FROM chain GROUP BY leaf
), rendered AS (
  SELECT s.id, s.list_generation,
  CASE WHEN s.completed_at IS NULL AND s.expire_at > $2::timestamp THEN s.expire_at END AS stale_at,
  json_build_object(
    'id', s.id,
    'name', COALESCE(s.name, t.name),
    'slug', s.slug,
    'source', s.source,
    'submitters_order', s.submitters_order,
    'expire_at', ${ts('s.expire_at')},
    'created_at', ${ts('s.created_at')},
    'updated_at', ${ts('s.updated_at')},
    'archived_at', ${ts('s.archived_at')},
    'variables', s.variables,
    'audit_log_url', NULL,
    'combined_document_url', NULL,
    'status', CASE
      WHEN s.completed_at IS NOT NULL THEN 'completed'
      WHEN EXISTS (SELECT 1 FROM submitters d WHERE d.submission_id = s.id AND d.declined_at IS NOT NULL) THEN 'declined'
      WHEN s.expire_at IS NOT NULL AND s.expire_at <= $2::timestamp THEN 'expired'
      ELSE 'pending' END,
    'completed_at', ${ts('s.completed_at')},
    'submitters', COALESCE((
      SELECT json_agg(json_build_object(
        'id', x.id,
        'submission_id', x.submission_id,
        'uuid', x.uuid,
        'email', x.email,
        'slug', x.slug,
        'sent_at', ${ts('x.sent_at')},
        'opened_at', ${ts('x.opened_at')},
        'completed_at', ${ts('x.completed_at')},
        'declined_at', ${ts('x.declined_at')},
        'created_at', ${ts('x.created_at')},
        'updated_at', ${ts('x.updated_at')},
        'name', x.name,
        'phone', x.phone,
        'external_id', x.external_id,
        'metadata', x.metadata,
        'status', CASE
          WHEN x.declined_at IS NOT NULL THEN 'declined'
          WHEN x.completed_at IS NOT NULL THEN 'completed'
          WHEN x.opened_at IS NOT NULL THEN 'opened'
          WHEN x.sent_at IS NOT NULL THEN 'sent'
          ELSE 'awaiting' END,
        'application_key', x.external_id,
        'preferences', x.preferences - 'message',
        'role', (SELECT r->>'name' FROM jsonb_array_elements(s.template_submitters) r WHERE r->>'uuid' = x.role_uuid::text LIMIT 1)
      ) ORDER BY x.id)
      FROM submitters x WHERE x.submission_id = s.id), '[]'::json),
    'template', CASE WHEN t.id IS NULL THEN NULL ELSE json_build_object(
      'id', t.id,
      'name', t.name,
      'external_id', t.external_id,
      'created_at', ${ts('t.created_at')},
      'updated_at', ${ts('t.updated_at')},
      'folder_name', CASE WHEN t.folder_id IS NULL THEN 'Default' ELSE COALESCE(fn.full_name, '') END
    ) END,
    'created_by_user', CASE WHEN u.id IS NULL THEN NULL ELSE json_build_object(
      'id', u.id, 'email', u.email, 'first_name', u.first_name, 'last_name', u.last_name
    ) END
  )::text AS item,
  audit.uuid AS audit_uuid, audit.filename AS audit_filename,
  combined.uuid AS combined_uuid, combined.filename AS combined_filename
FROM page s
LEFT JOIN templates t ON t.id = s.template_id
LEFT JOIN folder_names fn ON fn.leaf = t.folder_id
LEFT JOIN users u ON u.id = s.created_by_user_id
LEFT JOIN LATERAL (
  SELECT f.uuid::text AS uuid, f.filename FROM completed_documents cd JOIN stored_files f ON f.id = cd.file_id
   WHERE cd.submission_id = s.id AND cd.kind = 'audit_log' AND s.completed_at IS NOT NULL ORDER BY cd.id LIMIT 1
) audit ON true
LEFT JOIN LATERAL (
  SELECT f.uuid::text AS uuid, f.filename FROM completed_documents cd JOIN stored_files f ON f.id = cd.file_id
   WHERE cd.submission_id = s.id AND cd.kind = 'combined' AND s.completed_at IS NOT NULL ORDER BY cd.id LIMIT 1
) combined ON true
), stored AS (
  UPDATE submission_list_items c
     SET item = r.item, rendered_generation = r.list_generation, rendered_epoch = (SELECT value FROM epoch),
         format = $4, stale_at = r.stale_at,
         audit_log_file_uuid = r.audit_uuid, audit_log_filename = r.audit_filename,
         combined_file_uuid = r.combined_uuid, combined_filename = r.combined_filename
    FROM rendered r
   WHERE c.submission_id = r.id AND c.generation = r.list_generation
     AND c.submission_id IN (
       SELECT l.submission_id FROM submission_list_items l
        WHERE l.submission_id IN (SELECT id FROM rendered) ORDER BY l.submission_id FOR UPDATE SKIP LOCKED)
  RETURNING c.submission_id
)
SELECT id, item, audit_uuid, audit_filename, combined_uuid, combined_filename FROM rendered ORDER BY id`;

/** Fingerprint of the rendering: items stored by another version of this statement are rendered again. */
const FORMAT = createHash('sha256').update(LIST_ITEMS_SQL).digest('hex').slice(0, 16);

/** Conditions for a kept item of $1 (ids) to be current at $2 (now) for account $3 and format $4. */
const CURRENT = `
c.submission_id = ANY($1::int[]) AND c.item IS NOT NULL AND c.format = $4
   AND c.rendered_generation = c.generation
   AND c.rendered_epoch = (SELECT a.submission_list_epoch FROM accounts a WHERE a.id = $3)
   AND (c.stale_at IS NULL OR c.stale_at > $2::timestamp)`;

/**
 * A kept item's version: its row version (xmin, new at every write of the row) with the
 * generation it was rendered at. Two readings with the same version have the same item text.
 */
const VERSION = `c.xmin::text || ':' || c.rendered_generation::text`;

/**
 * The current kept items of a page, without their text: the service has most of them in memory
 * already (see `itemBytes`). A separate statement from the rendering because it is cheap to plan:
 * PostgreSQL plans the rendering statement afresh for most executions (~3 ms here), and a page
 * whose items are all current skips it.
 */
const CURRENT_VERSIONS_SQL = `
SELECT c.submission_id AS id, ${VERSION} AS version,
       c.audit_log_file_uuid AS audit_uuid, c.audit_log_filename AS audit_filename,
       c.combined_file_uuid AS combined_uuid, c.combined_filename
  FROM submission_list_items c
 WHERE ${CURRENT}`;

/** The text of current kept items the service does not hold yet (same parameters). */
const CURRENT_ITEMS_SQL = `
SELECT c.submission_id AS id, ${VERSION} AS version, c.item,
       c.audit_log_file_uuid AS audit_uuid, c.audit_log_filename AS audit_filename,
       c.combined_file_uuid AS combined_uuid, c.combined_filename
  FROM submission_list_items c
 WHERE ${CURRENT}`;

/** A list item's row: its JSON text (or version only) and the completed documents to sign URLs for. */
export interface Row {
  id: number;
  /** The kept item's version (VERSION); absent from the rendering's rows. */
  version?: string;
  /** Absent from CURRENT_VERSIONS_SQL's rows. */
  item?: string;
  audit_uuid: string | null;
  audit_filename: string | null;
  combined_uuid: string | null;
  combined_filename: string | null;
}

/** A page's ids, judged at `at` for `accountId`. */
export interface VersionsRequest {
  accountId: number;
  ids: number[];
  /** `now` as the statements take it (UTC, no zone). */
  at: string;
}

/**
 * The pool's CURRENT_VERSIONS_SQL, shared by the pages asked for in one turn of the event loop
 * (src/db/turn-batch.ts): one statement per account over the union of their ids, judged at the
 * latest `now` among them (a few milliseconds apart; an item expiring in between is only
 * rendered again a little early). Each request gets the rows of its own ids.
 */
const versionLookups = perClient(
  (pool: pg.Pool): DataLoader<VersionsRequest, Row[]> =>
    turnBatch<VersionsRequest, Row[]>(async (requests) => {
      const byAccount = new Map<number, VersionsRequest[]>();
      for (const request of requests)
        byAccount.set(request.accountId, [...(byAccount.get(request.accountId) ?? []), request]);
      const rowsById = new Map<number, Row>();
      await Promise.all(
        [...byAccount].map(async ([accountId, group]) => {
          const ids = [...new Set(group.flatMap((request) => request.ids))];
          const at = group
            .map((request) => request.at)
            .sort()
            .at(-1)!;
          const { rows } = await pool.query<Row>({
            name: 'rest_submission_list_versions',
            text: CURRENT_VERSIONS_SQL,
            values: [ids, at, accountId, FORMAT],
          });
          for (const row of rows) rowsById.set(row.id, row);
        }),
      );
      return requests.map((request) => request.ids.flatMap((id) => rowsById.get(id) ?? []));
    }),
);

/**
 * The current kept items of `ids` at `at` (UTC, no zone) for `accountId`, without their text:
 * id, version and completed documents (CURRENT_VERSIONS_SQL; the pages of one turn share it).
 */
export function currentListItemVersions(db: Db, request: VersionsRequest): Promise<Row[]> {
  return versionLookups(sqlPool(db)).load(request);
}

/** The text of the current kept items of `ids` (CURRENT_ITEMS_SQL). */
export async function currentListItems(db: Db, ids: number[], at: string, accountId: number): Promise<Row[]> {
  const { rows } = await sqlPool(db).query<Row>({
    name: 'rest_submission_list_current',
    text: CURRENT_ITEMS_SQL,
    values: [ids, at, accountId, FORMAT],
  });
  return rows;
}

/** Renders (and keeps, when still current) the items of `ids` (LIST_ITEMS_SQL); rows ascending by id. */
export async function renderListItems(db: Db, ids: number[], at: string, accountId: number): Promise<Row[]> {
  const { rows } = await sqlPool(db).query<Row>({
    name: 'rest_submission_list_items',
    text: LIST_ITEMS_SQL,
    values: [ids, at, accountId, FORMAT],
  });
  return rows;
}
