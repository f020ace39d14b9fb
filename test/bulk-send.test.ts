/**
 * Bulk send (issue 16), end to end on a real server, PostgreSQL and SMTP server: a CSV (or JSON
 * rows) whose columns map to roles' emails, names, phones, values and metadata becomes one
 * submission per row, in the background; rejected rows are reported with the message a single
 * POST /submissions gives for the same submitters, and nothing is made for them; progress over REST
 * (GET), a GraphQL query and a GraphQL subscription (graphql-ws); invitations leave at the rate
 * asked (timed at the SMTP server); the limits (rows, bytes, columns, body) answer 4xx fast with
 * nothing stored; another account's template or bulk send is 403, an unknown one 404.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { insertBulkSendRows } from '../src/db/queries/bulk-sends.ts';
import { MAX_BULK_SEND_BYTES, MAX_ITEMS } from '../src/limits.ts';
import { BULK_SEND_BATCH_ROWS, runBulkSendBatch } from '../src/submissions/bulk-send-job.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { subscribeWs, until, wsClient } from './helpers/subscriptions.ts';

let t: TestApp;
let smtp: TestSmtpServer;
let alice: CreatedAccount;
let bob: CreatedAccount;
/** One role (Signer: Company text, Amount number, Signature). */
let single: number;
/** Two roles (Buyer: Company, Buyer Signature; Seller: Seller Signature). */
let pair: number;

const api = (method: string, path: string, body?: unknown, key = alice.apiKey) => rest(t.url, key, method, path, body);
const gql = (query: string, variables?: Record<string, unknown>, key = alice.apiKey) =>
  graphql(t.url, query, { key, variables });

const area = (y: number) => [{ x: 72, y, w: 200, h: 24, page: 1 }];

async function template(name: string, fields: unknown[]): Promise<number> {
  const created = await api('POST', '/templates/pdf', {
    name,
    documents: [{ name: 'form', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields,
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  return created.json.id;
}

beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestApp({ env: { SMTP_URL: smtp.url, MAIL_FROM: 'Signet <signet@bulk.test>' } });
  alice = await t.createAccount({ name: 'Alice', email: 'alice@bulk.test' });
  bob = await t.createAccount({ name: 'Bob', email: 'bob@bulk.test' });
  single = await template('Order form', [
    { name: 'Company', role: 'Signer', areas: area(72) },
    { name: 'Amount', type: 'number', role: 'Signer', areas: area(120) },
    { name: 'Signature', type: 'signature', role: 'Signer', areas: area(200) },
  ]);
  pair = await template('Sale', [
    { name: 'Company', role: 'Buyer', areas: area(72) },
    { name: 'Buyer Signature', type: 'signature', role: 'Buyer', areas: area(120) },
    { name: 'Seller Signature', type: 'signature', role: 'Seller', areas: area(200) },
  ]);
}, 60_000);

afterAll(async () => {
  await t?.close();
  await smtp?.close();
});

/** GET /submissions/bulk/{id} until it is completed (or failed). */
async function finished(id: number, key = alice.apiKey): Promise<any> {
  let last: { status: number; json: any } | undefined;
  await until(async () => {
    last = await api('GET', `/submissions/bulk/${id}`, undefined, key);
    return last.status === 200 && (last.json.status === 'completed' || last.json.status === 'failed');
  }, 30_000);
  return last!.json;
}

const mailsTo = (address: string) => smtp.messages.filter((m) => m.envelope.rcptTo.includes(address));

describe('REST: POST /api/templates/{id}/submissions/bulk with a CSV', () => {
  it('makes one submission per accepted row, reports the rejected ones with POST /submissions’ message', async () => {
    const csv = [
      'Email,Name,Company,Amount,metadata.crm_id',
      'ann@bulk.test,Ann,Acme,"1,200",crm-1',
      'not-an-email,Bad,Bad Co,1,crm-2',
      '"carl@bulk.test",Carl,"Carl, Inc.",3,crm-3',
      'dora@bulk.test,Dora,Dora Ltd,lots,crm-4',
      ',,,,',
    ].join('\r\n');
    const started = await api('POST', `/templates/${single}/submissions/bulk`, { csv, rate_per_minute: 60_000 });
    expect(started.status, JSON.stringify(started.json)).toBe(202);
    expect(started.json).toMatchObject({ template_id: single, total_rows: 5, rate_per_minute: 60_000 });
    expect(['queued', 'processing', 'completed']).toContain(started.json.status);

    const report = await finished(started.json.id);
    // The messages a single POST /submissions gives for the rejected rows' submitters.
    const single1 = await api('POST', '/submissions', {
      template_id: single,
      submitters: [{ role: 'Signer', email: 'not-an-email', name: 'Bad', values: { Company: 'Bad Co', Amount: '1' } }],
    });
    const single3 = await api('POST', '/submissions', {
      template_id: single,
      submitters: [
        { role: 'Signer', email: 'dora@bulk.test', name: 'Dora', values: { Company: 'Dora Ltd', Amount: 'lots' } },
      ],
    });
    const empty = await api('POST', '/submissions', { template_id: single, submitters: [{}] });
    expect([single1.status, single3.status, empty.status]).toEqual([422, 422, 422]);
    expect(report).toMatchObject({
      status: 'completed',
      total_rows: 5,
      processed_rows: 5,
      created_count: 2,
      rejected_count: 3,
      rejected_rows: [
        { row: 2, error: single1.json.error },
        { row: 4, error: single3.json.error },
        { row: 5, error: 'submitters is required' },
      ],
    });
    expect(single1.json.error).toBe('email is invalid in `submitters[0]`.');

    // Nothing for the rejected rows; the accepted ones with their values and metadata, made as 'bulk'.
    const rows = await t.db.bulkSendRow.findMany({ where: { bulkSendId: started.json.id }, orderBy: { row: 'asc' } });
    expect(rows.map((r) => [r.row, r.status, r.submissionId !== null])).toEqual([
      [1, 'created', true],
      [2, 'rejected', false],
      [3, 'created', true],
      [4, 'rejected', false],
      [5, 'rejected', false],
    ]);
    const submissions = await t.db.submission.findMany({
      where: { templateId: single, source: 'bulk' },
      include: { submitters: true },
      orderBy: { id: 'asc' },
    });
    expect(submissions.map((s) => s.id)).toEqual([rows[0]!.submissionId, rows[2]!.submissionId]);
    expect(submissions.map((s) => s.submitters.map((p) => [p.email, p.name, p.metadata]))).toEqual([
      [['ann@bulk.test', 'Ann', { crm_id: 'crm-1' }]],
      [['carl@bulk.test', 'Carl', { crm_id: 'crm-3' }]],
    ]);
    const carl = await api('GET', `/submissions/${submissions[1]!.id}`);
    const values = Object.fromEntries(
      (carl.json.submitters[0].values as { field: string; value: unknown }[]).map((v) => [v.field, v.value]),
    );
    expect(values).toMatchObject({ Company: 'Carl, Inc.', Amount: 3 });

    // Their invitations, one each, through SMTP.
    await until(() => mailsTo('ann@bulk.test').length === 1 && mailsTo('carl@bulk.test').length === 1, 15_000);
    await t.jobs.waitForIdle();
    expect(mailsTo('ann@bulk.test')).toHaveLength(1);
    expect(mailsTo('dora@bulk.test')).toHaveLength(0);
    const done = (await api('GET', `/submissions/bulk/${started.json.id}`)).json;
    expect(done).toMatchObject({ invitations_scheduled: 2, invitations_sent: 2 });
  });

  it('maps "<Role> - <column>" headers to each role (DocuSeal’s sample spreadsheet), in order', async () => {
    const csv =
      'Buyer - Email,Buyer - Name,Buyer - Company,Seller - Email,Seller - Name\n' +
      'b1@bulk.test,Bea,Bea Co,s1@bulk.test,Sam\n' +
      'b2@bulk.test,Ben,,,\n';
    const started = await api('POST', '/submissions/bulk', {
      template_id: pair,
      csv,
      rate_per_minute: 60_000,
      expire_at: '2030-01-02 03:04:05',
      name: 'Spring sale',
      reminders: { first_after_hours: 24, every_hours: 48, max_count: 2 },
    });
    expect(started.status, JSON.stringify(started.json)).toBe(202);
    const report = await finished(started.json.id);
    expect(report).toMatchObject({ created_count: 2, rejected_count: 0, rejected_rows: [] });
    const rows = await t.db.bulkSendRow.findMany({ where: { bulkSendId: started.json.id }, orderBy: { row: 'asc' } });
    const submissions = await Promise.all(rows.map((r) => api('GET', `/submissions/${r.submissionId}`)));
    expect(submissions.map((s) => s.json.submitters.map((p: any) => [p.role, p.email, p.name]))).toEqual([
      [
        ['Buyer', 'b1@bulk.test', 'Bea'],
        ['Seller', 's1@bulk.test', 'Sam'],
      ],
      // A role with no cell filled is not in the row, as a POST without it.
      [['Buyer', 'b2@bulk.test', 'Ben']],
    ]);
    // The request's settings are every row's.
    expect(submissions.map((s) => [s.json.name, s.json.expire_at])).toEqual([
      ['Spring sale', '2030-01-02T03:04:05.000Z'],
      ['Spring sale', '2030-01-02T03:04:05.000Z'],
    ]);
    // Reminders too (docs/reminders.md): each submission keeps them as its own.
    const stored = await t.db.submission.findMany({ where: { id: { in: rows.map((r) => r.submissionId!) } } });
    expect(stored.map((s) => (s.preferences as { reminders?: unknown }).reminders)).toEqual([
      { first_after_hours: 24, every_hours: 48, max_count: 2, send_email: true, send_sms: false },
      { first_after_hours: 24, every_hours: 48, max_count: 2, send_email: true, send_sms: false },
    ]);
    // Preserved order: the buyer is invited; the seller once the buyer completes.
    await until(() => mailsTo('b1@bulk.test').length === 1 && mailsTo('b2@bulk.test').length === 1, 15_000);
    await t.jobs.waitForIdle();
    expect(mailsTo('s1@bulk.test')).toHaveLength(0);
  });

  it('refuses at once, storing nothing: columns that map nowhere, bad CSV, settings a POST refuses', async () => {
    const before = await t.db.bulkSend.count();
    const cases: [unknown, number, string | RegExp][] = [
      [{ csv: 'Email,Favourite colour\na@bulk.test,blue\n' }, 422, /column "Favourite colour" is not Email/],
      [{ csv: 'Email,Name\n"a@bulk.test,Ann\n' }, 422, /^csv is not valid CSV: Quote Not Closed/],
      [{ csv: 'Email,Name\na@bulk.test,Ann,extra\n' }, 422, /^csv is not valid CSV: Invalid Record Length/],
      [
        { csv: 'Email,email\na@bulk.test,b@bulk.test\n' },
        422,
        'csv has the column "email" twice; map one of them with columns',
      ],
      [{ csv: 'Email\n' }, 422, 'csv has no rows'],
      [{}, 422, 'csv or rows is required'],
      [{ csv: 'Email\na@bulk.test\n', rows: [{ Email: 'a@bulk.test' }] }, 422, 'give csv or rows, not both'],
      [{ csv: 'Email\na@bulk.test\n', reply_to: 'nope' }, 422, 'reply_to email is invalid'],
      [{ csv: 'Email\na@bulk.test\n', rate_per_minute: 0 }, 422, /rate_per_minute/],
      [
        { csv: 'Mail\na@bulk.test\n', columns: [{ column: 'Mail', role: 'Boss', to: 'email' }] },
        422,
        'columns[0]: the template has no role "Boss"',
      ],
      [
        { csv: 'Mail\na@bulk.test\n', columns: [{ column: 'Mail', to: 'values.Nope' }] },
        422,
        'columns[0]: role Signer has no field "Nope"',
      ],
      [{ rows: [{ Email: { nested: true } }] }, 422, 'rows[0].Email must be a string, a number or a boolean'],
    ];
    const wrong: string[] = [];
    for (const [body, status, error] of cases) {
      const answer = await api('POST', `/templates/${single}/submissions/bulk`, body);
      const ok =
        answer.status === status &&
        (typeof error === 'string' ? answer.json?.error === error : error.test(answer.json?.error));
      if (!ok) wrong.push(`${JSON.stringify(body).slice(0, 80)} → ${answer.status} ${JSON.stringify(answer.json)}`);
    }
    expect(wrong).toEqual([]);
    expect(await t.db.bulkSend.count()).toBe(before);
  });
});

describe('limits', () => {
  const most = MAX_ITEMS.bulkSendRows;
  it(`${most + 1} rows → 422, as CSV and as JSON rows; ${most} are accepted`, async () => {
    const before = await t.db.bulkSend.count();
    const lines = (n: number) => ['Email', ...Array.from({ length: n }, (_, i) => `p${i}@bulk.test`)].join('\n');
    const csv = await api('POST', `/templates/${single}/submissions/bulk`, { csv: lines(MAX_ITEMS.bulkSendRows + 1) });
    expect(csv).toEqual({ status: 422, json: { error: 'csv has too many rows (maximum is 10000).' } });
    const rows = Array.from({ length: MAX_ITEMS.bulkSendRows + 1 }, (_, i) => ({ Email: `p${i}@bulk.test` }));
    const json = await api('POST', `/templates/${single}/submissions/bulk`, { rows });
    expect(json).toEqual({ status: 422, json: { error: 'rows has too many rows (maximum is 10000).' } });
    const columns = Array.from({ length: MAX_ITEMS.bulkSendColumns + 1 }, (_, i) => `metadata.k${i}`).join(',');
    const wide = await api('POST', `/templates/${single}/submissions/bulk`, {
      csv: `${columns}\n${'x,'.repeat(200)}x\n`,
    });
    expect(wide).toEqual({ status: 422, json: { error: 'csv has too many columns (maximum is 200).' } });
    expect(await t.db.bulkSend.count()).toBe(before);
    // The most rows are accepted (and stored at once: the answer says so), with email off so nothing leaves.
    const most = await api('POST', `/templates/${single}/submissions/bulk`, {
      csv: lines(MAX_ITEMS.bulkSendRows),
      send_email: false,
    });
    expect(most.status, JSON.stringify(most.json)).toBe(202);
    expect(most.json.total_rows).toBe(MAX_ITEMS.bulkSendRows);
    expect(await t.db.bulkSendRow.count({ where: { bulkSendId: most.json.id } })).toBe(MAX_ITEMS.bulkSendRows);
    // Not carried out here (bench/bulk-send.ts makes 10,000): removed, its next batch then finds nothing to do.
    await t.db.bulkSend.delete({ where: { id: most.json.id } });
  }, 120_000);

  it(`${MAX_ITEMS.activeBulkSends} bulk sends of the account in progress → 422 for another`, async () => {
    const running = await Promise.all(
      Array.from({ length: MAX_ITEMS.activeBulkSends }, () =>
        t.db.bulkSend.create({
          data: {
            accountId: alice.accountId,
            templateId: single,
            ratePerMinute: 60,
            totalRows: 1,
            status: 'processing',
          },
        }),
      ),
    );
    try {
      const refused = await api('POST', `/templates/${single}/submissions/bulk`, { csv: 'Email\na@bulk.test\n' });
      expect(refused).toEqual({
        status: 422,
        json: { error: 'too many bulk sends in progress (maximum is 10); wait for one to complete' },
      });
    } finally {
      await t.db.bulkSend.deleteMany({ where: { id: { in: running.map((b) => b.id) } } });
    }
    const other = await api('POST', `/templates/${single}/submissions/bulk`, {
      csv: 'Email\na@bulk.test\n',
      send_email: false,
    });
    expect(other.status, JSON.stringify(other.json)).toBe(202);
    await finished(other.json.id);
  });

  it('a CSV over the byte limit → 422 before any row is read; a body over MAX_BODY_SIZE_MB → 413, fast', async () => {
    const before = await t.db.bulkSend.count();
    const line = `a@bulk.test,${'x'.repeat(1000)}\n`;
    const huge = `Email,metadata.note\n${line.repeat(Math.ceil(MAX_BULK_SEND_BYTES / 1000))}`;
    let startedAt = performance.now();
    const tooLarge = await api('POST', `/templates/${single}/submissions/bulk`, { csv: huge });
    expect(tooLarge).toEqual({
      status: 422,
      json: { error: `csv is too large (maximum is ${MAX_BULK_SEND_BYTES} bytes).` },
    });
    expect(performance.now() - startedAt).toBeLessThan(3000);
    startedAt = performance.now();
    const body = JSON.stringify({ csv: 'x'.repeat(t.config.maxBodySize + 1) });
    const response = await fetch(`${t.url}/api/templates/${single}/submissions/bulk`, {
      method: 'POST',
      headers: { 'x-auth-token': alice.apiKey, 'content-type': 'application/json' },
      body,
    });
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: string }).error).toMatch(/^Request body is too large/);
    expect(performance.now() - startedAt).toBeLessThan(5000);
    expect(await t.db.bulkSend.count()).toBe(before);
  }, 60_000);
});

describe('GraphQL: createBulkSend, bulkSend and the bulkSendProgress subscription', () => {
  const BULK = `id status totalRows processedRows createdCount rejectedCount invitationsScheduled
    rows { row status error submissionId }`;

  it('JSON rows with explicit columns; progress over graphql-ws until completed, and the same by query', async () => {
    // Five batches: the subscription starts well before the last.
    const ROWS = 1000;
    const rows = Array.from({ length: ROWS }, (_, i) => ({
      'E-mail': i === 7 ? 'broken@' : `g${i}@bulk.test`,
      Who: `Guest ${i}`,
      Firm: `Firm ${i}`,
      Qty: i,
    }));
    const created = await gql(
      `mutation ($input: CreateBulkSendInput!) { createBulkSend(input: $input) { bulkSend { ${BULK} } } }`,
      {
        input: {
          templateId: single,
          rows,
          sendEmail: false,
          columns: [
            { column: 'E-mail', to: 'email' },
            { column: 'Who', role: 'signer', to: 'name' },
            { column: 'Firm', to: 'values.Company' },
            { column: 'Qty', to: 'values.amount' },
          ],
        },
      },
    );
    expect(created.body.errors).toBeUndefined();
    const bulk = created.body.data.createBulkSend.bulkSend;
    expect(bulk).toMatchObject({ totalRows: ROWS, processedRows: 0 });

    const client = wsClient(t.url, alice.apiKey);
    try {
      const feed = subscribeWs(
        client,
        'subscription ($id: Int!) { bulkSendProgress(id: $id) { status processedRows createdCount rejectedCount } }',
        { id: bulk.id },
      );
      const seen: { status: string; processedRows: number }[] = [];
      for (;;) {
        const message = await feed.next(30_000);
        expect(message.errors).toBeUndefined();
        seen.push(message.data.bulkSendProgress);
        if (message.data.bulkSendProgress.status === 'completed') break;
      }
      // It ends with the completed message.
      await until(() => feed.done, 5000, 'the subscription to end');
      // Subscribed once it is over: that state, and the end.
      const late = subscribeWs(
        client,
        'subscription ($id: Int!) { bulkSendProgress(id: $id) { status processedRows } }',
        { id: bulk.id },
      );
      expect((await late.next()).data.bulkSendProgress).toEqual({ status: 'completed', processedRows: ROWS });
      await until(() => late.done, 5000, 'the late subscription to end');
      // Now first, then a message per batch (200 rows), the last one completed with every row done.
      const processed = seen.map((s) => s.processedRows);
      expect(processed).toEqual([...processed].sort((a, b) => a - b));
      expect(seen.at(-1)).toEqual({
        status: 'completed',
        processedRows: ROWS,
        createdCount: ROWS - 1,
        rejectedCount: 1,
      });
      expect(seen.length).toBeGreaterThanOrEqual(2);
    } finally {
      await client.dispose();
    }

    const read = await gql(
      `query ($id: Int!) { bulkSend(id: $id) { ${BULK} rejected: rows(status: "rejected") { row error } } }`,
      { id: bulk.id },
    );
    expect(read.body.errors).toBeUndefined();
    expect(read.body.data.bulkSend).toMatchObject({
      status: 'completed',
      createdCount: ROWS - 1,
      rejectedCount: 1,
      invitationsScheduled: 0,
      rejected: [{ row: 8, error: 'email is invalid in `submitters[0]`.' }],
    });
    const made = read.body.data.bulkSend.rows.find((r: { row: number }) => r.row === 3);
    const submitter = await t.db.submitter.findFirstOrThrow({ where: { submissionId: made.submissionId } });
    expect(submitter).toMatchObject({ email: 'g2@bulk.test', name: 'Guest 2' });
    expect(Object.values(submitter.values as object).sort()).toEqual([2, 'Firm 2'].sort());
    expect(
      await t.db.submission.count({
        where: { id: { in: read.body.data.bulkSend.rows.map((r: any) => r.submissionId).filter(Boolean) } },
      }),
    ).toBe(ROWS - 1);
  }, 60_000);
});

describe('invitations at the rate asked', () => {
  it('rate_per_minute 240: eight invitations leave a quarter of a second apart, not at once', async () => {
    const csv = ['Email', ...Array.from({ length: 8 }, (_, i) => `r${i}@bulk.test`)].join('\n');
    const started = await api('POST', `/templates/${single}/submissions/bulk`, { csv, rate_per_minute: 240 });
    expect(started.status, JSON.stringify(started.json)).toBe(202);
    const report = await finished(started.json.id);
    expect(report).toMatchObject({ created_count: 8, invitations_scheduled: 8 });
    const mine = () => smtp.messages.filter((m) => /^r\d@bulk\.test$/.test(m.envelope.rcptTo[0] ?? ''));
    await until(() => mine().length === 8, 20_000);
    const times = mine()
      .map((m) => m.receivedAt)
      .sort((a, b) => a - b);
    // Never faster than the rate: the k-th leaves no earlier than its slot, k × 250 ms after the first slot
    // (the batch's time; the last slot + 250 ms is the bulk send's next_invitation_at).
    const bulk = await t.db.bulkSend.findUniqueOrThrow({ where: { id: started.json.id } });
    const firstSlot = bulk.nextInvitationAt!.getTime() - 8 * 250;
    const early = times.filter((at, k) => at < firstSlot + k * 250);
    expect(early, JSON.stringify(times.map((at) => at - firstSlot))).toEqual([]);
    // So the last leaves at least 7 intervals after the first slot (without pacing, all within ~0.2 s).
    expect(times.at(-1)! - firstSlot).toBeGreaterThanOrEqual(7 * 250);
    // The due time of the last one, as GET reports it: 7 intervals after the first slot.
    expect(Date.parse(report.invitations_due_by)).toBe(firstSlot + 7 * 250);
    await t.jobs.waitForIdle();
    expect(mine()).toHaveLength(8);
  }, 60_000);
});

describe('a batch run again (a job retried, or taken back from a dead instance while it ran)', () => {
  it('makes each row once: every batch run twice side by side, and once more after it committed', async () => {
    const TOTAL = BULK_SEND_BATCH_ROWS + 50;
    // A bulk send of two batches whose batches this test runs itself, twice each at once;
    // the batch-1 job the first batch records runs on the app's queue beside them.
    const bulk = await t.db.bulkSend.create({
      data: {
        accountId: alice.accountId,
        templateId: single,
        createdByUserId: alice.userId,
        settings: { send_email: false },
        ratePerMinute: 60_000,
        totalRows: TOTAL,
      },
    });
    await insertBulkSendRows(
      t.db,
      bulk.id,
      Array.from({ length: TOTAL }, (_, i) => [{ role: 'Signer', email: `twice${i + 1}@bulk.test` }]),
    );
    const deps = {
      db: t.db,
      storage: t.app.files.storage,
      effects: t.app.effects,
      live: t.app.live,
      config: t.config,
      logger: { warn: () => undefined },
    };
    const run = (batch: number) => runBulkSendBatch(deps, { bulkSendId: bulk.id, batch });
    await Promise.all([run(0), run(0)]);
    await run(0);
    await Promise.all([run(1), run(1)]);
    await run(0);
    const done = await t.db.bulkSend.findUniqueOrThrow({ where: { id: bulk.id } });
    expect(done).toMatchObject({ status: 'completed', createdCount: TOTAL, rejectedCount: 0 });
    const rows = await t.db.bulkSendRow.findMany({ where: { bulkSendId: bulk.id } });
    const submissionIds = rows.map((r) => r.submissionId);
    expect(new Set(submissionIds).size).toBe(TOTAL);
    const emails = await t.db.submitter.findMany({
      where: { email: { startsWith: 'twice' } },
      select: { email: true },
    });
    expect(emails).toHaveLength(TOTAL);
    await t.jobs.waitForIdle();
    expect(await t.db.submitter.count({ where: { email: { startsWith: 'twice' } } })).toBe(TOTAL);
  });
});

describe('another account', () => {
  it("Bob: Alice's template → 403, an unknown one → 404; Alice's bulk send → 403, an unknown one → 404", async () => {
    const body = { csv: 'Email\nprobe@bulk.test\n' };
    const before = await t.db.bulkSend.count();
    expect(await api('POST', `/templates/${single}/submissions/bulk`, body, bob.apiKey)).toEqual({
      status: 403,
      json: { error: 'Not authorized' },
    });
    expect(await api('POST', '/submissions/bulk', { ...body, template_id: single }, bob.apiKey)).toEqual({
      status: 403,
      json: { error: 'Not authorized' },
    });
    expect(await api('POST', '/templates/987654321/submissions/bulk', body, bob.apiKey)).toEqual({
      status: 404,
      json: { error: 'Template 987654321 not found' },
    });
    expect(await t.db.bulkSend.count()).toBe(before);
    const mine = await t.db.bulkSend.findFirstOrThrow({ where: { accountId: alice.accountId } });
    expect(await api('GET', `/submissions/bulk/${mine.id}`, undefined, bob.apiKey)).toEqual({
      status: 403,
      json: { error: 'Not authorized' },
    });
    expect(await api('GET', '/submissions/bulk/987654321', undefined, bob.apiKey)).toEqual({
      status: 404,
      json: { error: 'Bulk send 987654321 not found' },
    });
    const query = await gql('query ($id: Int!) { bulkSend(id: $id) { id } }', { id: mine.id }, bob.apiKey);
    expect(query.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const mutation = await gql(
      'mutation ($input: CreateBulkSendInput!) { createBulkSend(input: $input) { bulkSend { id } } }',
      { input: { templateId: single, csv: 'Email\nprobe@bulk.test\n' } },
      bob.apiKey,
    );
    expect(mutation.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(await t.db.bulkSend.count()).toBe(before);
  });
});
