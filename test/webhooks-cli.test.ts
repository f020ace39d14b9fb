/**
 * `signet webhook add | list | remove` run as real processes against a service's database: the
 * one JSON line of each, the defaults, refusals (exit 2, nothing written), and a secret printed
 * by `add` that verifies the signature of a delivery the service then makes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, drawPdf } from './helpers/pdfs.ts';
import { runSignet } from './helpers/processes.ts';
import { signatureMatches, startReceiver, type Receiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
let receiver: Receiver;
let account: CreatedAccount;
let env: Record<string, string>;

function jsonLine(stdout: string): any {
  const lines = stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!);
}

beforeAll(async () => {
  t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  receiver = await startReceiver();
  account = await t.createAccount({ email: 'owner@cli-webhooks.test' });
  env = { DATABASE_URL: t.database.url };
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

describe('signet webhook', { timeout: 180_000 }, () => {
  it('add prints {id, url, events, secret} with the form.* events by default; list shows no secret; remove deletes', async () => {
    const added = await runSignet(['webhook', 'add', '--account-id', String(account.accountId), '--url', 'https://hooks.example.com/in'], env);
    expect(added.code, added.stderr).toBe(0);
    const endpoint = jsonLine(added.stdout);
    expect(Object.keys(endpoint)).toEqual(['id', 'url', 'events', 'secret']);
    expect(endpoint).toEqual({
      id: expect.any(Number),
      url: 'https://hooks.example.com/in',
      events: ['form.viewed', 'form.started', 'form.completed', 'form.declined'],
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{32}$/),
    });

    const listed = await runSignet(['webhook', 'list', '--account-id', String(account.accountId)], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(jsonLine(listed.stdout)).toEqual([
      { id: endpoint.id, accountId: account.accountId, url: 'https://hooks.example.com/in', events: endpoint.events, headerName: null, enabled: true, createdAt: expect.stringMatching(/Z$/) },
    ]);
    expect(listed.stdout).not.toContain('whsec_');

    const removed = await runSignet(['webhook', 'remove', '--id', String(endpoint.id)], env);
    expect(removed.code, removed.stderr).toBe(0);
    expect(jsonLine(removed.stdout)).toEqual({ id: endpoint.id });
    expect(jsonLine((await runSignet(['webhook', 'list', '--account-id', String(account.accountId)], env)).stdout)).toEqual([]);
  });

  it('exits 2 with a message on bad input, writing nothing', async () => {
    const before = await t.db.webhookEndpoint.count();
    const cases: [string[], RegExp][] = [
      [['webhook', 'add', '--account-id', String(account.accountId)], /Missing --url/],
      [['webhook', 'add', '--url', 'https://x.example'], /Missing --account-id/],
      [['webhook', 'add', '--account-id', 'abc', '--url', 'https://x.example'], /--account-id must be a positive integer/],
      [['webhook', 'add', '--account-id', String(account.accountId), '--url', 'ftp://x.example'], /url must be an http or https URL/],
      [['webhook', 'add', '--account-id', String(account.accountId), '--url', 'https://x.example', '--events', 'form.completed,form.exploded'], /unknown event type form\.exploded/],
      [['webhook', 'add', '--account-id', '999999', '--url', 'https://x.example'], /Account 999999 not found/],
      [['webhook', 'remove', '--id', '999999'], /Webhook endpoint 999999 not found/],
      [['webhook', 'remove', '--id', '0'], /--id must be a positive integer/],
      [['webhook', 'list'], /Missing --account-id/],
      [['webhook', 'rename'], /Unknown command "webhook rename"/],
    ];
    for (const [args, message] of cases) {
      const result = await runSignet(args, env);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(message);
    }
    expect(await t.db.webhookEndpoint.count()).toBe(before);
  });

  it('the printed secret verifies the deliveries of the events chosen with --events', async () => {
    const added = await runSignet(
      ['webhook', 'add', '--account-id', String(account.accountId), '--url', `${receiver.url}/cli`, '--events', 'template.created, template.updated', '--header-name', 'X-From', '--header-value', 'cli'],
      env,
    );
    expect(added.code, added.stderr).toBe(0);
    const endpoint = jsonLine(added.stdout);
    expect(endpoint.events).toEqual(['template.created', 'template.updated']);

    const pdf = await drawPdf([{ texts: [{ text: 'CLI', x: 72, y: 72 }] }]);
    const template = await rest(t.url, account.apiKey, 'POST', '/templates/pdf', {
      name: 'CLI',
      documents: [{ name: 'cli', file: base64(pdf) }],
      fields: [{ name: 'Name', role: 'Signer', areas: [{ x: 72, y: 120, w: 200, h: 20, page: 1 }] }],
    });
    expect(template.status).toBe(200);
    await t.app.effects.emit([{ type: 'template.updated', accountId: account.accountId, recordId: template.json.id, at: new Date() }]);
    const requests = await receiver.waitFor((r) => r.some((x) => x.json?.event_type === 'template.updated'));
    const request = requests.find((x) => x.json?.event_type === 'template.updated')!;
    expect(request.json.data.id).toBe(template.json.id);
    expect(request.headers['x-from']).toBe('cli');
    expect(signatureMatches(request.headers['x-docuseal-signature'], endpoint.secret, request.body)).toBe(true);
  });
});
