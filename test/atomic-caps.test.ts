/**
 * Count-based caps hold under concurrency (issue 23 "Caps are atomic"; docs/security.md "Fair
 * delivery and atomic caps"): 20 requests sent at once to a real service process, each of which
 * would take the last free places, and the database counted after.
 *
 * - bulk sends in progress (MAX_ITEMS.activeBulkSends): 8 in progress seeded, 20 starts at once →
 *   2 accepted (202), 18 refused with 422 `{"error": "too many bulk sends in progress …"}`; before,
 *   the count was read outside the inserting transaction and most of the 20 saw room;
 * - webhook endpoints (MAX_ITEMS.webhookEndpoints): 15 seeded, 20 creations at once → 5 made, 15
 *   refused naming the cap (a new cap: before, all 20 were made);
 * - an account's signing certificates (PKI_LIMITS.certificatesPerAccount): 45 kept, 20 uploads at
 *   once → 5 stored (the count ran in the inserting transaction, but without a lock two of them
 *   could both see 49).
 * The accepted bulk sends have 2,000 rows each, so that none completes (freeing a place) while the
 * 20 requests are answered.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type CreatedAccount } from '../src/accounts/create-account.ts';
import { createDb, type Db } from '../src/db/client.ts';
import { MAX_ITEMS, PKI_LIMITS } from '../src/limits.ts';
import { ENDPOINT_CAP_MESSAGE } from '../src/webhooks/endpoints.ts';
import { graphql, rest } from './helpers/app.ts';
import { makeP12 } from './helpers/certificates.ts';
import { createTestDatabase, type TestDatabase } from './helpers/database.ts';
import { base64, drawPdf } from './helpers/pdfs.ts';
import { freePort, startService, testServiceEnv, type ServiceProcess } from './helpers/processes.ts';

const AT_ONCE = 20;

let database: TestDatabase;
let db: Db;
let service: ServiceProcess;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-caps-'));

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { poolSize: 2 });
  const port = await freePort();
  service = await startService({
    ...testServiceEnv({ databaseUrl: database.url, dataDir: path.join(tmp, 'data'), port }),
    WEBHOOK_ALLOW_PRIVATE: 'true',
  });
}, 120_000);

afterAll(async () => {
  await service?.stop();
  await db?.$disconnect();
  await database?.drop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

let accounts = 0;
async function newAccount(): Promise<CreatedAccount> {
  accounts += 1;
  return createAccount(db, { name: `Caps ${accounts}`, email: `owner${accounts}@caps.test` });
}

/** Fires `send` AT_ONCE times together; the answers in order. */
function atOnce<T>(send: (i: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: AT_ONCE }, (_, i) => send(i)));
}

describe('caps under 20 requests at once', { timeout: 120_000 }, () => {
  it('bulk sends in progress: 8 running, 20 starts at once → 2 accepted, 18 refused (422)', async () => {
    const account = await newAccount();
    const created = await rest(service.url, account.apiKey, 'POST', '/templates/pdf', {
      name: 'Order',
      documents: [{ name: 'order', file: base64(await drawPdf([{ texts: [{ text: 'Order', x: 72, y: 40 }] }])) }],
      fields: [{ name: 'Company', role: 'Signer', areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }] }],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const templateId = created.json.id as number;
    const running = MAX_ITEMS.activeBulkSends - 2;
    for (let i = 0; i < running; i += 1)
      await db.bulkSend.create({
        data: { accountId: account.accountId, templateId, ratePerMinute: 1, totalRows: 1, status: 'processing' },
      });
    const csv = ['Email,Company', ...Array.from({ length: 2000 }, (_, i) => `row${i}@caps.test,Co ${i}`)].join('\n');

    const answers = await atOnce(() =>
      rest(service.url, account.apiKey, 'POST', `/templates/${templateId}/submissions/bulk`, {
        csv,
        send_email: false,
        rate_per_minute: 1,
      }),
    );

    const accepted = answers.filter((a) => a.status === 202);
    const refused = answers.filter((a) => a.status !== 202);
    expect(accepted.length, JSON.stringify(answers.map((a) => a.status))).toBe(2);
    for (const answer of refused)
      expect(answer).toEqual({
        status: 422,
        json: {
          error: `too many bulk sends in progress (maximum is ${MAX_ITEMS.activeBulkSends}); wait for one to complete`,
        },
      });
    expect(await db.bulkSend.count({ where: { accountId: account.accountId } })).toBe(MAX_ITEMS.activeBulkSends);
  });

  it('webhook endpoints: 15 kept, 20 creations at once → 5 made, 15 refused naming the cap', async () => {
    const account = await newAccount();
    const kept = MAX_ITEMS.webhookEndpoints - 5;
    await db.webhookEndpoint.createMany({
      data: Array.from({ length: kept }, (_, i) => ({
        accountId: account.accountId,
        url: `http://127.0.0.1:9/kept-${i}`,
        events: ['form.completed'],
        secret: `whsec_kept${i}`,
      })),
    });

    const answers = await atOnce((i) =>
      graphql(
        service.url,
        'mutation ($url: String!) { createWebhookEndpoint(input: {url: $url}) { endpoint { id } } }',
        {
          key: account.apiKey,
          variables: { url: `http://127.0.0.1:9/new-${i}` },
        },
      ),
    );

    const made = answers.filter((a) => a.body.data?.createWebhookEndpoint);
    const refused = answers.filter((a) => a.body.errors);
    expect(made.length, JSON.stringify(answers.map((a) => a.body))).toBe(5);
    expect(refused.length).toBe(15);
    for (const answer of refused)
      expect(answer.body.errors).toEqual([
        expect.objectContaining({
          message: ENDPOINT_CAP_MESSAGE,
          extensions: expect.objectContaining({ code: 'VALIDATION' }),
        }),
      ]);
    expect(ENDPOINT_CAP_MESSAGE).toBe('An account keeps at most 20 webhook endpoints.');
    expect(await db.webhookEndpoint.count({ where: { accountId: account.accountId } })).toBe(
      MAX_ITEMS.webhookEndpoints,
    );

    // One more, alone, is refused the same way; deleting one makes room again.
    const more = await graphql(
      service.url,
      'mutation { createWebhookEndpoint(input: {url: "http://127.0.0.1:9/one-more"}) { secret } }',
      {
        key: account.apiKey,
      },
    );
    expect(more.body.errors?.[0]?.message).toBe(ENDPOINT_CAP_MESSAGE);
    const first = await db.webhookEndpoint.findFirstOrThrow({ where: { accountId: account.accountId } });
    const deleted = await graphql(
      service.url,
      'mutation ($id: Int!) { deleteWebhookEndpoint(input: {id: $id}) { id } }',
      {
        key: account.apiKey,
        variables: { id: first.id },
      },
    );
    expect(deleted.body.errors).toBeUndefined();
    const again = await graphql(
      service.url,
      'mutation { createWebhookEndpoint(input: {url: "http://127.0.0.1:9/again"}) { secret } }',
      {
        key: account.apiKey,
      },
    );
    expect(again.body.errors).toBeUndefined();
  });

  it('signing certificates: 45 kept, 20 uploads at once → 5 stored, 15 refused', async () => {
    const account = await newAccount();
    const { p12 } = makeP12({ commonName: 'Caps Ltd', password: 'secret', toDays: 365 });
    const upload = () =>
      graphql(
        service.url,
        'mutation ($input: UploadSigningCertificateInput!) { uploadSigningCertificate(input: $input) { id } }',
        { key: account.apiKey, variables: { input: { file: p12.toString('base64'), password: 'secret' } } },
      );
    const first = await upload();
    expect(first.body.errors).toBeUndefined();
    const kept = PKI_LIMITS.certificatesPerAccount - 5;
    // The rest of the kept ones: copies of the first, as the upload stored it.
    await db.$executeRaw`
      INSERT INTO signing_certificates
                  (account_id, name, p12, password, is_default, kind, certificate, not_after, sealed)
      SELECT account_id, name, p12, password, FALSE, kind, certificate, not_after, sealed
        FROM signing_certificates, generate_series(2, ${kept})
       WHERE id = ${first.body.data.uploadSigningCertificate.id}`;

    const answers = await atOnce(() => upload());

    const stored = answers.filter((a) => a.body.data?.uploadSigningCertificate);
    expect(stored.length, JSON.stringify(answers.map((a) => a.body))).toBe(5);
    for (const answer of answers.filter((a) => a.body.errors))
      expect(answer.body.errors?.[0]?.message).toBe(
        `An account keeps at most ${PKI_LIMITS.certificatesPerAccount} signing certificates.`,
      );
    expect(await db.signingCertificate.count({ where: { accountId: account.accountId } })).toBe(
      PKI_LIMITS.certificatesPerAccount,
    );
  });
});
