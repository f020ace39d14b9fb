/**
 * The body of GET /submissions (reference/docuseal-behaviour.md §5.1, list form): each item is
 * serializeSubmissionListItem's JSON (src/docuseal-shapes/submission.ts) of the read model
 * loadSubmissionListReadModels gives (src/submissions/read-models.ts), the one renderer of list
 * items, the same as GraphQL's `RestSubmissionList` fragment through that serializer.
 *
 * Why a cache: a page is up to 100 submissions with their submitters, ~150 KB of JSON. Loading and
 * serializing it costs the service ~14 ms of CPU (Prisma's query and row mapping, then the
 * serializer), which one Node process cannot afford at 20 concurrent callers; a whole request for
 * a page served from the cache costs 0.45–0.6 ms (bench/README.md "Submissions"). So the
 * serializer's output is kept, as JSON text without the signed file URLs (they need the service's
 * secret and expire; the few completed items with an audit log or combined document are patched
 * per request):
 *   - in PostgreSQL (`submission_list_items`, one row per submission), shared by every instance
 *     and kept over restarts, under the one invalidation rule of src/db/queries/submission-list-items.ts:
 *     a kept item is served while its stamp (generation, account epoch, LIST_ITEM_FORMAT, stale_at)
 *     is the submission's current one;
 *   - and its bytes in this process (an LRU by row version), so a page whose items are all held
 *     costs one small statement and one copy of its bytes.
 * The route still runs its GraphQL operation for the filters, cursors and authorisation (it asks
 * for the page's `ids`); only the items of those ids are made here.
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import {
  currentListItems,
  listItemStamps,
  storeListItems,
  type ItemFiles,
  type ItemStamp,
  type RenderedItem,
  type StampsRequest,
} from '../../src/db/queries/submission-list-items.ts';
import { perClient } from '../../src/db/turn-batch.ts';
import { serializeSubmissionListItem, type SubmissionListData } from '../../src/docuseal-shapes/submission.ts';
import { serializeSubmitterBase } from '../../src/docuseal-shapes/submitter.ts';
import type { GraphQLContext } from '../../src/graphql/context.ts';
import { requireViewer } from '../../src/graphql/context.ts';
import { loadSubmissionListReadModels } from '../../src/submissions/read-models.ts';
import { roleName, SUBMISSION_FACTS, submissionStatus, submitterStatus } from '../../src/submissions/status.ts';
import { loadFolderNames, templateFolderName } from '../../src/templates/read-models.ts';
import { RawJson } from '../gateway.ts';

/**
 * Raise when a list item's JSON changes in a way the fingerprint below cannot see: a rule in a
 * function it does not include (the loader's private helpers in src/submissions/read-models.ts)
 * or one of the serializer's private helpers that FORMAT_SAMPLE does not reach.
 */
const LIST_ITEM_FORMAT_VERSION = 2;

/** A read model reaching every key of a list item (non-null values, a hidden preference). */
const FORMAT_SAMPLE: SubmissionListData = {
  id: 1,
  name: null,
  slug: 'slug',
  source: 'api',
  submittersOrder: 'preserved',
  expireAt: '2026-01-02T03:04:05.678Z',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:01.000Z',
  archivedAt: '2026-01-01T00:00:02.000Z',
  variables: { amount: 1.5 },
  status: 'pending',
  completedAt: '2026-01-01T00:00:03.000Z',
  auditLogUrl: 'audit',
  combinedDocumentUrl: 'combined',
  language: 'de',
  template: {
    id: 2,
    name: 'Template',
    externalId: 'ext',
    createdAt: '2026-01-01T00:00:04.000Z',
    updatedAt: '2026-01-01T00:00:05.000Z',
    folderName: 'A / B',
  },
  createdByUser: { id: 3, email: 'u@x.test', firstName: 'F', lastName: 'L' },
  submitters: [
    {
      id: 4,
      submissionId: 1,
      uuid: 'uuid',
      email: 's@x.test',
      slug: 'slug2',
      sentAt: '2026-01-01T00:00:06.000Z',
      openedAt: '2026-01-01T00:00:07.000Z',
      completedAt: null,
      declinedAt: null,
      createdAt: '2026-01-01T00:00:08.000Z',
      updatedAt: '2026-01-01T00:00:09.000Z',
      name: 'Name',
      phone: '+1',
      externalId: 'x1',
      metadata: { m: 1 },
      status: 'opened',
      preferences: { message: { subject: 's', body: 'b' }, send_email: true },
      role: 'First Party',
      language: 'ar',
    },
  ],
};

/** The exported functions an item is made with besides the serializer: the loader and its rules. */
const FORMAT_HELPERS = [
  serializeSubmitterBase,
  loadSubmissionListReadModels,
  submissionStatus,
  ...Object.values(SUBMISSION_FACTS),
  submitterStatus,
  roleName,
  templateFolderName,
  loadFolderNames,
];

/**
 * The fingerprint of a list item's rendering (`format` of a kept item): the source of the
 * serializer and of FORMAT_HELPERS, the serializer's output for FORMAT_SAMPLE, and
 * LIST_ITEM_FORMAT_VERSION. A changed serializer, loader or status rule gives another
 * fingerprint, and every kept item is rendered again on its next read.
 * @param parts the functions and version to fingerprint (the defaults are the service's)
 * @returns 16 hex digits
 */
export function listItemFormat(
  parts: {
    serialize: (s: SubmissionListData) => unknown;
    helpers?: readonly ((...args: never[]) => unknown)[];
    version?: number;
  } = { serialize: serializeSubmissionListItem },
): string {
  const helpers = parts.helpers ?? FORMAT_HELPERS;
  return createHash('sha256')
    .update(String(parts.version ?? LIST_ITEM_FORMAT_VERSION))
    .update(`\n${parts.serialize.toString()}`)
    .update(helpers.map((helper) => `\n${helper.toString()}`).join(''))
    .update(`\n${JSON.stringify(parts.serialize(FORMAT_SAMPLE))}`)
    .digest('hex')
    .slice(0, 16);
}

/** The fingerprint of this service's list items (listItemFormat). */
export const LIST_ITEM_FORMAT = listItemFormat();

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

/** A timestamp as the statements take it: UTC, no zone ("2026-11-25 09:15:40.123"). */
const sqlTimestamp = (date: Date) => date.toISOString().replace('T', ' ').replace('Z', '');

type Entry = { files: ItemFiles; bytes: Buffer };
type FileRef = { uuid: string; filename: string };

/**
 * Renders the items of `ids` with the one renderer and keeps those with a stamp (`stamps`, read
 * before the loading begins, so a write the read models miss has moved the generation on).
 * @returns the items by id; ids no longer in the account are left out
 */
async function renderItems(
  context: Pick<GraphQLContext, 'db'>,
  request: StampsRequest,
  stamps: readonly ItemStamp[],
): Promise<Map<number, Entry>> {
  // URLs are signed per request: the loader's signer records which file each output is.
  const outputs = new Map<string, FileRef>();
  const files = {
    url(file: FileRef): string {
      const token = `file ${outputs.size}`;
      outputs.set(token, { uuid: file.uuid, filename: file.filename });
      return token;
    },
  };
  const startedAt = Date.now();
  const models = await loadSubmissionListReadModels({ db: context.db, files }, request);
  const stampOf = new Map(stamps.map((stamp) => [stamp.id, stamp]));
  const entries = new Map<number, Entry>();
  const rendered: RenderedItem[] = [];
  for (const model of models) {
    if (!model) continue; // gone since the page was chosen

    const audit = model.auditLogUrl === null ? undefined : outputs.get(model.auditLogUrl);
    const combined = model.combinedDocumentUrl === null ? undefined : outputs.get(model.combinedDocumentUrl);
    const item = JSON.stringify(
      serializeSubmissionListItem({ ...model, auditLogUrl: null, combinedDocumentUrl: null }),
    );
    const itemFiles: ItemFiles = {
      audit_uuid: audit?.uuid ?? null,
      audit_filename: audit?.filename ?? null,
      combined_uuid: combined?.uuid ?? null,
      combined_filename: combined?.filename ?? null,
    };
    entries.set(model.id, { files: itemFiles, bytes: Buffer.from(item) });
    const stamp = stampOf.get(model.id);
    // No kept row (rendered on every read), or current when stamped and written since (stored next time).
    if (!stamp?.generation || !stamp.epoch) continue;
    // The only input that changes without a write: an expire_at still ahead when the loading began.
    const expireAt = model.expireAt === null ? null : new Date(model.expireAt);
    const staleAt = expireAt && expireAt.getTime() > startedAt ? sqlTimestamp(expireAt) : null;
    rendered.push({ id: model.id, generation: stamp.generation, epoch: stamp.epoch, item, staleAt, ...itemFiles });
  }
  const itemBytes = itemBytesOf(context.db);
  for (const { id, version } of await storeListItems(context.db, rendered, request.format))
    itemBytes.set(`${id}@${version}`, entries.get(id)!.bytes);
  return entries;
}

/**
 * The `{data, pagination}` body of GET /submissions for the submissions `ids` (a page the
 * `submissions` GraphQL query chose, so already scoped to the caller's account), as UTF-8 JSON.
 * Built as bytes: on this machine turning a ~150 KB string into the socket's bytes costs several
 * times what copying the items' bytes once does (bench/README.md, issue 4).
 * @param ids ascending submission ids of the viewer's account
 * @param decorate adds keys to each item (`include=fields`); the kept bytes are then parsed and
 *   written again for this request only
 */
export async function renderSubmissionList(
  context: Pick<GraphQLContext, 'db' | 'files' | 'viewer'>,
  ids: number[],
  pagination: { count: number; next: number | null; prev: number | null },
  decorate?: (item: Record<string, unknown>) => Record<string, unknown>,
): Promise<RawJson> {
  const parts: Buffer[] = [Buffer.from('{"data":[')];
  if (ids.length > 0) {
    const { account } = requireViewer(context);
    const itemBytes = itemBytesOf(context.db);
    const request: StampsRequest = {
      accountId: account.id,
      ids,
      at: sqlTimestamp(new Date()),
      format: LIST_ITEM_FORMAT,
    };
    const stamps = await listItemStamps(context.db, request);
    const ready = new Map<number, Entry>();
    const unheld: number[] = [];
    for (const stamp of stamps) {
      if (stamp.version === null) continue;
      const bytes = itemBytes.get(`${stamp.id}@${stamp.version}`);
      if (bytes) ready.set(stamp.id, { files: stamp, bytes });
      else unheld.push(stamp.id);
    }
    if (unheld.length > 0) {
      // Current when stamped; left out here if written since (then rendered below).
      for (const row of await currentListItems(context.db, { ...request, ids: unheld })) {
        const bytes = Buffer.from(row.item);
        itemBytes.set(`${row.id}@${row.version}`, bytes);
        ready.set(row.id, { files: row, bytes });
      }
    }
    const missing = ids.filter((id) => !ready.has(id));
    if (missing.length > 0)
      for (const [id, entry] of await renderItems(context, { ...request, ids: missing }, stamps)) ready.set(id, entry);
    let first = true;
    for (const id of ids) {
      const entry = ready.get(id);
      if (!entry) continue; // gone since the page was chosen
      if (!first) parts.push(COMMA);
      first = false;
      const { files, bytes } = entry;
      if (!files.audit_uuid && !files.combined_uuid && !decorate) {
        parts.push(bytes);
        continue;
      }
      // Signed file URLs are minted per request: patch the item's text (and add what `decorate` adds).
      const item = JSON.parse(bytes.toString()) as Record<string, unknown>;
      if (files.audit_uuid)
        item.audit_log_url = context.files.url({ uuid: files.audit_uuid, filename: files.audit_filename! });
      if (files.combined_uuid)
        item.combined_document_url = context.files.url({
          uuid: files.combined_uuid,
          filename: files.combined_filename!,
        });

      parts.push(Buffer.from(JSON.stringify(decorate ? decorate(item) : item)));
    }
  }
  parts.push(Buffer.from(`],"pagination":${JSON.stringify(pagination)}}`));
  return new RawJson(Buffer.concat(parts));
}
