/**
 * GET /submissions list items built by PostgreSQL (reference/docuseal-behaviour.md §5.1, list
 * form; the same JSON as serializeSubmissionListItem over the GraphQL `RestSubmissionList`
 * fragment, which test/submissions-list-sql.test.ts checks item by item).
 *
 * Why SQL: a page is up to 100 submissions with their submitters, ~150 KB of JSON. Resolving it
 * field by field through Prisma, Pothos and graphql-js cost ~60 ms of CPU per page (profile in
 * bench/README.md, issue 4), which one Node process cannot afford at 20 concurrent callers. The
 * route still runs its GraphQL operation for the filters, cursors and authorisation (it asks for
 * the page's `ids`); only the rendering of those ids is done here, in one statement whose rows are
 * JSON text passed through to the response unparsed. Signed file URLs need the service's secret,
 * so the few completed submissions with an audit log or combined document are patched in Node.
 *
 * Rendered items are kept (table `submission_list_items`, one row per submission) and rendered
 * again only when stale: triggers bump the row's `generation` on every write to the submission,
 * its submitters or its completed documents, and the account's `submission_list_epoch` on changes
 * to templates, folders and users; a pending submission's item is stale from its expire_at; and
 * `format` is a fingerprint of the rendering statement. Rendering 100 items costs PostgreSQL
 * ~5 ms (3 of them planning), reading them back ~0.9 ms. One statement reads the current items;
 * a second renders the others and stores each only if its generation is still the one its
 * snapshot rendered, without waiting for a row a writer holds (migration
 * 20261121200000_submission_list_items).
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { GraphQLContext } from '../../src/graphql/context.ts';
import { requireViewer } from '../../src/graphql/context.ts';
import type DataLoader from 'dataloader';
import { sqlPool } from '../../src/db/client.ts';
import { perClient, turnBatch } from '../../src/db/turn-batch.ts';
import { RawJson } from '../gateway.ts';

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

/**
 * Item bytes by "<submission id>@<version>", per database (an LRU of at most 64 MB, ~40,000
 * items): a page whose items are all held costs one small statement and one copy of its bytes,
 * not decoding ~150 KB from PostgreSQL and encoding it again. A database never reuses a version,
 * so an entry is either exact or never asked for again.
 */
const itemBytesOf = perClient(
  (_pool: object) =>
    new LRUCache<string, Buffer>({ maxSize: 64 * 1024 * 1024, sizeCalculation: (bytes) => bytes.length + 64 }),
);

interface Row {
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

const COMMA = Buffer.from(',');

interface VersionsRequest {
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
  (pool: import('pg').Pool): DataLoader<VersionsRequest, Row[]> =>
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
 * The `{data, pagination}` body of GET /submissions for the submissions `ids` (a page the
 * `submissions` GraphQL query chose, so already scoped to the caller's account), as UTF-8 JSON.
 * Built as bytes: on this machine turning a ~150 KB string into the socket's bytes costs several
 * times what copying the items' bytes once does (bench/README.md, issue 4).
 * @param ids ascending submission ids of the viewer's account
 * @param now the time `expired` is judged at (default: now)
 */
export async function renderSubmissionList(
  context: Pick<GraphQLContext, 'db' | 'files' | 'viewer'>,
  ids: number[],
  pagination: { count: number; next: number | null; prev: number | null },
  now = new Date(),
): Promise<RawJson> {
  const parts: Buffer[] = [Buffer.from('{"data":[')];
  if (ids.length > 0) {
    const { account } = requireViewer(context);
    const pool = sqlPool(context.db);
    const itemBytes = itemBytesOf(pool);
    const values = [ids, now.toISOString().replace('T', ' ').replace('Z', ''), account.id, FORMAT];
    const rows = await versionLookups(pool).load({ accountId: account.id, ids, at: values[1] as string });
    const unheld = rows.filter((row) => !itemBytes.has(`${row.id}@${row.version}`)).map((row) => row.id);
    const texts = new Map<number, Row>();
    if (unheld.length > 0) {
      const fetched = await pool.query<Row>({
        name: 'rest_submission_list_current',
        text: CURRENT_ITEMS_SQL,
        values: [unheld, ...values.slice(1)],
      });
      for (const row of fetched.rows) {
        itemBytes.set(`${row.id}@${row.version}`, Buffer.from(row.item!));
        texts.set(row.id, row);
      }
    }
    // Current in the first statement: held, or just fetched (possibly a newer current version).
    const ready = new Map<number, { row: Row; bytes: Buffer }>();
    for (const row of rows) {
      const latest = texts.get(row.id) ?? row;
      const bytes = itemBytes.get(`${latest.id}@${latest.version}`);
      if (bytes) ready.set(row.id, { row: latest, bytes });
    }
    const missing = ids.filter((id) => !ready.has(id));
    if (missing.length > 0) {
      const rendered = await pool.query<Row>({
        name: 'rest_submission_list_items',
        text: LIST_ITEMS_SQL,
        values: [missing, ...values.slice(1)],
      });
      for (const row of rendered.rows) ready.set(row.id, { row, bytes: Buffer.from(row.item!) });
    }
    let first = true;
    for (const id of ids) {
      const entry = ready.get(id);
      if (!entry) continue; // gone since the page was chosen
      if (!first) parts.push(COMMA);
      first = false;
      const { row, bytes } = entry;
      if (!row.audit_uuid && !row.combined_uuid) {
        parts.push(bytes);
        continue;
      }
      // Signed file URLs are minted per request: patch the item's text.
      const item = JSON.parse(bytes.toString()) as Record<string, unknown>;
      if (row.audit_uuid)
        item.audit_log_url = context.files.url({ uuid: row.audit_uuid, filename: row.audit_filename! });
      if (row.combined_uuid)
        item.combined_document_url = context.files.url({ uuid: row.combined_uuid, filename: row.combined_filename! });
      parts.push(Buffer.from(JSON.stringify(item)));
    }
  }
  parts.push(Buffer.from(`],"pagination":${JSON.stringify(pagination)}}`));
  return new RawJson(Buffer.concat(parts));
}
