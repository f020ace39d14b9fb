/**
 * Shared pieces of the signing page's browser tests (test/signing-page-*.test.ts): a watched
 * Chromium page (no request leaves the service, no CSP violation, no uncaught error), templates
 * and submissions made through the REST API, drawing on the signature pad with a mouse or a
 * finger, and axe-core run inside the page.
 *
 * axe-core (npm, dev dependency) is the accessibility rule engine the WCAG checks use. The page's
 * Content-Security-Policy allows scripts from its own origin only, so `page.addScriptTag` is
 * refused; `page.evaluate(axe.source)` runs the source through the DevTools protocol, which the
 * CSP does not govern (Runtime.evaluate is not a page script load).
 */
import { createRequire } from 'node:module';
import type { Browser, BrowserContext, BrowserContextOptions, Frame, Page } from 'playwright-core';
import { expect } from 'vitest';
import { rest } from './app.ts';
import { PAGE_TIMEOUT_MS } from './browser.ts';
import { base64, fixturePdf } from './pdfs.ts';

/** A page opened by a test, with what it requested and what went wrong in it. */
export interface Watched {
  context: BrowserContext;
  page: Page;
  requests: string[];
  problems: string[];
}

/** Opens a page in a new context and records its requests, CSP refusals and uncaught errors. */
export async function openWatchedPage(browser: Browser, options: BrowserContextOptions = {}): Promise<Watched> {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  page.setDefaultTimeout(PAGE_TIMEOUT_MS);
  const watched: Watched = { context, page, requests: [], problems: [] };
  page.on('request', (request) => watched.requests.push(request.url()));
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) watched.problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => watched.problems.push(`page error: ${error.message}`));
  return watched;
}

/** Closes a watched page and checks it stayed on the service's origin (plus `extraOrigins`) without errors. */
export async function closeWatched(watched: Watched, serviceUrl: string, extraOrigins: string[] = []): Promise<void> {
  const origin = new URL(serviceUrl).origin;
  const outside = watched.requests.filter((url) => {
    if (url.startsWith('data:') || url.startsWith('blob:')) return false;
    const requestOrigin = new URL(url).origin;
    return requestOrigin !== origin && !extraOrigins.includes(requestOrigin);
  });
  await watched.context.close();
  expect(outside, 'requests outside the service').toEqual([]);
  expect(watched.problems, 'CSP violations and page errors').toEqual([]);
}

/** REST calls of one account. */
export type Api = (method: string, path: string, body?: unknown) => Promise<{ status: number; json: any }>;
export const apiOf =
  (url: string, apiKey: string): Api =>
  (method, path, body) =>
    rest(url, apiKey, method, path, body);

/** A one-document template from a fixture PDF with the given fields (areas in points, page 1-based). */
export async function createTemplate(
  api: Api,
  name: string,
  fields: unknown[],
  file = 'docuseal-sample-document.pdf',
  documentName = name,
): Promise<number> {
  const { status, json } = await api('POST', '/templates/pdf', {
    name,
    documents: [{ name: documentName, file: base64(fixturePdf(file)) }],
    fields,
  });
  expect(status, JSON.stringify(json)).toBe(200);
  return json.id;
}

/** A submission for one signer (no email); returns the submitter as the API shows it. */
export async function createSubmission(
  api: Api,
  templateId: number,
  submitter: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Promise<{ id: number; slug: string; submission_id: number; embed_src: string }> {
  const { status, json } = await api('POST', '/submissions', {
    template_id: templateId,
    send_email: false,
    submitters: [
      {
        role: 'Signer',
        email: `signer-${Date.now()}-${Math.random().toString(36).slice(2)}@example.test`,
        ...submitter,
      },
    ],
    ...extra,
  });
  expect(status, JSON.stringify(json)).toBe(200);
  return json[0];
}

/** Waits until the page shows the form (its fields are on the pages). */
export async function waitForForm(page: Page | Frame): Promise<void> {
  await page.locator('.action-bar').waitFor();
  await page.locator('.page[data-rendered="true"]').first().waitFor();
}

/** Draws a zigzag on a canvas with the mouse (pointer events as a real mouse makes them). */
export async function drawWithMouse(page: Page, selector: string): Promise<void> {
  const box = (await page.locator(selector).boundingBox())!;
  const y = box.y + box.height / 2;
  await page.mouse.move(box.x + box.width * 0.15, y);
  await page.mouse.down();
  for (let i = 1; i <= 8; i++) {
    await page.mouse.move(box.x + box.width * (0.15 + i * 0.08), y + (i % 2 ? -1 : 1) * box.height * 0.25, {
      steps: 4,
    });
  }
  await page.mouse.up();
}

/** Draws a stroke with a finger (touch events through the DevTools protocol, as a touch screen sends them). */
export async function drawWithTouch(page: Page, selector: string): Promise<void> {
  const box = (await page.locator(selector).boundingBox())!;
  const session = await page.context().newCDPSession(page);
  const point = (i: number) => ({
    x: box.x + box.width * (0.1 + i * 0.07),
    y: box.y + box.height * (0.5 + (i % 2 ? -0.2 : 0.2)),
  });
  await session.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [point(0)] });
  for (let i = 1; i <= 10; i++)
    await session.send('Input.dispatchTouchEvent', { type: 'touchMove', touchPoints: [point(i)] });
  // The finger rests before lifting: a fast release starts a fling that swallows the next tap.
  for (let i = 0; i < 5; i++)
    await session.send('Input.dispatchTouchEvent', {
      type: 'touchMove',
      touchPoints: [{ ...point(10), y: point(10).y + (i % 2) * 0.1 }],
    });
  await session.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
  await session.detach();
}

const axeSource: string = (createRequire(import.meta.url)('axe-core') as { source: string }).source;

/** One axe violation, reduced to what a failure message needs. */
export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * Runs axe-core in the page (or a frame) against WCAG 2.0, 2.1 and 2.2 A and AA and axe's best
 * practices, and returns the violations (empty when there are none).
 */
export async function axeViolations(target: Page | Frame): Promise<AxeViolation[]> {
  await target.evaluate(axeSource);
  return target.evaluate(async () => {
    const axe = (window as unknown as { axe: any }).axe;
    const result = await axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] },
      resultTypes: ['violations'],
    });
    return result.violations.map((v: any) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n: any) => `${n.target.join(' ')}: ${n.failureSummary}`),
    }));
  });
}
