/**
 * Permanent deletes (issue 15): `DELETE /templates/{id}?permanently=true`,
 * `DELETE /submissions/{id}?permanently=true` and the GraphQL `deleteTemplate` / `deleteSubmission`
 * (DocuSeal's Api::TemplatesController#destroy and Api::SubmissionsController#destroy:
 * `@record.destroy!` when `permanently` is true or "true", `{id, archived_at}` as the record had
 * them, no webhook). Checked in the database (the rows are gone) and in the storage directory
 * (bytes only the deleted records used are removed after the commit; bytes another template or
 * another row still uses stay), and across a stop between the commit and the removal.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { createLocalStorage, type FileStorage } from '../src/documents/storage.ts';
import { storeFile } from '../src/documents/store-file.ts';
import { removeUnusedBytes } from '../src/documents/unused-files.ts';
import { createSideEffects, DISPATCH_EVENT_JOB } from '../src/events/events.ts';
import { COMPLETE_SUBMISSION_JOB, completeSubmission } from '../src/signing/complete-submission.ts';
import { EXPIRE_SUBMISSION_JOB, SEND_REQUEST_JOB } from '../src/submissions/send-requests.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { strokePng } from './helpers/images.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, buyerSellerTemplateBody, drawPdf } from './helpers/pdfs.ts';
import { subscribeToEveryEvent } from './helpers/webhook-receiver.ts';

let t: TestApp;
let alice: CreatedAccount;
let bob: CreatedAccount;

const api = (method: string, route: string, body?: unknown) => rest(t.url, alice.apiKey, method, route, body);

async function ok(call: Promise<{ status: number; json: any }>): Promise<any> {
  const { status, json } = await call;
  expect(status, JSON.stringify(json)).toBe(200);
  return json;
}

/** A one-page PDF no other test draws (its bytes, so its storage key, are its own). */
const uniquePdf = async (label: string) => base64(await drawPdf([{ texts: [{ text: label, x: 72, y: 72 }] }]));

/** A template from a PDF; `pdf` defaults to one of its own. */
async function createTemplate(name: string, pdf?: string): Promise<number> {
  const body = buyerSellerTemplateBody(name, name);
  const file = pdf ?? (await uniquePdf(`${name} ${Math.random()}`));
  return (await ok(api('POST', '/templates/pdf', { ...body, documents: [{ name, file }] }))).id;
}

/** A submission of a buyer-seller template that both parties completed through the API (signature and image values). */
/** Makes each submission's images differ: equal bytes would share one stored file (content-addressed). */
let imageCounter = 0;

async function createCompletedSubmission(templateId: number): Promise<number> {
  imageCounter += 1;
  const json = await ok(
    api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [
        { role: 'Buyer', email: 'buyer@example.test', completed: true, values: { 'Full Name': 'B', Amount: 3 } },
        {
          role: 'Seller',
          email: 'seller@example.test',
          completed: true,
          values: {
            'Seller Signature': base64(await strokePng(300 + imageCounter, 80)),
            'Stamp Image': base64(await strokePng(120, 120 + imageCounter)),
          },
        },
      ],
    }),
  );
  return json[0].submission_id;
}

async function createPendingSubmission(templateId: number, extra: Record<string, unknown> = {}): Promise<any[]> {
  return ok(
    api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [
        { role: 'Buyer', email: 'buyer@example.test' },
        { role: 'Seller', email: 'seller@example.test' },
      ],
      ...extra,
    }),
  );
}

const query = async <T = any>(sql: string, ...values: unknown[]): Promise<T[]> =>
  t.db.$queryRawUnsafe<T[]>(sql, ...values);

/**
 * Waits until none of `keys` is in storage: the delete-unused-files job has run, a retry included
 * (a run that failed on a busy machine is due again 5 s later, which waitForIdle, counting jobs due
 * now, does not wait for). Fails after 30 s naming the keys left.
 */
async function bytesRemoved(keys: readonly string[], dataDir = t.config.dataDir): Promise<void> {
  await t.jobs.waitForIdle();
  const deadline = Date.now() + 30_000;
  for (;;) {
    const stored = storedKeys(dataDir);
    const left = keys.filter((key) => stored.has(key));
    if (left.length === 0) return;
    if (Date.now() > deadline) expect(left, 'bytes still stored 30 s after the delete').toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Every file under the storage directory, as storage keys. */
function storedKeys(dataDir = t.config.dataDir): Set<string> {
  const root = path.join(dataDir, 'files');
  if (!fs.existsSync(root)) return new Set();
  return new Set(
    (fs.readdirSync(root, { recursive: true }) as string[])
      .filter((key) => fs.statSync(path.join(root, key)).isFile())
      .map((key) => key.split(path.sep).join('/')),
  );
}

/** Storage keys of stored_files rows, by row id. */
async function keysOf(fileIds: number[]): Promise<string[]> {
  const rows = await query<{ storage_key: string }>(
    'SELECT DISTINCT storage_key FROM stored_files WHERE id = ANY($1::int[])',
    fileIds,
  );
  return rows.map((r) => r.storage_key).sort();
}

/** The stored files a submission uses: completed documents, and files its submitters' values name. */
async function filesOfSubmission(submissionId: number): Promise<number[]> {
  const rows = await query<{ id: number }>(
    `SELECT file_id AS id FROM completed_documents WHERE submission_id = $1
     UNION SELECT f.id FROM stored_files f, submitters s, jsonb_each_text(s.values) v
      WHERE s.submission_id = $1 AND f.uuid::text = v.value`,
    submissionId,
  );
  return rows.map((r) => r.id);
}

/** The stored files of a template: its documents and their preview images. */
async function filesOfTemplate(templateId: number): Promise<number[]> {
  const rows = await query<{ id: number }>(
    `SELECT file_id AS id FROM template_documents WHERE template_id = $1
     UNION SELECT p.image_file_id FROM document_previews p JOIN template_documents d ON d.file_id = p.file_id
      WHERE d.template_id = $1`,
    templateId,
  );
  return rows.map((r) => r.id);
}

/** Rows left of a submission, table by table (only the tables with any). */
async function rowsOfSubmission(submissionId: number): Promise<Record<string, number>> {
  const [row] = await query<Record<string, number>>(
    `SELECT (SELECT count(*)::int FROM submissions WHERE id = $1) AS submissions,
            (SELECT count(*)::int FROM submitters WHERE submission_id = $1) AS submitters,
            (SELECT count(*)::int FROM submission_events WHERE submission_id = $1) AS submission_events,
            (SELECT count(*)::int FROM completed_documents WHERE submission_id = $1) AS completed_documents,
            (SELECT count(*)::int FROM email_messages WHERE submission_id = $1) AS email_messages,
            (SELECT count(*)::int FROM submission_list_items WHERE submission_id = $1) AS submission_list_items,
            (SELECT count(*)::int FROM webhook_deliveries WHERE record_type = 'Submission' AND record_id = $1)
              AS webhook_deliveries`,
    submissionId,
  );
  return Object.fromEntries(Object.entries(row!).filter(([, n]) => n > 0));
}

async function rowsOfTemplate(templateId: number): Promise<Record<string, number>> {
  const [row] = await query<Record<string, number>>(
    `SELECT (SELECT count(*)::int FROM templates WHERE id = $1) AS templates,
            (SELECT count(*)::int FROM template_documents WHERE template_id = $1) AS template_documents,
            (SELECT count(*)::int FROM template_events WHERE template_id = $1) AS template_events,
            (SELECT count(*)::int FROM submissions WHERE template_id = $1) AS submissions,
            (SELECT count(*)::int FROM webhook_deliveries WHERE record_type = 'Template' AND record_id = $1)
              AS webhook_deliveries`,
    templateId,
  );
  return Object.fromEntries(Object.entries(row!).filter(([, n]) => n > 0));
}

/** Ids of the dispatch-event jobs (one per event raised: every type is subscribed to). */
async function dispatchJobs(): Promise<Set<string>> {
  await t.outboxRelayed();
  const rows = await query<{ id: string }>('SELECT id::text FROM agenda.jobs WHERE name = $1', DISPATCH_EVENT_JOB);
  return new Set(rows.map((r) => r.id));
}

/** Runs `action` and returns the events it raised (none expected from a permanent delete). */
async function eventsRaisedBy(action: () => Promise<unknown>): Promise<string[]> {
  const before = await dispatchJobs();
  await action();
  await t.outboxRelayed();
  const rows = await query<{ id: string; type: string; record: number }>(
    `SELECT id::text, data->'payload'->>'type' AS type, (data->'payload'->>'recordId')::int AS record
       FROM agenda.jobs WHERE name = $1`,
    DISPATCH_EVENT_JOB,
  );
  return rows.filter((r) => !before.has(r.id)).map((r) => `${r.type}:${r.record}`);
}

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Delete Ltd', email: 'alice@delete.test' });
  bob = await t.createAccount({ name: 'Other Ltd', email: 'bob@delete.test' });
  await subscribeToEveryEvent(t.db, alice.accountId);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('DELETE /submissions/{id}?permanently=true', () => {
  it('deletes the submission, its rows and the files only it used; the template and other submissions stay', {
    timeout: 120_000,
  }, async () => {
    const templateId = await createTemplate('Lease');
    const deleted = await createCompletedSubmission(templateId);
    const kept = await createCompletedSubmission(templateId);
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    const deletedFiles = await filesOfSubmission(deleted);
    // Two party documents, the audit log, the signature and the image.
    expect(deletedFiles).toHaveLength(5);
    const deletedKeys = await keysOf(deletedFiles);
    const keptKeys = await keysOf([...(await filesOfSubmission(kept)), ...(await filesOfTemplate(templateId))]);
    for (const key of [...deletedKeys, ...keptKeys]) expect(storedKeys()).toContain(key);
    // Webhook deliveries were made for its events (form.completed, submission.completed…).
    expect(
      (
        await query(
          'SELECT id FROM webhook_deliveries WHERE record_type = $1 AND record_id = $2',
          'Submission',
          deleted,
        )
      ).length,
    ).toBeGreaterThan(0);

    let response: any;
    expect(
      await eventsRaisedBy(async () => {
        response = await ok(api('DELETE', `/submissions/${deleted}?permanently=true`));
      }),
    ).toEqual([]);
    expect(response).toEqual({ id: deleted, archived_at: null });
    expect(openApiErrors('delete', '/submissions/{id}', response)).toEqual([]);

    expect(await rowsOfSubmission(deleted)).toEqual({});
    expect(await query('SELECT id FROM stored_files WHERE id = ANY($1::int[])', deletedFiles)).toEqual([]);
    await bytesRemoved(deletedKeys);
    const left = storedKeys();
    for (const key of keptKeys) expect(left).toContain(key);
    expect((await api('GET', `/submissions/${deleted}`)).status).toBe(404);
    expect((await ok(api('GET', `/submissions/${kept}`))).status).toBe('completed');
    expect((await ok(api('GET', `/templates/${templateId}`))).id).toBe(templateId);
  });

  it('answers archived_at as it was, takes "true" in a JSON body, and deletes uploads of its form', async () => {
    const templateId = await createTemplate('Upload');
    const [buyer] = await createPendingSubmission(templateId);
    const form = new FormData();
    form.append('submitter_slug', buyer.slug);
    form.append('file', new Blob([`notes ${Math.random()}`], { type: 'text/plain' }), 'notes.txt');
    const upload = await fetch(`${t.url}/api/attachments`, { method: 'POST', body: form });
    expect(upload.status).toBe(200);
    const uploaded = (await upload.json()) as { uuid: string };
    const [file] = await query<{ id: number; storage_key: string }>(
      'SELECT id, storage_key FROM stored_files WHERE uuid = $1::uuid',
      uploaded.uuid,
    );
    expect(storedKeys()).toContain(file!.storage_key);
    const archived = await ok(api('DELETE', `/submissions/${buyer.submission_id}`));
    // Its submission.archived webhook dispatched before the delete (one in flight may still write its deliveries).
    await t.jobs.waitForIdle();

    const response = await ok(api('DELETE', `/submissions/${buyer.submission_id}`, { permanently: 'true' }));
    expect(response).toEqual({ id: buyer.submission_id, archived_at: archived.archived_at });
    expect(await rowsOfSubmission(buyer.submission_id)).toEqual({});
    expect(await query('SELECT id FROM stored_files WHERE id = $1', file!.id)).toEqual([]);
    await bytesRemoved([file!.storage_key]);
  });

  it('archives without the flag, or with another value than true (DocuSeal: only true or "true")', async () => {
    const templateId = await createTemplate('Archive');
    const [party] = await createPendingSubmission(templateId);
    const id = party.submission_id;
    for (const route of [
      `/submissions/${id}`,
      `/submissions/${id}?permanently=1`,
      `/submissions/${id}?permanently=yes`,
    ]) {
      let response: any;
      expect(await eventsRaisedBy(async () => (response = await ok(api('DELETE', route))))).toEqual([
        `submission.archived:${id}`,
      ]);
      expect(response).toEqual({ id, archived_at: expect.any(String) });
      expect(openApiErrors('delete', '/submissions/{id}', response)).toEqual([]);
    }
    expect(await rowsOfSubmission(id)).toMatchObject({ submissions: 1, submitters: 2 });
    expect((await ok(api('GET', `/submissions/${id}`))).archived_at).not.toBeNull();
  });

  it("another account's submission is 403 and an unknown one 404, deleting nothing", async () => {
    const templateId = await createTemplate('Cross');
    const [party] = await createPendingSubmission(templateId);
    const asBob = await rest(t.url, bob.apiKey, 'DELETE', `/submissions/${party.submission_id}?permanently=true`);
    expect(asBob).toEqual({ status: 403, json: { error: 'Not authorized' } });
    expect((await api('DELETE', '/submissions/99999999?permanently=true')).status).toBe(404);
    expect(await rowsOfSubmission(party.submission_id)).toMatchObject({ submissions: 1, submitters: 2 });
  });

  it('pending jobs of the deleted submission end quietly', { timeout: 60_000 }, async () => {
    const templateId = await createTemplate('Jobs');
    const parties = await createPendingSubmission(templateId, {
      expire_at: new Date(Date.now() + 60_000).toISOString(),
    });
    const submissionId = parties[0].submission_id;
    await t.jobs.waitForIdle();
    await ok(api('DELETE', `/submissions/${submissionId}?permanently=true`));
    const logsBefore = t.logs.length;
    // As if they had been pending: each kind of job about the submission, run now.
    const enqueued = [
      await t.jobs.enqueue(COMPLETE_SUBMISSION_JOB, { submissionId, submitterId: parties[0].id }),
      await t.jobs.enqueue(SEND_REQUEST_JOB, { submitterId: parties[0].id, channel: 'email', sending: 0 }),
      await t.jobs.enqueue(EXPIRE_SUBMISSION_JOB, { submissionId, expireAt: new Date().toISOString() }),
      await t.jobs.enqueue(DISPATCH_EVENT_JOB, {
        type: 'form.viewed',
        accountId: alice.accountId,
        recordId: parties[0].id,
        at: new Date().toISOString(),
      }),
    ];
    await t.jobs.waitForIdle({ timeoutMs: 30_000 });
    const runs = await query<{ name: string; failed: boolean; finished: boolean }>(
      `SELECT name, failed_at IS NOT NULL AS failed, last_finished_at IS NOT NULL AS finished
         FROM agenda.jobs WHERE id::text = ANY($1::text[]) ORDER BY name`,
      enqueued,
    );
    expect(runs.map((r) => [r.name, r.failed, r.finished])).toEqual(
      [COMPLETE_SUBMISSION_JOB, DISPATCH_EVENT_JOB, EXPIRE_SUBMISSION_JOB, SEND_REQUEST_JOB]
        .sort()
        .map((name) => [name, false, true]),
    );
    const complaints = t.logs.slice(logsBefore).filter((line) => (line.level as number) >= 40);
    expect(complaints).toEqual([]);
    expect(await rowsOfSubmission(submissionId)).toEqual({});
    expect(await query('SELECT id FROM email_messages WHERE submission_id = $1', submissionId)).toEqual([]);
  });
});

describe('DELETE /templates/{id}?permanently=true', () => {
  it('deletes the template with its submissions and the files only they used; shared bytes and rows stay', {
    timeout: 120_000,
  }, async () => {
    const sharedPdf = await uniquePdf('shared by two templates');
    const templateId = await createTemplate('Deleted', sharedPdf);
    // The same bytes in another template (their own rows, the same storage key; the preview image row reused).
    const sameBytes = await createTemplate('Same bytes', sharedPdf);
    const completed = await createCompletedSubmission(templateId);
    const [pending] = await createPendingSubmission(templateId);
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    // Its documents replaced after the submissions were made: the submissions' copies keep the old file.
    const replaced = await filesOfTemplate(templateId);
    await ok(
      api('PUT', `/templates/${templateId}/documents`, {
        documents: [{ name: 'New', file: await uniquePdf(`replacement ${Math.random()}`), position: 0, replace: true }],
      }),
    );
    const templateFiles = [...new Set([...replaced, ...(await filesOfTemplate(templateId))])];
    const submissionFiles = await filesOfSubmission(completed);
    const sharedKeys = await keysOf(await filesOfTemplate(sameBytes));
    const ownKeys = (await keysOf([...templateFiles, ...submissionFiles])).filter((k) => !sharedKeys.includes(k));
    expect(ownKeys.length).toBeGreaterThanOrEqual(6);

    let response: any;
    expect(
      await eventsRaisedBy(async () => {
        response = await ok(api('DELETE', `/templates/${templateId}?permanently=true`));
      }),
    ).toEqual([]);
    expect(response).toEqual({ id: templateId, archived_at: null });
    expect(openApiErrors('delete', '/templates/{id}', response)).toEqual([]);

    expect(await rowsOfTemplate(templateId)).toEqual({});
    expect(await rowsOfSubmission(completed)).toEqual({});
    expect(await rowsOfSubmission(pending.submission_id)).toEqual({});
    const left = await query<{ id: number }>('SELECT id FROM stored_files WHERE id = ANY($1::int[])', [
      ...templateFiles,
      ...submissionFiles,
    ]);
    // Only the preview image row the other template's same bytes share stays.
    const [preview] = await query<{ id: number }>(
      `SELECT p.image_file_id AS id FROM document_previews p JOIN template_documents d ON d.file_id = p.file_id
        WHERE d.template_id = $1`,
      sameBytes,
    );
    expect(left.map((r) => r.id)).toEqual([preview!.id]);
    await bytesRemoved(ownKeys);
    const stored = storedKeys();
    for (const key of sharedKeys) expect(stored).toContain(key);
    expect((await api('GET', `/templates/${templateId}`)).status).toBe(404);
    expect((await ok(api('GET', `/templates/${sameBytes}`))).documents[0].url).toBeTruthy();
  });

  it('keeps the files a clone still uses', async () => {
    const templateId = await createTemplate('Original');
    const clone = (await ok(api('POST', `/templates/${templateId}/clone`, {}))).id;
    const files = await filesOfTemplate(templateId);
    const keys = await keysOf(files);
    expect(await ok(api('DELETE', `/templates/${templateId}`, { permanently: true }))).toEqual({
      id: templateId,
      archived_at: null,
    });
    expect(await rowsOfTemplate(templateId)).toEqual({});
    expect(await rowsOfTemplate(clone)).toMatchObject({ templates: 1, template_documents: 1 });
    expect((await query('SELECT id FROM stored_files WHERE id = ANY($1::int[])', files)).length).toBe(files.length);
    await t.jobs.waitForIdle();
    for (const key of keys) expect(storedKeys()).toContain(key);
    const document = (await ok(api('GET', `/templates/${clone}`))).documents[0];
    expect((await fetch(document.url)).status).toBe(200);
  });

  it('archives without the flag (template.archived), as before', async () => {
    const templateId = await createTemplate('Kept');
    let response: any;
    expect(
      await eventsRaisedBy(async () => (response = await ok(api('DELETE', `/templates/${templateId}?permanently=no`)))),
    ).toEqual([`template.archived:${templateId}`]);
    expect(response).toEqual({ id: templateId, archived_at: expect.any(String) });
    expect(await rowsOfTemplate(templateId)).toMatchObject({ templates: 1, template_documents: 1 });
    // Deleted after archiving: archived_at as it was.
    expect(await ok(api('DELETE', `/templates/${templateId}?permanently=true`))).toEqual(response);
  });

  it("another account's template is 403 and an unknown one 404, deleting nothing", async () => {
    const templateId = await createTemplate('Theirs');
    const asBob = await rest(t.url, bob.apiKey, 'DELETE', `/templates/${templateId}?permanently=true`);
    expect(asBob).toEqual({ status: 403, json: { error: 'Not authorized' } });
    expect((await api('DELETE', '/templates/99999999?permanently=true')).status).toBe(404);
    expect(await rowsOfTemplate(templateId)).toMatchObject({ templates: 1, template_documents: 1 });
  });
});

describe('GraphQL deleteTemplate and deleteSubmission', () => {
  const gql = (key: string, query: string, variables: Record<string, unknown>) =>
    graphql(t.url, query, { key, variables });
  const DELETE_SUBMISSION = 'mutation ($id: Int!) { deleteSubmission(input: { id: $id }) { id archivedAt } }';
  const DELETE_TEMPLATE = 'mutation ($id: Int!) { deleteTemplate(input: { id: $id }) { id archivedAt } }';

  it('delete the records and their own files, raise no event, and refuse other accounts', {
    timeout: 120_000,
  }, async () => {
    const templateId = await createTemplate('GraphQL');
    const submissionId = await createCompletedSubmission(templateId);
    const other = await createCompletedSubmission(templateId);
    await t.jobs.waitForIdle({ timeoutMs: 60_000 });
    const submissionKeys = await keysOf(await filesOfSubmission(submissionId));

    const forbidden = await gql(bob.apiKey, DELETE_SUBMISSION, { id: submissionId });
    expect(forbidden.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const unknown = await gql(alice.apiKey, DELETE_TEMPLATE, { id: 99999999 });
    expect(unknown.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    let body: any;
    expect(
      await eventsRaisedBy(
        async () => (body = (await gql(alice.apiKey, DELETE_SUBMISSION, { id: submissionId })).body),
      ),
    ).toEqual([]);
    expect(body).toEqual({ data: { deleteSubmission: { id: submissionId, archivedAt: null } } });
    expect(await rowsOfSubmission(submissionId)).toEqual({});
    await bytesRemoved(submissionKeys);

    const templateKeys = await keysOf([...(await filesOfTemplate(templateId)), ...(await filesOfSubmission(other))]);
    expect(
      await eventsRaisedBy(async () => (body = (await gql(alice.apiKey, DELETE_TEMPLATE, { id: templateId })).body)),
    ).toEqual([]);
    expect(body).toEqual({ data: { deleteTemplate: { id: templateId, archivedAt: null } } });
    expect(await rowsOfTemplate(templateId)).toEqual({});
    expect(await rowsOfSubmission(other)).toEqual({});
    await bytesRemoved(templateKeys);
  });
});

describe('the bytes of deleted files', () => {
  it('are removed by a later start when the service stopped between the commit and the removal', {
    timeout: 120_000,
  }, async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-delete-restart-'));
    const first = await startTestApp({ env: { DATA_DIR: dataDir } });
    let second: TestApp | undefined;
    try {
      const account = await first.createAccount();
      const body = buyerSellerTemplateBody('Restart', 'Restart');
      const created = await rest(first.url, account.apiKey, 'POST', '/templates/pdf', {
        ...body,
        documents: [{ name: 'Restart', file: await uniquePdf(`restart ${Math.random()}`) }],
      });
      expect(created.status).toBe(200);
      const [doc] = await first.db.$queryRawUnsafe<{ storage_key: string }[]>(
        `SELECT f.storage_key FROM stored_files f JOIN template_documents d ON d.file_id = f.id
          WHERE d.template_id = $1`,
        created.json.id,
      );
      // The service stops running jobs (as if it died right after the delete's commit).
      await first.jobs.stop();
      const deleted = await rest(first.url, account.apiKey, 'DELETE', `/templates/${created.json.id}?permanently=true`);
      expect(deleted.status).toBe(200);
      expect(storedKeys(dataDir)).toContain(doc!.storage_key);

      second = await startTestApp({ env: { DATA_DIR: dataDir }, viaDatabaseUrl: () => first.database.url });
      await second.jobs.waitForIdle({ timeoutMs: 30_000 });
      expect(storedKeys(dataDir)).not.toContain(doc!.storage_key);
    } finally {
      await second?.close();
      await first.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('are kept while a row being written uses them (the key lock), and put back when removed before it', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-delete-lock-'));
    const local = createLocalStorage(root);
    // Runs `between` once, after the next put and before the writer takes the key's lock.
    let between: (() => Promise<unknown>) | undefined;
    const storage: FileStorage = {
      ...local,
      async put(bytes) {
        const put = await local.put(bytes);
        const run = between;
        between = undefined;
        await run?.();
        return put;
      },
    };
    const file = (bytes: Uint8Array) => ({
      accountId: alice.accountId,
      bytes,
      filename: 'shared.txt',
      contentType: 'text/plain',
    });
    try {
      const bytes = new TextEncoder().encode(`shared ${Math.random()}`);
      const first = await storeFile({ db: t.db, storage }, file(bytes));
      await t.db.storedFile.delete({ where: { id: first.id } });
      const freed = [{ key: first.storageKey, sha256: first.sha256 }];

      // A writer stores the same bytes (found there: nothing written) and has not committed its row.
      let removal: Promise<string[]> | undefined;
      let settled = false;
      await t.db.$transaction(async (tx) => {
        await storeFile({ db: tx, storage }, file(bytes));
        removal = removeUnusedBytes({ db: t.db, storage }, freed).finally(() => (settled = true));
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(settled).toBe(false);
      });
      expect(await removal).toEqual([]);
      expect(await storage.exists(first.storageKey)).toBe(true);

      // Removed between a writer's put (which found them) and its lock: the writer puts them again.
      await t.db.storedFile.deleteMany({ where: { storageKey: first.storageKey } });
      between = () => removeUnusedBytes({ db: t.db, storage }, freed);
      const again = await storeFile({ db: t.db, storage }, file(bytes));
      expect(between).toBeUndefined();
      expect(again.storageKey).toBe(first.storageKey);
      expect(await storage.read(first.storageKey)).toEqual(Buffer.from(bytes));
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('a completion running while its submission is deleted', () => {
  it('records nothing and removes the files it stored, without an error', { timeout: 120_000 }, async () => {
    const own = await startTestApp();
    try {
      // Completion runs only here, through completeSubmission, not through the service's queue.
      await own.jobs.stop();
      const account = await own.createAccount();
      const call = (method: string, route: string, body?: unknown) =>
        rest(own.url, account.apiKey, method, route, body);
      const template = await call('POST', '/templates/pdf', buyerSellerTemplateBody('Race', 'Race'));
      expect(template.status).toBe(200);
      const created = await call('POST', '/submissions', {
        template_id: template.json.id,
        send_email: false,
        submitters: [
          { role: 'Buyer', email: 'b@example.test', completed: true, values: { 'Full Name': 'B', Amount: 1 } },
          {
            role: 'Seller',
            email: 's@example.test',
            completed: true,
            values: { 'Seller Signature': base64(await strokePng(300, 80)) },
          },
        ],
      });
      expect(created.status).toBe(200);
      const submissionId = created.json[0].submission_id as number;
      const storage = createLocalStorage(path.join(own.config.dataDir, 'files'));
      const boundaries: string[] = [];
      await completeSubmission(
        {
          db: own.db,
          storage,
          config: own.config,
          effects: createSideEffects({ db: own.db, jobs: { relayOutbox: () => undefined } }),
          hooks: {
            async atBoundary(boundary) {
              boundaries.push(`${boundary.step}:${boundary.phase}`);
              // The first party's documents are in storage, not recorded yet: the submission goes now.
              if (boundaries.length === 1) {
                const deleted = await call('DELETE', `/submissions/${submissionId}?permanently=true`);
                expect(deleted.status).toBe(200);
              }
            },
          },
        },
        submissionId,
      );
      expect(boundaries).toEqual(['documents:stored']);
      expect(await own.db.completedDocument.count({ where: { submissionId } })).toBe(0);
      const files = storedKeys(own.config.dataDir);
      expect([...files].filter((key) => key.startsWith('named/completions/'))).toEqual([]);
      expect(await own.db.submission.count({ where: { id: submissionId } })).toBe(0);
    } finally {
      await own.close();
    }
  });
});
