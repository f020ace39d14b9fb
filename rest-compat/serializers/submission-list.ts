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
 * `format` is a fingerprint of the rendering statement (the statements: src/db/queries/submission-list-items.ts). Rendering 100 items costs PostgreSQL
 * ~5 ms (3 of them planning), reading them back ~0.9 ms. One statement reads the current items;
 * a second renders the others and stores each only if its generation is still the one its
 * snapshot rendered, without waiting for a row a writer holds (migration
 * 20261121200000_submission_list_items).
 */
import { LRUCache } from 'lru-cache';
import type { GraphQLContext } from '../../src/graphql/context.ts';
import { requireViewer } from '../../src/graphql/context.ts';
import {
  currentListItems,
  currentListItemVersions,
  renderListItems,
  type Row,
} from '../../src/db/queries/submission-list-items.ts';
import { perClient } from '../../src/db/turn-batch.ts';
import { RawJson } from '../gateway.ts';

/**
 * Item bytes by "<submission id>@<version>", per database (an LRU of at most 64 MB, ~40,000
 * items): a page whose items are all held costs one small statement and one copy of its bytes,
 * not decoding ~150 KB from PostgreSQL and encoding it again. A database never reuses a version,
 * so an entry is either exact or never asked for again.
 */
const itemBytesOf = perClient(
  (_db: object) =>
    new LRUCache<string, Buffer>({ maxSize: 64 * 1024 * 1024, sizeCalculation: (bytes) => bytes.length + 64 }),
);

const COMMA = Buffer.from(',');

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
    const itemBytes = itemBytesOf(context.db);
    const at = now.toISOString().replace('T', ' ').replace('Z', '');
    const rows = await currentListItemVersions(context.db, { accountId: account.id, ids, at });
    const unheld = rows.filter((row) => !itemBytes.has(`${row.id}@${row.version}`)).map((row) => row.id);
    const texts = new Map<number, Row>();
    if (unheld.length > 0) {
      for (const row of await currentListItems(context.db, unheld, at, account.id)) {
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
      for (const row of await renderListItems(context.db, missing, at, account.id))
        ready.set(row.id, { row, bytes: Buffer.from(row.item!) });
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
