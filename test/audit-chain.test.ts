/**
 * The audit trail's hash chain (issue 17): every submission_events row, whichever code inserts it,
 * stores its place, the previous event's SHA-256 and its own; concurrent inserts for one submission
 * never fork the chain; rows are append-only; a changed, removed or truncated chain is reported by
 * /tools/verify (GraphQL verifyPdf); the audit log prints the chain head; the migration chains the
 * events written before it.
 *
 * The hash is recomputed here independently of the database function, from the documented bytes
 * (docs/signatures.md "The audit trail"): SHA-256 of the UTF-8 text jsonb gives the array
 * [place, previous hash hex or null, id, account_id, submission_id, submitter_id, event_type,
 * event_timestamp, data, created_at], timestamps as ISO 8601 UTC with milliseconds.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { applyMigrations, MIGRATIONS_DIR } from '../src/db/migrate.ts';
import { verifyAuditChain } from '../src/signing/audit-chain.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { createTestDatabase } from './helpers/database.ts';
import { scratchFile } from './helpers/pades-verifier.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
let templateId: number;

const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Chain Ltd', email: 'chain@audit.test' });
  const template = await api('POST', '/templates/pdf', {
    name: 'Chain',
    documents: [{ name: 'doc', file: base64(fixturePdf('docuseal-sample-document.pdf')) }],
    fields: [
      { name: 'A', role: 'First', areas: [{ x: 60, y: 60, w: 200, h: 20, page: 1 }] },
      { name: 'B', role: 'Second', areas: [{ x: 60, y: 100, w: 200, h: 20, page: 1 }] },
    ],
  });
  expect(template.status, JSON.stringify(template.json)).toBe(200);
  templateId = template.json.id;
}, 60_000);
afterAll(async () => {
  await t?.close();
});

/** jsonb's text form (PostgreSQL's jsonb output): ", " and ": " separators, object keys by length then bytes. */
function jsonbText(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `[${value.map(jsonbText).join(', ')}]`;
  if (typeof value === 'object') {
    const keys = Object.keys(value as object).sort((a, b) => {
      const [x, y] = [Buffer.from(a), Buffer.from(b)];
      return x.length - y.length || Buffer.compare(x, y);
    });
    const entry = (k: string) => `${JSON.stringify(k)}: ${jsonbText((value as Record<string, unknown>)[k])}`;
    return `{${keys.map(entry).join(', ')}}`;
  }
  return JSON.stringify(value);
}

interface EventRow {
  id: number;
  account_id: number;
  submission_id: number;
  submitter_id: number | null;
  event_type: string;
  event_timestamp: string;
  data: unknown;
  created_at: string;
  chain_seq: number;
  prev_hash: string | null;
  hash: string;
}

/** A submission's events in chain order, timestamps as the ISO text the hash uses. */
async function eventsOf(submissionId: number): Promise<EventRow[]> {
  return t.db.$queryRawUnsafe<EventRow[]>(
    `SELECT id, account_id, submission_id, submitter_id, event_type, data, chain_seq,
            to_char(event_timestamp, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS event_timestamp,
            to_char(created_at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
            encode(prev_hash, 'hex') AS prev_hash, encode(hash, 'hex') AS hash
       FROM submission_events WHERE submission_id = $1 ORDER BY chain_seq`,
    submissionId,
  );
}

/** The chain checked here, without the database's function: places, links and each hash recomputed. */
function expectChained(events: EventRow[]): void {
  expect(events.length).toBeGreaterThan(0);
  let previous: string | null = null;
  events.forEach((event, index) => {
    expect(event.chain_seq, `event ${event.id}`).toBe(index + 1);
    expect(event.prev_hash, `event ${event.id}`).toBe(previous);
    const content = jsonbText([
      event.chain_seq,
      event.prev_hash,
      event.id,
      event.account_id,
      event.submission_id,
      event.submitter_id,
      event.event_type,
      event.event_timestamp,
      event.data,
      event.created_at,
    ]);
    expect(event.hash, `event ${event.id}`).toBe(createHash('sha256').update(content, 'utf8').digest('hex'));
    previous = event.hash;
  });
}

async function createSubmission(submitters: Record<string, unknown>[], sendEmail = false) {
  const created = await api('POST', '/submissions', { template_id: templateId, send_email: sendEmail, submitters });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  return created.json as { id: number; submission_id: number; slug: string }[];
}

const formOperation = (mutation: string, variables: Record<string, unknown>) =>
  graphql(t.url, mutation, { variables, headers: { 'user-agent': 'ChainSigner/1.0' } });

describe('every insert is chained', () => {
  it('events of the create statement (two in one statement), the signing form (Prisma), deliveries ' +
    '(SQL of src/db/queries), a completion failure, and a plain INSERT of a future event type', async () => {
    // Both parties completed at creation: the create statement inserts two api_complete_form events.
    const [first] = await createSubmission([
      { role: 'First', email: 'a@audit.test', completed: true, values: { A: 'a' } },
      { role: 'Second', email: 'b@audit.test', completed: true, values: { B: 'b' } },
    ]);
    await t.app.jobs.waitForIdle({ timeoutMs: 60_000 });
    // Emails (kept in the outbox: send_email rows through notification-events.ts), then the form opened and declined.
    const [second, third] = await createSubmission(
      [
        { role: 'First', email: 'c@audit.test' },
        { role: 'Second', email: 'd@audit.test' },
      ],
      true,
    );
    await t.app.jobs.waitForIdle({ timeoutMs: 60_000 });
    const opened = await formOperation('mutation ($slug: String!) { openSigningForm(slug: $slug) { slug } }', {
      slug: second!.slug,
    });
    expect(opened.body.errors).toBeUndefined();
    const declined = await formOperation(
      'mutation ($slug: String!, $reason: String!) { declineSigningForm(slug: $slug, reason: $reason) { slug } }',
      { slug: third!.slug, reason: 'No' },
    );
    expect(declined.body.errors).toBeUndefined();
    // A completion that gave up (Prisma, in src/signing/complete-submission.ts), and an event type added later.
    const { recordCompletionFailure } = await import('../src/signing/complete-submission.ts');
    await recordCompletionFailure(
      { db: t.db },
      { submissionId: second!.submission_id },
      { error: new Error('x'), attempt: 4, permanent: false },
    );
    await t.db.$executeRaw`INSERT INTO submission_events (account_id, submission_id, event_type, data)
                             VALUES (${alice.accountId}, ${second!.submission_id}, 'send_reminder_email', '{"n": 1}')`;

    const completedEvents = await eventsOf(first!.submission_id);
    expect(completedEvents.map((e) => e.event_type)).toEqual(['api_complete_form', 'api_complete_form']);
    expectChained(completedEvents);
    const events = await eventsOf(second!.submission_id);
    expect(events.map((e) => e.event_type)).toEqual(
      expect.arrayContaining(['send_email', 'view_form', 'decline_form', 'fail_completion', 'send_reminder_email']),
    );
    expectChained(events);
    expect((await verifyAuditChain(t.db, second!.submission_id, null)).intact).toBe(true);
  }, 120_000);
});

/**
 * `count` connections of their own, all open or none: when one cannot open (the server's
 * max_connections reached by suites running beside this one), the others are closed rather than
 * left to be cut when the database is dropped — which, with no 'error' listener, would be an
 * uncaught exception in another test's time.
 */
async function openClients(count: number): Promise<pg.Client[]> {
  const clients = Array.from({ length: count }, () => {
    const client = new pg.Client({ connectionString: t.database.url });
    client.on('error', () => undefined);
    return client;
  });
  const opened = await Promise.allSettled(clients.map((client) => client.connect()));
  const refused = opened.find((result) => result.status === 'rejected');
  if (refused) {
    await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
    throw refused.reason;
  }
  return clients;
}

describe('concurrent inserts', () => {
  it('for one submission, from 24 transactions at once (some insert two, one rolls back), make one chain', async () => {
    const [party] = await createSubmission([
      { role: 'First', email: 'e@audit.test' },
      { role: 'Second', email: 'f@audit.test' },
    ]);
    const submissionId = party!.submission_id;
    const clients = await openClients(24);
    try {
      for (const client of clients) await client.query('BEGIN');
      // Every transaction inserts at the same moment and holds its transaction open a while after.
      const started = Date.now();
      await Promise.all(
        clients.map(async (client, i) => {
          const insert = () =>
            client.query(
              `INSERT INTO submission_events (account_id, submission_id, event_type, data)
               VALUES ($1, $2, 'concurrent', jsonb_build_object('client', $3::int))`,
              [alice.accountId, submissionId, i],
            );
          await insert();
          if (i % 3 === 0) await insert();
          await new Promise((resolve) => setTimeout(resolve, 5 + (i % 4) * 5));
          await client.query(i === 7 ? 'ROLLBACK' : 'COMMIT');
        }),
      );
      const elapsed = Date.now() - started;
      const events = (await eventsOf(submissionId)).filter((e) => e.event_type === 'concurrent');
      // 24 transactions, 8 of them with two inserts, one rolled back (client 7: one insert).
      expect(events).toHaveLength(24 + 8 - 1);
      expect(events.some((e) => (e.data as { client: number }).client === 7)).toBe(false);
      expectChained(await eventsOf(submissionId));
      expect((await verifyAuditChain(t.db, submissionId, null)).intact).toBe(true);
      // They waited for each other (serialised per submission), which is what keeps the chain whole.
      expect(elapsed).toBeGreaterThanOrEqual(5 * 23);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  it('for different submissions, do not wait for each other', async () => {
    const parties = await createSubmission([
      { role: 'First', email: 'g@audit.test' },
      { role: 'Second', email: 'h@audit.test' },
    ]);
    const other = await createSubmission([
      { role: 'First', email: 'i@audit.test' },
      { role: 'Second', email: 'j@audit.test' },
    ]);
    const [a, b] = [parties[0]!.submission_id, other[0]!.submission_id];
    const holder = new pg.Client({ connectionString: t.database.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(
        `INSERT INTO submission_events (account_id, submission_id, event_type) VALUES ($1, $2, 'held')`,
        [alice.accountId, a],
      );
      // Submission A's chain is held by the open transaction; B's insert goes through at once.
      await t.db.$executeRaw`INSERT INTO submission_events (account_id, submission_id, event_type)
                             VALUES (${alice.accountId}, ${b}, 'free')`;
      await holder.query('COMMIT');
    } finally {
      await holder.end();
    }
    expectChained(await eventsOf(a));
    expectChained(await eventsOf(b));
  });
});

describe('tampering', () => {
  let submissionId: number;
  let document: Buffer;
  let auditLog: Buffer;

  beforeAll(async () => {
    const [party] = await createSubmission([
      { role: 'First', email: 'k@audit.test', completed: true, values: { A: 'k' } },
      { role: 'Second', email: 'l@audit.test', completed: true, values: { B: 'l' } },
    ]);
    submissionId = party!.submission_id;
    await t.app.jobs.waitForIdle({ timeoutMs: 90_000 });
    const submission = (await api('GET', `/submissions/${submissionId}`)).json;
    expect(submission.status).toBe('completed');
    document = Buffer.from(await (await fetch(submission.documents[0].url)).arrayBuffer());
    auditLog = Buffer.from(await (await fetch(submission.audit_log_url)).arrayBuffer());
    // Events after completion (a copy's email opened, …): the chain goes on past the audit log's head.
    for (const type of ['click_email', 'view_form'])
      await t.db.$executeRaw`INSERT INTO submission_events (account_id, submission_id, event_type)
                             VALUES (${alice.accountId}, ${submissionId}, ${type})`;
  }, 120_000);

  const auditTrail = async (file: Buffer) => {
    const { status, json } = await api('POST', '/tools/verify', { file: file.toString('base64') });
    expect(status, JSON.stringify(json)).toBe(200);
    return json.audit_trail;
  };

  it('the audit log prints the chain head as it was at completion; /tools/verify finds the chain intact', async () => {
    const events = await eventsOf(submissionId);
    const text = execFileSync('pdftotext', [scratchFile(auditLog), '-'])
      .toString()
      .replace(/\s+/g, ' ');
    const printed = /(\d+) events, chain head ([0-9a-f]{64})/.exec(text);
    expect(printed).not.toBeNull();
    const sealed = events.find((e) => e.chain_seq === Number(printed![1]))!;
    expect(sealed.hash).toBe(printed![2]);
    for (const file of [document, auditLog])
      expect(await auditTrail(file)).toEqual({
        submission_id: submissionId,
        intact: true,
        events: events.length,
        head: events.at(-1)!.hash,
        sealed: { events: sealed.chain_seq, head: sealed.hash, in_chain: true },
        problems: [],
      });
    // GraphQL says the same.
    const { body } = await graphql(
      t.url,
      'query ($file: String!) { verifyPdf(file: $file) { auditTrail { intact events head sealed { inChain } } } }',
      { key: alice.apiKey, variables: { file: document.toString('base64') } },
    );
    expect(body.data.verifyPdf.auditTrail).toEqual({
      intact: true,
      events: events.length,
      head: events.at(-1)!.hash,
      sealed: { inChain: true },
    });
  });

  it('an UPDATE of an event is refused', async () => {
    await expect(
      t.db.$executeRaw`UPDATE submission_events SET data = '{"forged": true}' WHERE submission_id = ${submissionId}`,
    ).rejects.toThrow(/append-only/);
  });

  it('a changed event, one removed, and the last ones removed are reported', async () => {
    // Behind the service's back: with triggers off (a superuser editing the table).
    const tamper = async (sql: string) => {
      const client = new pg.Client({ connectionString: t.database.url });
      await client.connect();
      try {
        await client.query("SET session_replication_role = 'replica'");
        await client.query(sql, [submissionId]);
      } finally {
        await client.end();
      }
    };
    const events = await eventsOf(submissionId);
    expect(events).toHaveLength(4);
    const [firstEvent, secondEvent] = events;
    await tamper(
      `UPDATE submission_events SET data = '{"ip": "10.0.0.1"}' WHERE id = ${firstEvent!.id} AND submission_id = $1`,
    );
    let trail = await auditTrail(document);
    expect(trail.intact).toBe(false);
    expect(trail.problems).toContain(`event ${firstEvent!.id}: its content no longer matches its hash`);

    await tamper(
      `UPDATE submission_events SET data = '${JSON.stringify(firstEvent!.data)}'
        WHERE id = ${firstEvent!.id} AND submission_id = $1`,
    );
    expect((await auditTrail(document)).intact).toBe(true);

    // The second event (the audit log's head) removed: the third no longer links, and the head is gone.
    await tamper(`DELETE FROM submission_events WHERE id = ${secondEvent!.id} AND submission_id = $1`);
    trail = await auditTrail(document);
    expect(trail.intact).toBe(false);
    expect(trail.problems).toContain(`event ${events[2]!.id}: place 3 where 2 was due`);
    expect(trail.problems).toContain(`event ${events[2]!.id}: does not link to the event before it`);

    // Only the last events removed: the chain that is left links, but the audit log's head is gone.
    await tamper('DELETE FROM submission_events WHERE submission_id = $1 AND chain_seq > 1');
    trail = await auditTrail(document);
    expect(trail.events).toBe(1);
    expect(trail.problems).toEqual([
      `the audit log's chain head (event ${trail.sealed.events}) is no longer in the chain`,
    ]);
    expect(trail.intact).toBe(false);
  });
});

describe('the migration', () => {
  it('chains the events written before it, in id order per submission', async () => {
    const database = await createTestDatabase({ migrate: false });
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-migrations-'));
    try {
      const folders = (await fs.readdir(MIGRATIONS_DIR, { withFileTypes: true }))
        .filter((e) => e.isDirectory() && e.name < '20261127150000')
        .map((e) => e.name);
      for (const folder of folders)
        await fs.cp(path.join(MIGRATIONS_DIR, folder), path.join(dir, folder), { recursive: true });
      await fs.copyFile(path.join(MIGRATIONS_DIR, 'migration_lock.toml'), path.join(dir, 'migration_lock.toml'));
      await applyMigrations({ connectionString: database.url, migrationsDir: dir });
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        await client.query(`INSERT INTO accounts (id, name, updated_at) VALUES (1, 'Old', now())`);
        await client.query(
          `INSERT INTO templates (id, account_id, slug, name, updated_at) VALUES (1, 1, 'old', 'Old', now())`,
        );
        for (const id of [1, 2])
          await client.query(
            `INSERT INTO submissions (id, account_id, template_id, slug, updated_at) VALUES ($1, 1, 1, $2, now())`,
            [id, `old-${id}`],
          );
        for (const [submission, type] of [
          [1, 'a'],
          [2, 'b'],
          [1, 'c'],
          [1, 'd'],
          [2, 'e'],
        ] as const)
          await client.query(
            `INSERT INTO submission_events (account_id, submission_id, event_type) VALUES (1, $1, $2)`,
            [submission, type],
          );
      } finally {
        await client.end();
      }
      await applyMigrations({ connectionString: database.url });
      const checked = new pg.Client({ connectionString: database.url });
      await checked.connect();
      try {
        const rows = (
          await checked.query(
            `SELECT submission_id, event_type, chain_seq, encode(prev_hash, 'hex') AS prev, encode(hash, 'hex') AS hash,
                    encode(submission_event_hash(chain_seq, prev_hash, id, account_id, submission_id, submitter_id,
                                                 event_type, event_timestamp, data, created_at), 'hex') AS recomputed
               FROM submission_events ORDER BY submission_id, chain_seq`,
          )
        ).rows;
        expect(rows.map((r) => [r.submission_id, r.event_type, r.chain_seq])).toEqual([
          [1, 'a', 1],
          [1, 'c', 2],
          [1, 'd', 3],
          [2, 'b', 1],
          [2, 'e', 2],
        ]);
        for (const [i, row] of rows.entries()) {
          expect(row.hash).toBe(row.recomputed);
          expect(row.prev).toBe(row.chain_seq === 1 ? null : rows[i - 1].hash);
        }
      } finally {
        await checked.end();
      }
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
      await database.drop();
    }
  });
});
