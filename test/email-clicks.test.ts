/**
 * "Email link clicked" (DocuSeal's submitter_email_clicks): the request email's signing link carries
 * the signer's tag `t`; opening it in a browser records one `click_email` event with IP and user
 * agent (the page posts it, as DocuSeal's page does); POST /api/submitter_email_clicks records it
 * only for the right tag, answers `{}` either way and 404 for an unknown slug.
 */
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedAccount } from '../src/accounts/create-account.ts';
import { rest, startTestApp, type TestApp } from './helpers/app.ts';
import { base64, fixturePdf } from './helpers/pdfs.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';

let t: TestApp;
let smtp: TestSmtpServer;
let browser: Browser;
let alice: CreatedAccount;
let templateId: number;
const api = (method: string, p: string, body?: unknown) => rest(t.url, alice.apiKey, method, p, body);

beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestApp({ env: { SMTP_URL: smtp.url, MAIL_FROM: 'Signet <signet@example.test>' } });
  alice = await t.createAccount({ name: 'Acme', email: 'alice@clicks.test' });
  const template = await api('POST', '/templates/pdf', {
    name: 'Clicks',
    documents: [{ name: 'doc', file: base64(fixturePdf('docuseal-sample-document.pdf')) }],
    fields: [{ name: 'Name', role: 'Client', areas: [{ x: 60, y: 60, w: 220, h: 24, page: 1 }] }],
  });
  templateId = template.json.id;
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
  await smtp?.close();
});

/** Sends a request email to `email` and returns the submitter and the link in the email. */
async function requestLink(email: string): Promise<{ id: number; slug: string; link: string }> {
  const before = smtp.messages.length;
  const created = await api('POST', '/submissions', {
    template_id: templateId,
    submitters: [{ role: 'Client', email }],
  });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
  const [mail] = (await smtp.waitForMessages(before + 1, 30_000)).slice(before);
  const text = String(mail!.parsed.text);
  const link = /https?:\/\/\S+\/s\/[^\s)\]]+/.exec(text)?.[0];
  expect(link, text).toBeDefined();
  return { id: created.json[0].id, slug: created.json[0].slug, link: link! };
}

const clicks = (submitterId: number) =>
  t.db.submissionEvent.findMany({ where: { submitterId, eventType: 'click_email' } });

describe('email link clicks', () => {
  it('the request email links to the form with the signer’s tag; opening it records one click', async () => {
    const { id, slug, link } = await requestLink('client1@clicks.test');
    const url = new URL(link);
    expect(url.pathname).toBe(`/s/${slug}`);
    expect(url.searchParams.get('t')).toMatch(/^[A-Za-z0-9_-]{6}$/);
    const page = await browser.newPage({ userAgent: 'ClickTest/1.0' });
    await page.goto(link);
    await expect.poll(async () => (await clicks(id)).length, { timeout: 20_000 }).toBe(1);
    await page.close();
    const [event] = await clicks(id);
    expect(event!.data).toMatchObject({ ip: '127.0.0.1', ua: 'ClickTest/1.0' });
    // The same page without the tag (a copied link, a reload without it) records no click.
    const plain = await browser.newPage();
    await plain.goto(`${t.url}/s/${slug}`);
    await plain.waitForLoadState('networkidle');
    await plain.close();
    expect(await clicks(id)).toHaveLength(1);
  }, 90_000);

  it('POST /api/submitter_email_clicks: only the right tag counts; {} always; 404 for an unknown slug', async () => {
    const { id, slug, link } = await requestLink('client2@clicks.test');
    const t0 = new URL(link).searchParams.get('t')!;
    const post = (body: unknown) =>
      fetch(`${t.url}/api/submitter_email_clicks`, { method: 'POST', body: JSON.stringify(body) });
    const wrong = await post({ submitter_slug: slug, t: t0 === 'AAAAAA' ? 'BBBBBB' : 'AAAAAA' });
    expect(wrong.status).toBe(200);
    expect(await wrong.json()).toEqual({});
    expect(await clicks(id)).toHaveLength(0);
    const right = await post({ submitter_slug: slug, t: t0 });
    expect(await right.json()).toEqual({});
    expect(await clicks(id)).toHaveLength(1);
    // Another signer's tag does not count for this one.
    const other = await requestLink('client3@clicks.test');
    await post({ submitter_slug: slug, t: new URL(other.link).searchParams.get('t') });
    expect(await clicks(id)).toHaveLength(1);
    expect((await post({ submitter_slug: 'no-such-slug', t: t0 })).status).toBe(404);
  }, 60_000);
});
