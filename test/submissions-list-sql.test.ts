/**
 * GET /submissions items come from one renderer, serializeSubmissionListItem over
 * loadSubmissionListReadModels (rest-compat/serializers/submission-list.ts), and are kept in
 * submission_list_items under one invalidation rule (src/db/queries/submission-list-items.ts).
 * The answer must be exactly what the GraphQL fragment + the serializer make of the same page, in
 * every state a submission and a submitter can be in (pending, sent, opened, completed with an
 * audit log, declined, expired, archived), with nested folders, prefilled metadata, per-submitter
 * messages (hidden from preferences) and variables. Kept items are the serializer's text without
 * signed URLs; an unchanged item is served from the cache (no loading, no write), and every kind of
 * write (a submitter's change, a completion, the submission's, a template rename, a folder move, a
 * user rename, raw SQL), the passing of expire_at and another serializer all change the next
 * answer; another instance on the same database (or a restarted one) serves the kept items without
 * loading and sees every write; a read never waits for a writer's lock nor stores what the writer
 * is changing.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import {
  serializeSubmissionListItem,
  SUBMISSION_LIST_FRAGMENT,
  type SubmissionListData,
} from '../src/docuseal-shapes/submission.ts';
import { LIST_ITEM_FORMAT, listItemFormat, renderSubmissionList } from '../rest-compat/serializers/submission-list.ts';
import { createDb } from '../src/db/client.ts';
import type { GraphQLContext } from '../src/graphql/context.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;

const api = (method: string, path: string, body?: unknown) => rest(t.url, alice.apiKey, method, path, body);

async function template(name: string, folder?: string): Promise<number> {
  const { status, json } = await api('POST', '/templates/pdf', {
    name,
    ...(folder ? { folder_name: folder } : {}),
    documents: [{ name: 'doc', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [
      { name: 'First Name', role: 'First Party', areas: [{ x: 72, y: 72, w: 150, h: 24, page: 1 }] },
      { name: 'Second Name', role: 'Second Party', areas: [{ x: 72, y: 200, w: 150, h: 24, page: 1 }] },
    ],
  });
  expect(status, JSON.stringify(json)).toBe(200);
  return json.id;
}

async function submission(body: Record<string, unknown>): Promise<number> {
  const { status, json } = await api('POST', '/submissions', body);
  expect(status, JSON.stringify(json)).toBe(200);
  return json[0].submission_id;
}

const LIST_QUERY = `query {
  submissions(limit: 100) { nodes { ...RestSubmissionList } pagination { count next prev } }
} ${SUBMISSION_LIST_FRAGMENT}`;

/** Jobs written by the changes so far (completions, emails) relayed from the outbox and run. */
async function jobsDone() {
  await t.outboxRelayed(30_000);
  await t.app.jobs.waitForIdle({ timeoutMs: 60_000 });
}

/** File URLs carry a signature and an expiry minted per request: compare what they point at. */
const withoutTokens = (json: string) => json.replace(/\/file\/[^/"]+\//g, '/file/TOKEN/');

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Ελληνικά & Co', email: 'alice@list-sql.test' });
  const nested = await template('Nested «lease»', 'Housing / Leases / 2026');
  const plain = await template('Plain');
  await submission({
    template_id: nested,
    submitters: [
      {
        role: 'First Party',
        email: 'pending@x.test',
        name: 'Zoë',
        metadata: { n: 1, nested: { a: [1, 'b'] } },
        message: { subject: 'S', body: 'B' },
      },
      { role: 'Second Party', email: 'second@x.test', phone: '+14155550123' },
    ],
  });
  await submission({
    template_id: plain,
    name: 'Named one',
    variables: { amount: 12.5, who: 'Ünal' },
    submitters: [{ email: 'random@x.test', external_id: 'ext-1' }],
    order: 'random',
  });
  await submission({
    template_id: plain,
    submitters: [
      { role: 'First Party', email: 'done1@x.test', completed: true, values: { 'First Name': 'Ada' } },
      { role: 'Second Party', email: 'done2@x.test', completed: true },
    ],
  });
  const declined = await submission({
    template_id: nested,
    submitters: [{ email: 'declined@x.test' }, { email: 'other@x.test' }],
  });
  const expired = await submission({
    template_id: plain,
    submitters: [{ email: 'expired@x.test' }],
    send_email: false,
  });
  const archived = await submission({ template_id: plain, submitters: [{ email: 'archived@x.test' }] });
  await jobsDone();
  expect((await api('PUT', `/submissions/${expired}`, { expire_at: '2020-01-01T00:00:00Z' })).status).toBe(200);
  expect((await api('DELETE', `/submissions/${archived}`)).status).toBe(200);
  // Declining and opening come from the signing form; set them directly here.
  await t.db.$executeRaw`UPDATE submitters SET declined_at = now() AT TIME ZONE 'UTC', decline_reason = 'no'
      WHERE submission_id = ${declined} AND email = 'declined@x.test'`;
  await t.db.$executeRaw`UPDATE submitters SET opened_at = now() AT TIME ZONE 'UTC' WHERE email = 'pending@x.test'`;
});
afterAll(async () => {
  await t?.close();
});

describe('GET /submissions items', () => {
  it('equals the GraphQL fragment through the serializer, key for key, in every state', async () => {
    const { status, json } = await api('GET', '/submissions?limit=100');
    expect(status).toBe(200);
    expect(openApiErrors('get', '/submissions', json)).toEqual([]);
    const { body } = await graphql(t.url, LIST_QUERY, { key: alice.apiKey });
    expect(body.errors).toBeUndefined();
    const expected = {
      data: body.data.submissions.nodes.map((n: SubmissionListData) => serializeSubmissionListItem(n)),
      pagination: body.data.submissions.pagination,
    };
    expect(json.data).toHaveLength(6);
    expect(new Set(json.data.map((s: { status: string }) => s.status))).toEqual(
      new Set(['pending', 'completed', 'declined', 'expired']),
    );
    expect(json.data.some((s: { archived_at: string | null }) => s.archived_at)).toBe(true);
    expect(json.data.map((s: { template: { folder_name: string } }) => s.template.folder_name)).toContain(
      'Housing / Leases / 2026',
    );
    const completed = json.data.find((s: { status: string }) => s.status === 'completed');
    expect(completed.audit_log_url).toMatch(/^http.*\/file\//);
    expect(withoutTokens(JSON.stringify(json))).toBe(withoutTokens(JSON.stringify(expected)));
    // The URL patched in Node serves the same audit log as the GraphQL one.
    const expectedAudit = expected.data.find((s: { id: number }) => s.id === completed.id).audit_log_url as string;
    const [a, b] = await Promise.all([fetch(completed.audit_log_url), fetch(expectedAudit)]);
    expect(a.status).toBe(200);
    expect(Buffer.from(await a.arrayBuffer()).equals(Buffer.from(await b.arrayBuffer()))).toBe(true);
  });

  it('keeps filters and cursors of the GraphQL query', async () => {
    const all = (await api('GET', '/submissions?limit=100')).json.data.map((s: { id: number }) => s.id);
    const page = await api('GET', `/submissions?limit=2&after=${all[1]}`);
    expect(page.json.data.map((s: { id: number }) => s.id)).toEqual(all.slice(2, 4));
    expect(page.json.pagination).toEqual({ count: 2, next: all[3], prev: all[2] });
    expect((await api('GET', '/submissions?status=declined')).json.data).toHaveLength(1);
    expect((await api('GET', '/submissions?q=ZO')).json.data).toHaveLength(1);
    // q is a substring, not a pattern: % and _ match only themselves.
    expect((await api('GET', '/submissions?q=%25')).json.data).toHaveLength(0);
    expect((await api('GET', '/submissions?q=pending_x')).json.data).toHaveLength(0);
    expect((await api('GET', '/submissions?q=pending%40x')).json.data).toHaveLength(1);
    expect((await api('GET', '/submissions?after=999999')).json).toEqual({
      data: [],
      pagination: { count: 0, next: null, prev: null },
    });
  });
});

interface KeptItem {
  submission_id: number;
  generation: string;
  rendered_generation: string | null;
  format: string | null;
  item: string | null;
  audit_log_file_uuid: string | null;
  xmin: string;
}

const kept = async (): Promise<Map<number, KeptItem>> => {
  const rows = await t.db.$queryRawUnsafe<KeptItem[]>(
    `SELECT c.submission_id, c.generation::text, c.rendered_generation::text, c.format, c.item,
            c.audit_log_file_uuid, c.xmin::text
       FROM submission_list_items c JOIN submissions s ON s.id = c.submission_id WHERE s.account_id = $1`,
    alice.accountId,
  );
  return new Map(rows.map((row) => [row.submission_id, row]));
};

/** The list as GraphQL + the serializer make it (never from the kept items). */
async function expectedList(): Promise<string> {
  const { body } = await graphql(t.url, LIST_QUERY, { key: alice.apiKey });
  expect(body.errors).toBeUndefined();
  return withoutTokens(
    JSON.stringify({
      data: body.data.submissions.nodes.map((n: SubmissionListData) => serializeSubmissionListItem(n)),
      pagination: body.data.submissions.pagination,
    }),
  );
}

async function listed(): Promise<{ text: string; data: Record<string, any>[] }> {
  const { status, json } = await api('GET', '/submissions?limit=100');
  expect(status).toBe(200);
  return { text: withoutTokens(JSON.stringify(json)), data: json.data };
}

/** The statements of one list request: was anything loaded (the read models' Prisma query) or stored? */
async function listedWithStatements() {
  await t.resetQueries();
  const result = await listed();
  await t.settleQueries();
  const loaded = t.queries.filter((sql) => sql.includes('"public"."submissions"')).length;
  const stored = t.queries.filter((sql) => sql.includes('UPDATE submission_list_items')).length;
  return { ...result, loaded, stored };
}

const byId = (data: Record<string, any>[], id: number) => data.find((s) => s.id === id)!;

describe('kept list items', () => {
  it("are the serializer's text without signed URLs, stored by a read, served from the cache by the next", async () => {
    const first = await listed();
    const after = await kept();
    expect(after.size).toBe(6);
    for (const row of after.values()) {
      expect(row.item).not.toBeNull();
      expect(row.rendered_generation).toBe(row.generation);
      expect(row.format).toBe(LIST_ITEM_FORMAT);
      // Signed URLs expire: they are made per request, never kept.
      expect(row.item).not.toContain('/file/');
    }
    const completed = first.data.find((s) => s.status === 'completed')!;
    expect(completed.audit_log_url).toMatch(/\/file\//);
    expect(JSON.parse(after.get(completed.id)!.item!).audit_log_url).toBeNull();
    expect(after.get(completed.id)!.audit_log_file_uuid).not.toBeNull();

    const second = await listedWithStatements();
    expect(second.text).toBe(first.text);
    expect(second.text).toBe(await expectedList());
    // Served from the cache: nothing loaded, nothing written.
    expect(second.loaded).toBe(0);
    expect(second.stored).toBe(0);
    const again = await kept();
    for (const [id, row] of again) expect(row.xmin, `item ${id} was rewritten`).toBe(after.get(id)!.xmin);
  });

  it('change with every kind of write to what they show; the other items stay served from the cache', async () => {
    await listed();
    const { data } = await listed();
    const pending = data.find((s) => s.submitters.some((x: { email: string }) => x.email === 'pending@x.test'))!;
    const submitter = pending.submitters[0];
    const expectChange = async (check: (data: Record<string, any>[]) => void, only?: number) => {
      const before = await kept();
      const now = await listedWithStatements();
      check(now.data);
      expect(now.loaded).toBeGreaterThanOrEqual(1);
      expect(now.text).toBe(await expectedList());
      if (only === undefined) return;
      // Only the written item was rendered and stored again.
      const after = await kept();
      for (const [id, row] of after)
        if (id === only) expect(row.xmin, `item ${id} was not stored again`).not.toBe(before.get(id)!.xmin);
        else expect(row.xmin, `item ${id} was rewritten`).toBe(before.get(id)!.xmin);
    };

    // A submitter's change and the submission's (through the API), raw SQL writes to submitters.
    expect((await api('PUT', `/submitters/${submitter.id}`, { name: 'Zoë Renamed' })).status).toBe(200);
    await expectChange((d) => expect(byId(d, pending.id).submitters[0].name).toBe('Zoë Renamed'), pending.id);
    expect((await api('PUT', `/submissions/${pending.id}`, { name: 'Renamed submission' })).status).toBe(200);
    await expectChange((d) => expect(byId(d, pending.id).name).toBe('Renamed submission'), pending.id);
    await t.db.$executeRaw`UPDATE submitters SET phone = '+14155550199' WHERE id = ${submitter.id}`;
    await expectChange((d) => expect(byId(d, pending.id).submitters[0].phone).toBe('+14155550199'), pending.id);
    await t.db.$executeRaw`DELETE FROM submitters WHERE id = ${pending.submitters[1].id}`;
    await expectChange((d) => expect(byId(d, pending.id).submitters).toHaveLength(1), pending.id);

    // A completion: the status, completed_at and the audit log's URL (written by the completion's jobs).
    expect((await api('PUT', `/submitters/${submitter.id}`, { completed: true })).status).toBe(200);
    await jobsDone();
    await expectChange((d) => {
      expect(byId(d, pending.id).status).toBe('completed');
      expect(byId(d, pending.id).submitters[0].status).toBe('completed');
      expect(byId(d, pending.id).audit_log_url).toMatch(/\/file\//);
    }, pending.id);

    // The template's name, its folder (moved, then the folder renamed), the creating user's name:
    // every item of the account is rendered again.
    const templateId = pending.template.id;
    expect((await api('PUT', `/templates/${templateId}`, { name: 'Nested renamed' })).status).toBe(200);
    await expectChange((d) => expect(byId(d, pending.id).template.name).toBe('Nested renamed'));
    expect((await api('PUT', `/templates/${templateId}`, { folder_name: 'Housing / Flats' })).status).toBe(200);
    await expectChange((d) => expect(byId(d, pending.id).template.folder_name).toBe('Housing / Flats'));
    await t.db
      .$executeRaw`UPDATE folders SET name = 'Homes' WHERE name = 'Housing' AND account_id = ${alice.accountId}`;
    await expectChange((d) => expect(byId(d, pending.id).template.folder_name).toBe('Homes / Flats'));
    await t.db.$executeRaw`UPDATE users SET first_name = 'Alicia' WHERE account_id = ${alice.accountId}`;
    await expectChange((d) => expect(new Set(d.map((s) => s.created_by_user.first_name))).toEqual(new Set(['Alicia'])));
  });

  it('turn expired when expire_at passes, with no write', async () => {
    const { data } = await listed();
    const pending = data.find((s) => s.status === 'pending')!;
    // Far enough ahead that the update and the two lists below finish before it on a busy machine.
    const expireAt = new Date(Date.now() + 4000);
    expect((await api('PUT', `/submissions/${pending.id}`, { expire_at: expireAt.toISOString() })).status).toBe(200);
    expect(byId((await listed()).data, pending.id).status).toBe('pending');
    const fromCache = await listedWithStatements();
    expect(byId(fromCache.data, pending.id).status).toBe('pending');
    expect(fromCache.loaded).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, expireAt.getTime() - Date.now() + 50));
    const expired = await listedWithStatements();
    expect(byId(expired.data, pending.id).status).toBe('expired');
    expect(expired.loaded).toBeGreaterThanOrEqual(1);
    expect(expired.text).toBe(await expectedList());
    expect((await api('PUT', `/submissions/${pending.id}`, { expire_at: null })).status).toBe(200);
  });

  it('a submission without its kept row is still listed (rendered every time)', async () => {
    const before = await listed();
    const id = before.data[0]!.id;
    await t.db.$executeRaw`DELETE FROM submission_list_items WHERE submission_id = ${id}`;
    expect((await listed()).text).toBe(before.text);
    expect((await listed()).text).toBe(before.text);
    await t.db.$executeRaw`INSERT INTO submission_list_items (submission_id) VALUES (${id})`;
    expect((await listed()).text).toBe(before.text);
  });

  it('made by another serializer are rendered again; the format follows the serializer', async () => {
    const before = await listed();
    await t.db.$executeRaw`UPDATE submission_list_items SET item = '{"stale":true}', format = 'older'
      WHERE submission_id IN (SELECT id FROM submissions WHERE account_id = ${alice.accountId})`;
    const after = await listed();
    expect(after.text).toBe(before.text);
    for (const row of (await kept()).values()) {
      expect(row.item).not.toContain('stale');
      expect(row.format).toBe(LIST_ITEM_FORMAT);
    }
    // A changed serializer, a changed helper of it, or a raised version give another fingerprint.
    expect(listItemFormat()).toBe(LIST_ITEM_FORMAT);
    const changed = (s: SubmissionListData) => ({ ...serializeSubmissionListItem(s), extra: null });
    expect(listItemFormat({ serialize: changed })).not.toBe(LIST_ITEM_FORMAT);
    expect(listItemFormat({ serialize: serializeSubmissionListItem, helpers: [() => 1] })).not.toBe(LIST_ITEM_FORMAT);
    expect(listItemFormat({ serialize: serializeSubmissionListItem, version: 99 })).not.toBe(LIST_ITEM_FORMAT);
  });

  it('pages asked for in one turn share the statement that reads their stamps; each gets its own items', async () => {
    const { data } = await listed();
    const ids: number[] = data.map((s) => s.id);
    const context = {
      db: t.db,
      files: t.app.files.signer,
      viewer: { account: { id: alice.accountId } },
    } as unknown as GraphQLContext;
    const pages = [ids.slice(0, 2), ids.slice(1, 5), ids];
    const alone = await Promise.all(
      pages.map(async (page) =>
        (
          (await renderSubmissionList(context, page, { count: page.length, next: null, prev: null })).text as Buffer
        ).toString(),
      ),
    );
    await t.resetQueries();
    const together = await Promise.all(
      pages.map((page) => renderSubmissionList(context, page, { count: page.length, next: null, prev: null })),
    );
    await t.settleQueries();
    expect(together.map((body) => withoutTokens((body.text as Buffer).toString()))).toEqual(alone.map(withoutTokens));
    expect(
      together.map((body) => JSON.parse((body.text as Buffer).toString()).data.map((s: { id: number }) => s.id)),
    ).toEqual(pages);
    expect(t.queries.filter((sql) => sql.includes('END AS generation'))).toHaveLength(1);
  });

  it('another instance on the same database serves the kept items at once and sees every write', async () => {
    const statements: string[] = [];
    // A second service's client: its own pool and its own (empty) in-memory cache, as after a restart.
    const other = createDb(t.database.url, { onQuery: (sql) => statements.push(sql) });
    try {
      const context = {
        db: other,
        files: t.app.files.signer,
        viewer: { account: { id: alice.accountId } },
      } as unknown as GraphQLContext;
      const page = async () => {
        const ids: number[] = (await listed()).data.map((s) => s.id);
        statements.length = 0;
        const body = await renderSubmissionList(context, ids, { count: ids.length, next: null, prev: null });
        return JSON.parse((body.text as Buffer).toString()).data as Record<string, any>[];
      };
      const first = await page();
      expect(statements.filter((sql) => sql.includes('"public"."submissions"'))).toEqual([]);
      const target = first.find((s) => s.status === 'pending')!;
      expect((await api('PUT', `/submissions/${target.id}`, { name: 'Written elsewhere' })).status).toBe(200);
      expect(byId(await page(), target.id).name).toBe('Written elsewhere');
    } finally {
      await other.$disconnect();
    }
  });

  it("never wait for a writer's lock, nor store what it is changing", async () => {
    const { data } = await listed();
    const target = data[0]!;
    await t.db.$executeRaw`UPDATE submitters SET name = 'Committed' WHERE id = ${target.submitters[0].id}`;
    const writer = new pg.Client({ connectionString: t.database.url });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      await writer.query(`UPDATE submitters SET name = 'In flight' WHERE id = $1`, [target.submitters[0].id]);
      // The item is stale (the committed change) and its row is held by the writer: the read
      // renders from what is committed, answers at once (it would hang here if it waited for the
      // lock) and stores nothing.
      const during = await listed();
      expect(during.data[0]!.submitters[0].name).toBe('Committed');
      await writer.query('COMMIT');
    } finally {
      await writer.end();
    }
    const row = (await kept()).get(target.id)!;
    expect(row.rendered_generation).not.toBe(row.generation);
    expect((await listed()).data[0]!.submitters[0].name).toBe('In flight');
    const stored = (await kept()).get(target.id)!;
    expect(stored.rendered_generation).toBe(stored.generation);
  });
});
