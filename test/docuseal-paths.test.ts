/**
 * Paths DocuSeal serves besides its documented API (issue 15): the `.json` suffix on every API
 * path (Rails' `(.:format)`), including the signing form's multipart upload, and `GET /up`
 * (Rails' health page; the red page during an outage is in test/database-outage.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Alice', email: 'alice@paths.test' });
});
afterAll(async () => {
  await t?.close();
});

describe('the .json suffix', () => {
  it('answers every kind of route as without it', async () => {
    const created = await api('POST', '/templates/pdf.json', {
      name: 'Suffix',
      documents: [{ name: 'doc', file: base64(fixturePdf('docuseal-sample-document.pdf')) }],
      fields: [{ name: 'Name', role: 'Client', areas: [{ x: 60, y: 60, w: 220, h: 24, page: 1 }] }],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const id = created.json.id;
    // File URLs carry their expiry in seconds: two reads a second apart sign them differently.
    const unsigned = (json: unknown) => JSON.parse(JSON.stringify(json).replace(/\/file\/[^/"]+\//g, '/file/…/'));
    expect(unsigned((await api('GET', `/templates/${id}.json`)).json)).toEqual(
      unsigned((await api('GET', `/templates/${id}`)).json),
    );
    const list = await api('GET', '/templates.json?limit=1');
    expect(list.status).toBe(200);
    expect(list.json.data.map((x: { id: number }) => x.id)).toEqual([id]);
    expect((await api('GET', '/user.json')).json).toEqual((await api('GET', '/user')).json);
    const submitters = await api('POST', '/submissions.json', {
      template_id: id,
      send_email: false,
      submitters: [{ role: 'Client', email: 'c@paths.test' }],
    });
    expect(submitters.status, JSON.stringify(submitters.json)).toBe(200);
    const submissionId = submitters.json[0].submission_id;
    expect((await api('GET', `/submissions/${submissionId}.json`)).json.id).toBe(submissionId);
    expect((await api('GET', `/submissions/${submissionId}/documents.json`)).status).toBe(200);
    // Still a DocuSeal 404 for an unknown path, with or without the suffix.
    expect(await api('GET', '/nothing-here.json')).toMatchObject({ status: 404, json: { status: 404 } });
    // The key is still required.
    const anonymous = await fetch(`${t.url}/api/templates.json`);
    expect(anonymous.status).toBe(401);

    // The signing form's multipart upload: an unknown slug is DocuSeal's 404, as without the suffix.
    const form = new FormData();
    form.set('submitter_slug', 'no-such-slug');
    form.set('file', new Blob([Buffer.from('hello')], { type: 'text/plain' }), 'a.txt');
    const upload = await fetch(`${t.url}/api/attachments.json`, { method: 'POST', body: form });
    expect(upload.status).toBe(404);
  });
});

describe('GET /up', () => {
  it('is Rails’ green health page while the database answers', async () => {
    const response = await fetch(`${t.url}/up`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await response.text()).toBe('<!DOCTYPE html><html><body style="background-color: green"></body></html>');
  });
});
