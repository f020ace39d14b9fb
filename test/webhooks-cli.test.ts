/**
 * `signet webhook add | list | remove` run as real processes against a service's database: the
 * one JSON line of each, the defaults, refusals (exit 2, nothing written), a URL delivery would
 * refuse refused as it is added (in delivery's words, unless WEBHOOK_ALLOW_PRIVATE or
 * WEBHOOK_ALLOWED_HOSTS allows it, as for delivery), and a secret printed by `add` that verifies
 * the signature of a delivery the service then makes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, drawPdf } from './helpers/pdfs.ts';
import { WEBHOOK_DESTINATION_REFUSED } from '../src/webhooks/send-request.ts';
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
  // The CLI on the service's configuration: the loopback receiver allowed, as for its deliveries.
  env = { DATABASE_URL: t.database.url, WEBHOOK_ALLOW_PRIVATE: 'true' };
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

describe('signet webhook', { timeout: 180_000 }, () => {
  it(
    'add prints {id, url, events, secret} with the form.* events by default; ' + 'list shows no secret; remove deletes',
    async () => {
      const url = `${receiver.url}/in`;
      const added = await runSignet(['webhook', 'add', '--account-id', String(account.accountId), '--url', url], env);
      expect(added.code, added.stderr).toBe(0);
      const endpoint = jsonLine(added.stdout);
      expect(Object.keys(endpoint)).toEqual(['id', 'url', 'events', 'secret']);
      expect(endpoint).toEqual({
        id: expect.any(Number),
        url,
        events: ['form.viewed', 'form.started', 'form.completed', 'form.declined'],
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{32}$/),
      });

      const listed = await runSignet(['webhook', 'list', '--account-id', String(account.accountId)], env);
      expect(listed.code, listed.stderr).toBe(0);
      expect(jsonLine(listed.stdout)).toEqual([
        {
          id: endpoint.id,
          accountId: account.accountId,
          url,
          events: endpoint.events,
          headerName: null,
          enabled: true,
          createdAt: expect.stringMatching(/Z$/),
        },
      ]);
      expect(listed.stdout).not.toContain('whsec_');

      const removed = await runSignet(['webhook', 'remove', '--id', String(endpoint.id)], env);
      expect(removed.code, removed.stderr).toBe(0);
      expect(jsonLine(removed.stdout)).toEqual({ id: endpoint.id });
      expect(
        jsonLine((await runSignet(['webhook', 'list', '--account-id', String(account.accountId)], env)).stdout),
      ).toEqual([]);
    },
  );

  it('exits 2 with a message on bad input, writing nothing', async () => {
    const before = await t.db.webhookEndpoint.count();
    const cases: [string[], RegExp][] = [
      [['webhook', 'add', '--account-id', String(account.accountId)], /Missing --url/],
      [['webhook', 'add', '--url', 'https://x.example'], /Missing --account-id/],
      [
        ['webhook', 'add', '--account-id', 'abc', '--url', 'https://x.example'],
        /--account-id must be a positive integer/,
      ],
      [
        ['webhook', 'add', '--account-id', String(account.accountId), '--url', 'ftp://x.example'],
        /url must be an http or https URL/,
      ],
      [
        [
          'webhook',
          'add',
          '--account-id',
          String(account.accountId),
          '--url',
          'https://x.example',
          '--events',
          'form.completed,form.exploded',
        ],
        /unknown event type form\.exploded/,
      ],
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

  it(
    'refuses, as it is added, a URL delivery would refuse: ' + "in delivery's words, the same for every cause",
    async () => {
      const before = await t.db.webhookEndpoint.count();
      const production = { DATABASE_URL: t.database.url };
      const refused = [
        `${receiver.url}/loopback`, // 127.0.0.1
        'http://localhost:9/name-of-loopback',
        'http://10.0.0.5/private',
        'http://[::1]/loopback-v6',
        'http://169.254.169.254/latest/meta-data', // link-local (cloud metadata)
        'https://no-such-host.invalid/hook', // does not resolve
      ];
      for (const url of refused) {
        const result = await runSignet(
          ['webhook', 'add', '--account-id', String(account.accountId), '--url', url],
          production,
        );
        expect(result.code, url).toBe(2);
        expect(result.stdout).toBe('');
        // Delivery tells the account "Webhook request failed" for every cause; this says the same
        // and why, without telling a private address from a name that does not resolve.
        expect(result.stderr.trim()).toBe(`signet: ${WEBHOOK_DESTINATION_REFUSED}`);
        expect(WEBHOOK_DESTINATION_REFUSED).toMatch(/^Webhook request failed: /);
      }
      expect(await t.db.webhookEndpoint.count()).toBe(before);

      // The switches deliveries honour are honoured here: WEBHOOK_ALLOWED_HOSTS, WEBHOOK_ALLOW_PRIVATE.
      const allowed = await runSignet(
        ['webhook', 'add', '--account-id', String(account.accountId), '--url', `${receiver.url}/allowed`],
        {
          ...production,
          WEBHOOK_ALLOWED_HOSTS: '127.0.0.0/8',
        },
      );
      expect(allowed.code, allowed.stderr).toBe(0);
      const anyAddress = await runSignet(
        ['webhook', 'add', '--account-id', String(account.accountId), '--url', 'http://10.0.0.5/private'],
        env,
      );
      expect(anyAddress.code, anyAddress.stderr).toBe(0);
      // A name that does not resolve is refused even then: delivery could not send to it either.
      const unresolved = await runSignet(
        ['webhook', 'add', '--account-id', String(account.accountId), '--url', 'https://no-such-host.invalid/hook'],
        env,
      );
      expect(unresolved.code).toBe(2);
      expect(unresolved.stderr.trim()).toBe(`signet: ${WEBHOOK_DESTINATION_REFUSED}`);
      for (const { id } of [jsonLine(allowed.stdout), jsonLine(anyAddress.stdout)])
        await runSignet(['webhook', 'remove', '--id', String(id)], env);
    },
  );

  it('the printed secret verifies the deliveries of the events chosen with --events', async () => {
    const added = await runSignet(
      [
        'webhook',
        'add',
        '--account-id',
        String(account.accountId),
        '--url',
        `${receiver.url}/cli`,
        '--events',
        'template.created, template.updated',
        '--header-name',
        'X-From',
        '--header-value',
        'cli',
      ],
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
    await t.app.effects.emit([
      { type: 'template.updated', accountId: account.accountId, recordId: template.json.id, at: new Date() },
    ]);
    const requests = await receiver.waitFor((r) => r.some((x) => x.json?.event_type === 'template.updated'));
    const request = requests.find((x) => x.json?.event_type === 'template.updated')!;
    expect(request.json.data.id).toBe(template.json.id);
    expect(request.headers['x-from']).toBe('cli');
    expect(signatureMatches(request.headers['x-docuseal-signature'], endpoint.secret, request.body)).toBe(true);
  });
});
