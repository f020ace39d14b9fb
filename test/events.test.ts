/**
 * Which calls raise which domain events, checked against DocuSeal's table (reference
 * docuseal-behaviour.md §6 "Webhook event triggers", §7.7, §7.8, §8.2): each event is one
 * persisted `dispatch-event` job, so the tests read the jobs table (agenda.jobs) before and after
 * each call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { DISPATCH_EVENT_JOB, type DispatchEventData, type EventType } from '../src/events/events.ts';
import { graphql, rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { ANY_DESTINATION, subscribeToEveryEvent } from './helpers/webhook-receiver.ts';

let t: TestApp;
let alice: CreatedAccount;

const api = (method: string, path: string, body?: unknown) => rest(t.url, alice.apiKey, method, path, body);
const pdf = () => base64(fixturePdf('documenso-letter-size.pdf'));

interface DispatchedEvent extends DispatchEventData {
  jobId: string;
  uniqueKey: string | null;
}

/** Every dispatch-event job so far. */
async function dispatched(): Promise<DispatchedEvent[]> {
  const rows = await t.db.$queryRawUnsafe<{ id: string; payload: DispatchEventData; unique_key: string | null }[]>(
    `SELECT id::text, data->'payload' AS payload, data->>'uniqueKey' AS unique_key FROM agenda.jobs WHERE name = $1`,
    DISPATCH_EVENT_JOB,
  );
  return rows.map((r) => ({ ...r.payload, jobId: r.id, uniqueKey: r.unique_key }));
}

/**
 * The events of the given types that `action` raised, as "type:recordId", sorted. Events are
 * recorded (in the outbox) before the response is sent; they are read once relayed into jobs.
 */
async function raisedBy(types: EventType[], action: () => Promise<unknown>): Promise<string[]> {
  await t.outboxRelayed();
  const before = new Set((await dispatched()).map((e) => e.jobId));
  await action();
  await t.outboxRelayed();
  return (await dispatched())
    .filter((e) => !before.has(e.jobId) && types.includes(e.type))
    .map((e) => `${e.type}:${e.recordId}`)
    .sort();
}

const TEMPLATE_EVENTS: EventType[] = ['template.created', 'template.updated', 'template.archived'];

/** Checks the status and returns the JSON. */
async function ok(call: Promise<{ status: number; json: any }>): Promise<any> {
  const { status, json } = await call;
  expect(status, JSON.stringify(json)).toBe(200);
  return json;
}

async function createTemplate(body: Record<string, unknown> = {}): Promise<number> {
  const json = await ok(
    api('POST', '/templates/pdf', {
      name: 'Contract',
      documents: [{ name: 'contract', file: pdf() }],
      fields: [
        { name: 'Client Name', role: 'Client', areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }] },
        { name: 'Manager Name', role: 'Manager', areas: [{ x: 72, y: 200, w: 200, h: 24, page: 1 }] },
      ],
      ...body,
    }),
  );
  return json.id;
}

async function createSubmission(
  templateId: number,
  body: Record<string, unknown> = {},
): Promise<{ id: number; submitterIds: number[] }> {
  const json = await ok(
    api('POST', '/submissions', {
      template_id: templateId,
      send_email: false,
      submitters: [
        { role: 'Client', email: 'client@example.test' },
        { role: 'Manager', email: 'manager@example.test' },
      ],
      ...body,
    }),
  );
  return { id: json[0].submission_id, submitterIds: json.map((s: { id: number }) => s.id) };
}

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.createAccount({ name: 'Events Ltd', email: 'alice@events.test' });
  await subscribeToEveryEvent(t.db, alice.accountId);
});
afterAll(async () => {
  await t?.close();
});

describe('template events', () => {
  it('template.created: POST /templates/pdf, clone, merge, and the GraphQL create mutation', async () => {
    let id = 0;
    expect(await raisedBy(TEMPLATE_EVENTS, async () => (id = await createTemplate()))).toEqual([
      `template.created:${id}`,
    ]);
    let clone = 0;
    expect(
      await raisedBy(TEMPLATE_EVENTS, async () => (clone = (await ok(api('POST', `/templates/${id}/clone`, {}))).id)),
    ).toEqual([`template.created:${clone}`]);
    let merged = 0;
    expect(
      await raisedBy(
        TEMPLATE_EVENTS,
        async () => (merged = (await ok(api('POST', '/templates/merge', { template_ids: [id, clone] }))).id),
      ),
    ).toEqual([`template.created:${merged}`]);
    let viaGraphql = 0;
    expect(
      await raisedBy(TEMPLATE_EVENTS, async () => {
        const { body } = await graphql(
          t.url,
          'mutation ($input: CreateTemplateFromFileInput!) { ' +
            'createTemplateFromPdf(input: $input) { template { id } } }',
          { key: alice.apiKey, variables: { input: { name: 'GraphQL', documents: [{ name: 'doc', file: pdf() }] } } },
        );
        viaGraphql = body.data.createTemplateFromPdf.template.id;
      }),
    ).toEqual([`template.created:${viaGraphql}`]);
    expect(new Set([id, clone, merged, viaGraphql]).size).toBe(4);
  });

  it(
    'template.updated, not created, when POST /templates/pdf replaces the template ' + 'with the same external_id',
    async () => {
      let id = 0;
      expect(
        await raisedBy(TEMPLATE_EVENTS, async () => (id = await createTemplate({ external_id: 'ext-1' }))),
      ).toEqual([`template.created:${id}`]);
      let again = 0;
      expect(
        await raisedBy(TEMPLATE_EVENTS, async () => (again = await createTemplate({ external_id: 'ext-1' }))),
      ).toEqual([`template.updated:${id}`]);
      expect(again).toBe(id);
    },
  );

  it(
    'template.updated on every PUT /templates/{id}, even without a change, ' + 'and on PUT /templates/{id}/documents',
    async () => {
      const id = await createTemplate();
      expect(await raisedBy(TEMPLATE_EVENTS, () => ok(api('PUT', `/templates/${id}`, {})))).toEqual([
        `template.updated:${id}`,
      ]);
      expect(await raisedBy(TEMPLATE_EVENTS, () => ok(api('PUT', `/templates/${id}`, {})))).toEqual([
        `template.updated:${id}`,
      ]);
      expect(await raisedBy(TEMPLATE_EVENTS, () => ok(api('PUT', `/templates/${id}`, { name: 'Renamed' })))).toEqual([
        `template.updated:${id}`,
      ]);
      expect(
        await raisedBy(TEMPLATE_EVENTS, () =>
          ok(api('PUT', `/templates/${id}/documents`, { documents: [{ name: 'annex', file: pdf() }] })),
        ),
      ).toEqual([`template.updated:${id}`]);
    },
  );

  it('template.archived on every DELETE, and on PUT archived:true only when it changes', async () => {
    const id = await createTemplate();
    expect(await raisedBy(TEMPLATE_EVENTS, () => ok(api('PUT', `/templates/${id}`, { archived: true })))).toEqual([
      `template.archived:${id}`,
      `template.updated:${id}`,
    ]);
    expect(await raisedBy(TEMPLATE_EVENTS, () => ok(api('PUT', `/templates/${id}`, { archived: true })))).toEqual([
      `template.updated:${id}`,
    ]);
    expect(await raisedBy(TEMPLATE_EVENTS, () => ok(api('PUT', `/templates/${id}`, { archived: false })))).toEqual([
      `template.updated:${id}`,
    ]);
    expect(await raisedBy(TEMPLATE_EVENTS, () => ok(api('DELETE', `/templates/${id}`)))).toEqual([
      `template.archived:${id}`,
    ]);
    expect(await raisedBy(TEMPLATE_EVENTS, () => ok(api('DELETE', `/templates/${id}`)))).toEqual([
      `template.archived:${id}`,
    ]);
  });

  it('nothing for a refused call, nor for another account', async () => {
    const id = await createTemplate();
    const bob = await t.createAccount({ name: 'Bob', email: 'bob@events.test' });
    const all: EventType[] = [...TEMPLATE_EVENTS, 'submission.archived'];
    expect(
      await raisedBy(all, async () => {
        expect((await rest(t.url, bob.apiKey, 'PUT', `/templates/${id}`, { name: 'x' })).status).toBe(403);
        expect((await rest(t.url, bob.apiKey, 'DELETE', `/templates/${id}`)).status).toBe(403);
        expect((await api('PUT', `/templates/${id}`, { name: '' })).status).toBe(422);
        expect((await api('POST', '/templates/pdf', { name: 'x', documents: [] })).status).toBe(422);
      }),
    ).toEqual([]);
  });

  it('records the account and the time of each event', async () => {
    const before = Date.now();
    const id = await createTemplate();
    await t.outboxRelayed();
    const event = (await dispatched()).find((e) => e.type === 'template.created' && e.recordId === id)!;
    expect(event.accountId).toBe(alice.accountId);
    expect(Date.parse(event.at)).toBeGreaterThanOrEqual(before - 1000);
  });
});

describe('events nobody subscribes to', () => {
  it('make no dispatch-event job: none without an endpoint, none for a type the endpoints do not take', async () => {
    const carol = await t.createAccount({ name: 'Carol', email: 'carol@events.test' });
    const call = (method: string, path: string, body?: unknown) => rest(t.url, carol.apiKey, method, path, body);
    const created = await ok(
      call('POST', '/templates/pdf', { name: 'Quiet', documents: [{ name: 'quiet', file: pdf() }] }),
    );
    const touch = () => ok(call('PUT', `/templates/${created.id}`, { name: 'Quiet' }));
    const ofCarol = async () => {
      await t.outboxRelayed();
      return (await dispatched()).filter((e) => e.accountId === carol.accountId).map((e) => e.type);
    };
    await touch();
    expect(await ofCarol()).toEqual([]);
    // An endpoint for the form events only: template events still make no job.
    const { createWebhookEndpoint } = await import('../src/webhooks/endpoints.ts');
    await createWebhookEndpoint(t.db, {
      accountId: carol.accountId,
      url: 'http://127.0.0.1:9/forms',
      destination: ANY_DESTINATION,
    });
    await touch();
    expect(await ofCarol()).toEqual([]);
    // Subscribed: from now on each event is a job.
    await createWebhookEndpoint(t.db, {
      accountId: carol.accountId,
      url: 'http://127.0.0.1:9/templates',
      events: ['template.updated'],
      destination: ANY_DESTINATION,
    });
    await touch();
    await touch();
    expect(await ofCarol()).toEqual(['template.updated', 'template.updated']);
  });
});

describe('submission.archived', () => {
  it('on every DELETE /submissions/{id}, even when already archived', async () => {
    const { id } = await createSubmission(await createTemplate());
    expect(await raisedBy(['submission.archived'], () => ok(api('DELETE', `/submissions/${id}`)))).toEqual([
      `submission.archived:${id}`,
    ]);
    expect(await raisedBy(['submission.archived'], () => ok(api('DELETE', `/submissions/${id}`)))).toEqual([
      `submission.archived:${id}`,
    ]);
  });

  it('on PUT /submissions/{id} archived:true only when it changes; not for other changes', async () => {
    const { id } = await createSubmission(await createTemplate());
    expect(
      await raisedBy(['submission.archived'], () => ok(api('PUT', `/submissions/${id}`, { name: 'Renamed' }))),
    ).toEqual([]);
    expect(
      await raisedBy(['submission.archived'], () => ok(api('PUT', `/submissions/${id}`, { archived: true }))),
    ).toEqual([`submission.archived:${id}`]);
    expect(
      await raisedBy(['submission.archived'], () => ok(api('PUT', `/submissions/${id}`, { archived: true }))),
    ).toEqual([]);
    expect(
      await raisedBy(['submission.archived'], () => ok(api('PUT', `/submissions/${id}`, { archived: false }))),
    ).toEqual([]);
    expect(
      await raisedBy(['submission.archived'], () => ok(api('PUT', `/submissions/${id}`, { archived: 'true' }))),
    ).toEqual([`submission.archived:${id}`]);
  });
});

describe('submission.expired', () => {
  /** expire_at about `ms` from now (the job runs then). */
  const soon = (ms = 1200) => new Date(Date.now() + ms).toISOString();
  /** Lets every expiry job due within a few seconds run. */
  const runExpiryJobs = () => t.jobs.waitForIdle({ withinMs: 8000, timeoutMs: 30_000 });

  it('once, from the expiry job at expire_at, with key submission.expired:<id>', async () => {
    const templateId = await createTemplate();
    let id = 0;
    const raised = await raisedBy(['submission.expired'], async () => {
      id = (await createSubmission(templateId, { expire_at: soon() })).id;
      await runExpiryJobs();
    });
    expect(raised).toEqual([`submission.expired:${id}`]);
    const event = (await dispatched()).find((e) => e.type === 'submission.expired' && e.recordId === id)!;
    expect(event.uniqueKey).toBe(`submission.expired:${id}`);
    expect(event.accountId).toBe(alice.accountId);
    const read = await ok(api('GET', `/submissions/${id}`));
    expect(read.status).toBe('expired');
  });

  it('not when archived, completed, declined, or its template archived', async () => {
    const templateId = await createTemplate();
    const archived = await createSubmission(templateId);
    const completed = await createSubmission(templateId);
    const declined = await createSubmission(templateId);
    const otherTemplate = await createTemplate();
    const templateArchived = await createSubmission(otherTemplate);
    await ok(api('DELETE', `/submissions/${archived.id}`));
    for (const submitterId of completed.submitterIds)
      await ok(api('PUT', `/submitters/${submitterId}`, { completed: true }));
    // Declining happens in the signing form; its effect on the row is what the job reads.
    await t.db.submitter.update({ where: { id: declined.submitterIds[0]! }, data: { declinedAt: new Date() } });
    await ok(api('DELETE', `/templates/${otherTemplate}`));
    // The expiry is set once the state is in place, so the job cannot run before it.
    const raised = await raisedBy(['submission.expired'], async () => {
      const expireAt = soon();
      for (const { id } of [archived, completed, declined, templateArchived])
        await ok(api('PUT', `/submissions/${id}`, { expire_at: expireAt }));
      await runExpiryJobs();
    });
    expect(raised).toEqual([]);
  });

  it('not at an expire_at that was moved meanwhile: at the new one instead', async () => {
    const templateId = await createTemplate();
    let id = 0;
    let later = '';
    const raised = await raisedBy(['submission.expired'], async () => {
      id = (await createSubmission(templateId, { expire_at: soon(3000) })).id;
      later = soon(5000);
      await ok(api('PUT', `/submissions/${id}`, { expire_at: later }));
      await runExpiryJobs();
    });
    expect(raised).toEqual([`submission.expired:${id}`]);
    // Raised by the second job: the first, due earlier, found expire_at changed.
    const event = (await dispatched()).find((e) => e.type === 'submission.expired' && e.recordId === id)!;
    expect(Date.parse(event.at)).toBeGreaterThanOrEqual(Date.parse(later));
  });
});
