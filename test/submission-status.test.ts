/**
 * A submission's status rules are defined once, in src/submissions/status.ts (issue 14 item 1):
 * the display status (submissionStatus) and the `status=` filters (SUBMISSION_STATUS_FILTERS,
 * DocuSeal's scopes: `pending` keeps declined ones, `expired` keeps declined ones). The filters'
 * SQL (src/db/queries/submission-page.ts) is made from those rules; on a database with one
 * submission in every state, it must select exactly what the TypeScript predicates select, and
 * every place that shows a status (GraphQL, GET /submissions) must show what the functions say.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { submissionPageIds } from '../src/db/queries/submission-page.ts';
import {
  matchesStatusFilter,
  SUBMISSION_STATUS_FILTERS,
  SUBMISSION_STATUSES,
  type SubmissionStatus,
  submissionStatus,
  submitterStatus,
} from '../src/submissions/status.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';

let t: TestApp;
let alice: CreatedAccount;
const api = (method: string, path: string, body?: unknown) => rest(t.url, alice.apiKey, method, path, body);

/** The time the filters are judged at in the direct comparisons: a submission expires exactly then. */
const NOW = new Date('2031-05-06T07:08:09.123Z');

/** Submission id by state. */
const ids: Record<string, number> = {};

const STATES = [
  'pending',
  'opened',
  'partlyCompleted',
  'completed',
  'completedAfterExpiry',
  'declined',
  'expired',
  'declinedAndExpired',
  'archived',
  'expiresAtNow',
] as const;

async function rows() {
  return t.db.submission.findMany({
    where: { accountId: alice.accountId },
    orderBy: { id: 'asc' },
    select: {
      id: true,
      completedAt: true,
      expireAt: true,
      submitters: {
        orderBy: { id: 'asc' },
        select: { id: true, declinedAt: true, completedAt: true, openedAt: true, sentAt: true },
      },
    },
  });
}

const stateOf = (id: number) => Object.entries(ids).find(([, v]) => v === id)![0];

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ email: 'alice@status.test' });
  const template = await api('POST', '/templates/pdf', {
    name: 'Two parties',
    documents: [{ name: 'doc', file: base64(fixturePdf('documenso-letter-size.pdf')) }],
    fields: [
      { name: 'First Name', role: 'First Party', areas: [{ x: 72, y: 72, w: 150, h: 24, page: 1 }] },
      { name: 'Second Name', role: 'Second Party', areas: [{ x: 72, y: 200, w: 150, h: 24, page: 1 }] },
    ],
  });
  expect(template.status, JSON.stringify(template.json)).toBe(200);
  for (const state of STATES) {
    const { status, json } = await api('POST', '/submissions', {
      template_id: template.json.id,
      send_email: false,
      submitters: [
        { role: 'First Party', email: `${state}.first@x.test` },
        { role: 'Second Party', email: `${state}.second@x.test` },
      ],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    ids[state] = json[0].submission_id;
  }
  await t.app.jobs.waitForIdle({ timeoutMs: 60_000 });
  // The states are set on the columns directly: the rules read nothing else.
  const at = (column: string, state: string, which: 'first' | 'second' | 'both', time = '2026-01-01 00:00:00') =>
    t.db.$executeRawUnsafe(
      `UPDATE submitters SET ${column} = $1::timestamp WHERE submission_id = $2 ${
        which === 'both' ? '' : `AND email LIKE '%.${which}@x.test'`
      }`,
      time,
      ids[state],
    );
  const submission = (column: string, state: string, time: string) =>
    t.db.$executeRawUnsafe(`UPDATE submissions SET ${column} = $1::timestamp WHERE id = $2`, time, ids[state]);
  await at('opened_at', 'opened', 'first');
  await at('completed_at', 'partlyCompleted', 'first');
  await at('completed_at', 'completed', 'both');
  await submission('completed_at', 'completed', '2026-01-01 00:00:00');
  await at('completed_at', 'completedAfterExpiry', 'both');
  await submission('completed_at', 'completedAfterExpiry', '2026-01-01 00:00:00');
  await submission('expire_at', 'completedAfterExpiry', '2020-01-01 00:00:00');
  await at('declined_at', 'declined', 'second');
  await submission('expire_at', 'expired', '2020-01-01 00:00:00');
  await at('declined_at', 'declinedAndExpired', 'first');
  await submission('expire_at', 'declinedAndExpired', '2020-01-01 00:00:00');
  expect((await api('DELETE', `/submissions/${ids.archived}`)).status).toBe(200);
  await submission('expire_at', 'expiresAtNow', NOW.toISOString().replace('T', ' ').replace('Z', ''));
});
afterAll(async () => {
  await t?.close();
});

describe('the status=… filters', () => {
  // What DocuSeal's scopes select (reference §4), at NOW: written out, so that a rule and its SQL
  // changed together still fail here.
  const expected: Record<SubmissionStatus, string[]> = {
    pending: ['pending', 'opened', 'partlyCompleted', 'declined', 'archived'],
    completed: ['completed', 'completedAfterExpiry'],
    declined: ['declined', 'declinedAndExpired'],
    expired: ['expired', 'declinedAndExpired', 'expiresAtNow'],
  };

  it.each(SUBMISSION_STATUSES)('%s: the SQL selects exactly what the TypeScript rule selects', async (status) => {
    const all = await rows();
    expect(all).toHaveLength(STATES.length);
    const byRule = all.filter((s) => matchesStatusFilter(status, s, NOW)).map((s) => s.id);
    const facts = SUBMISSION_STATUS_FILTERS[status];
    const bySql = await submissionPageIds(t.db, { accountId: alice.accountId, facts, limit: 100, now: NOW });
    expect(bySql.map(stateOf)).toEqual(byRule.map(stateOf));
    expect(byRule.map(stateOf).sort()).toEqual([...expected[status]].sort());
    // With the other parameters around it (placeholders numbered after it, or none for it).
    const after = await submissionPageIds(t.db, {
      accountId: alice.accountId,
      facts,
      after: ids.pending,
      archived: false,
      limit: 100,
      now: NOW,
    });
    expect(after).toEqual(byRule.filter((id) => id > ids.pending! && id !== ids.archived));
  });

  it.each(SUBMISSION_STATUSES)('%s over REST and GraphQL, judged now, as the rule says', async (status) => {
    const now = new Date();
    const byRule = (await rows()).filter((s) => matchesStatusFilter(status, s, now)).map((s) => s.id);
    const listed = await api('GET', `/submissions?status=${status}&limit=100`);
    expect(listed.status).toBe(200);
    expect(listed.json.data.map((s: { id: number }) => stateOf(s.id))).toEqual(byRule.map(stateOf));
    const { body } = await graphql(t.url, `query($s: String) { submissions(status: $s, limit: 100) { ids } }`, {
      key: alice.apiKey,
      variables: { s: status },
    });
    expect(body.data.submissions.ids).toEqual(byRule);
  });

  it('a submission showing status X is matched by the filter X', async () => {
    for (const s of await rows()) {
      const shown = submissionStatus(s, s.submitters, NOW);
      expect(matchesStatusFilter(shown, s, NOW), stateOf(s.id)).toBe(true);
    }
  });
});

describe('the display status', () => {
  it('is completed → declined → expired → pending, archived or not', async () => {
    const shown = Object.fromEntries(
      (await rows()).map((s) => [stateOf(s.id), submissionStatus(s, s.submitters, NOW)]),
    );
    expect(shown).toEqual({
      pending: 'pending',
      opened: 'pending',
      partlyCompleted: 'pending',
      completed: 'completed',
      completedAfterExpiry: 'completed',
      declined: 'declined',
      expired: 'expired',
      declinedAndExpired: 'declined',
      archived: 'pending',
      expiresAtNow: 'expired',
    });
  });

  it('GraphQL and GET /submissions show what submissionStatus and submitterStatus say', async () => {
    const now = new Date();
    const all = await rows();
    const listed = await api('GET', '/submissions?limit=100');
    expect(listed.status).toBe(200);
    const { body } = await graphql(
      t.url,
      'query { submissions(limit: 100) { nodes { id status submitters { id status } } } }',
      { key: alice.apiKey },
    );
    expect(body.errors).toBeUndefined();
    const byRule = all.map((s) => ({
      id: s.id,
      status: submissionStatus(s, s.submitters, now),
      submitters: s.submitters.map((x) => ({ id: x.id, status: submitterStatus(x) })),
    }));
    const ofItem = (s: { id: number; status: string; submitters: { id: number; status: string }[] }) => ({
      id: s.id,
      status: s.status,
      submitters: s.submitters.map((x) => ({ id: x.id, status: x.status })),
    });
    expect(listed.json.data.map(ofItem)).toEqual(byRule);
    expect(body.data.submissions.nodes.map(ofItem)).toEqual(byRule);
    // Every submitter status occurs but `sent` (no request was sent): the fixture covers the rule.
    expect(new Set(byRule.flatMap((s) => s.submitters.map((x) => x.status)))).toEqual(
      new Set(['awaiting', 'opened', 'completed', 'declined']),
    );
  });
});
