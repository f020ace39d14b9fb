/**
 * DocuSeal's official JavaScript client (@docuseal/api, npm) against a real Signet server: every
 * method of the client, pointed at Signet by its `url` alone, as an integration moving from
 * DocuSeal would be. Each answer is what the client's own types and DocuSeal's OpenAPI schema
 * promise (test/helpers/openapi.ts), with the nulls DocuSeal itself sends for unfilled values.
 */
import { DocusealApi } from '@docuseal/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { openApiErrors } from './helpers/openapi.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { makeDocx } from './fixtures/rendering/make-docx.ts';

let t: TestApp;
let alice: CreatedAccount;
let client: DocusealApi;
/** The client's methods this file called, to check at the end that none was left out. */
const called = new Set<string>();

const area = (y: number) => [{ x: 72, y, w: 150, h: 24, page: 1 }];

/**
 * Validation errors of an answer, without the nulls DocuSeal itself sends where its schema says string
 * (docs/compatibility.md "OpenAPI schemas"): an unfilled value, a one-off submission's `expire_at`.
 */
function schemaErrors(method: string, path: string, body: unknown): string[] {
  const nullOf = (key: string) => (body as Record<string, unknown> | null)?.[key] === null;
  return openApiErrors(method, path, body).filter(
    (e) => !/\/values\/\d+\/value/.test(e) && !(e === '/expire_at must be string' && nullOf('expire_at')),
  );
}

/** Calls a client method by name, recording it. */
async function call<T>(name: keyof DocusealApi, run: () => Promise<T>): Promise<T> {
  called.add(name);
  return run();
}

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ email: 'alice@official-client.test' });
  client = new DocusealApi({ key: alice.apiKey, url: `${t.url}/api` });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('@docuseal/api against Signet', () => {
  it('runs every method of the client', async () => {
    // Templates.
    const fromPdf = await call('createTemplateFromPdf', () =>
      client.createTemplateFromPdf({
        name: 'Client PDF',
        documents: [
          {
            name: 'contract',
            file: base64(fixturePdf('docuseal-sample-document.pdf')),
            fields: [
              { name: 'Full Name', role: 'Client', areas: area(72) },
              { name: 'Signature', type: 'signature', role: 'Client', areas: area(120) },
            ],
          },
        ],
      }),
    );
    expect(schemaErrors('post', '/templates/pdf', fromPdf)).toEqual([]);
    const fromHtml = await call('createTemplateFromHtml', () =>
      client.createTemplateFromHtml({
        name: 'Client HTML',
        html: '<p>Name: <text-field name="Name" role="Client" style="width: 160px; height: 20px"></text-field></p>',
      }),
    );
    expect(schemaErrors('post', '/templates/html', fromHtml)).toEqual([]);
    const docx = makeDocx([{ paragraph: 'Agreed by {{Name;role=Client;type=text}}' }]);
    const fromDocx = await call('createTemplateFromDocx', () =>
      client.createTemplateFromDocx({ name: 'Client DOCX', documents: [{ name: 'agreement', file: base64(docx) }] }),
    );
    expect(schemaErrors('post', '/templates/docx', fromDocx)).toEqual([]);
    const list = await call('listTemplates', () => client.listTemplates({ limit: 10 }));
    expect(list.data.map((x) => x.id)).toEqual(expect.arrayContaining([fromPdf.id, fromHtml.id, fromDocx.id]));
    expect(schemaErrors('get', '/templates', list)).toEqual([]);
    const one = await call('getTemplate', () => client.getTemplate(fromPdf.id));
    expect(one.name).toBe('Client PDF');
    expect(schemaErrors('get', '/templates/{id}', one)).toEqual([]);
    const merged = await call('mergeTemplates', () =>
      client.mergeTemplates({ template_ids: [fromPdf.id, fromHtml.id], name: 'Merged' }),
    );
    expect(schemaErrors('post', '/templates/merge', merged)).toEqual([]);
    const clone = await call('cloneTemplate', () => client.cloneTemplate(fromPdf.id, { name: 'Clone' }));
    expect(clone.name).toBe('Clone');
    expect(schemaErrors('post', '/templates/{id}/clone', clone)).toEqual([]);
    const updated = await call('updateTemplate', () => client.updateTemplate(clone.id, { name: 'Clone, renamed' }));
    expect(updated.id).toBe(clone.id);
    expect(schemaErrors('put', '/templates/{id}', updated)).toEqual([]);
    const withDocument = await call('updateTemplateDocuments', () =>
      client.updateTemplateDocuments(clone.id, {
        documents: [{ name: 'appendix', file: base64(fixturePdf('pdfjs-hello_world_rotated.pdf')) }],
      }),
    );
    expect(withDocument.documents).toHaveLength(2);
    expect(schemaErrors('put', '/templates/{id}/documents', withDocument)).toEqual([]);

    // Submissions.
    const submission = await call('createSubmission', () =>
      client.createSubmission({
        template_id: fromPdf.id,
        send_email: false,
        submitters: [{ role: 'Client', email: 'client@official-client.test', values: { 'Full Name': 'Ada' } }],
      }),
    );
    expect(submission.submitters).toHaveLength(1);
    const fromEmails = await call('createSubmissionFromEmails', () =>
      client.createSubmissionFromEmails({
        template_id: fromPdf.id,
        emails: 'one@official-client.test, two@official-client.test',
        send_email: false,
      }),
    );
    expect(fromEmails).toHaveLength(2);
    expect(schemaErrors('post', '/submissions/emails', fromEmails)).toEqual([]);
    const oneOffPdf = await call('createSubmissionFromPdf', () =>
      client.createSubmissionFromPdf({
        name: 'One-off PDF',
        send_email: false,
        documents: [
          {
            name: 'form',
            file: base64(fixturePdf('docuseal-sample-document.pdf')),
            fields: [{ name: 'Name', role: 'Signer', areas: area(72) }],
          },
        ],
        submitters: [{ role: 'Signer', email: 'signer@official-client.test' }],
      }),
    );
    expect(schemaErrors('post', '/submissions/pdf', oneOffPdf)).toEqual([]);
    const oneOffHtml = await call('createSubmissionFromHtml', () =>
      client.createSubmissionFromHtml({
        name: 'One-off HTML',
        send_email: false,
        documents: [
          {
            name: 'page',
            html: '<p><text-field name="Name" role="Signer" style="width: 160px; height: 20px"></text-field></p>',
          },
        ],
        submitters: [{ role: 'Signer', email: 'signer@official-client.test' }],
      }),
    );
    expect(schemaErrors('post', '/submissions/html', oneOffHtml)).toEqual([]);
    const oneOffDocx = await call('createSubmissionFromDocx', () =>
      client.createSubmissionFromDocx({
        name: 'One-off DOCX',
        send_email: false,
        documents: [{ name: 'agreement', file: base64(docx) }],
        submitters: [{ role: 'Client', email: 'signer@official-client.test' }],
      }),
    );
    expect(schemaErrors('post', '/submissions/docx', oneOffDocx)).toEqual([]);
    const submissions = await call('listSubmissions', () => client.listSubmissions({ template_id: fromPdf.id }));
    expect(submissions.data.map((s) => s.id)).toContain(submission.id);
    expect(schemaErrors('get', '/submissions', submissions)).toEqual([]);
    const read = await call('getSubmission', () => client.getSubmission(submission.id));
    expect(read.id).toBe(submission.id);
    expect(schemaErrors('get', '/submissions/{id}', read)).toEqual([]);
    const documents = await call('getSubmissionDocuments', () => client.getSubmissionDocuments(submission.id));
    expect(documents.id).toBe(submission.id);
    expect(schemaErrors('get', '/submissions/{id}/documents', documents)).toEqual([]);
    const renamed = await call('updateSubmission', () => client.updateSubmission(submission.id, { name: 'Renamed' }));
    expect(renamed.id).toBe(submission.id);

    // Submitters.
    const submitters = await call('listSubmitters', () => client.listSubmitters({ submission_id: submission.id }));
    expect(submitters.data).toHaveLength(1);
    expect(schemaErrors('get', '/submitters', submitters)).toEqual([]);
    const submitterId = submitters.data![0]!.id;
    const submitter = await call('getSubmitter', () => client.getSubmitter(submitterId));
    expect(submitter.email).toBe('client@official-client.test');
    expect(schemaErrors('get', '/submitters/{id}', submitter)).toEqual([]);
    const changed = await call('updateSubmitter', () =>
      client.updateSubmitter(submitterId, { name: 'Ada Lovelace', metadata: { crm: 7 } }),
    );
    expect(changed).toMatchObject({ name: 'Ada Lovelace', metadata: { crm: 7 } });
    expect(schemaErrors('put', '/submitters/{id}', changed)).toEqual([]);

    // Archiving and deleting.
    const archived = await call('archiveSubmission', () => client.archiveSubmission(fromEmails[0]!.submission_id));
    expect(archived.archived_at).not.toBeNull();
    const deleted = await call('permanentlyDeleteSubmission', () =>
      client.permanentlyDeleteSubmission(fromEmails[1]!.submission_id),
    );
    expect(deleted.id).toBe(fromEmails[1]!.submission_id);
    expect(await t.db.submission.count({ where: { id: fromEmails[1]!.submission_id } })).toBe(0);
    const archivedTemplate = await call('archiveTemplate', () => client.archiveTemplate(merged.id));
    expect(archivedTemplate.archived_at).not.toBeNull();
    const deletedTemplate = await call('permanentlyDeleteTemplate', () => client.permanentlyDeleteTemplate(clone.id));
    expect(deletedTemplate.id).toBe(clone.id);
    expect(await t.db.template.count({ where: { id: clone.id } })).toBe(0);

    // Every method the client has was called.
    const methods = Object.getOwnPropertyNames(DocusealApi.prototype).filter(
      (name) => name !== 'constructor' && name !== 'configure',
    );
    expect(methods.filter((name) => !called.has(name))).toEqual([]);
  }, 180_000);

  it('reports Signet’s refusals through the client’s own error', async () => {
    await expect(client.getTemplate(999_999)).rejects.toThrow();
    const anonymous = new DocusealApi({ key: 'not-a-key', url: `${t.url}/api` });
    await expect(anonymous.listTemplates()).rejects.toThrow();
  });
});
