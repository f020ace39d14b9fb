/**
 * GraphiQL at /graphql works offline: in Debian's Chromium (playwright-core) with every request
 * whose host is not loopback aborted, the page loads from Signet alone (script, styles and the
 * editor's workers), a query typed into the editor runs, and its result appears in the result
 * pane, anonymously and with the X-Auth-Token header the README tells users to add. No request
 * to another host is even attempted (Yoga's default page fetched five assets from a public CDN).
 * The page is checked only with web-first assertions (expectInPage, test/helpers/browser.ts).
 */
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { expectInPage, PAGE_TIMEOUT_MS } from './helpers/browser.ts';

// A browser and the service share two cores with other suites.
vi.setConfig({ testTimeout: 90_000 });

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

let t: TestApp;
let browser: Browser;

/** A page whose non-loopback requests are aborted and recorded, with its uncaught errors. */
interface Offline {
  context: BrowserContext;
  page: Page;
  /** Every request to a host that is not loopback (all were aborted). */
  outside: Set<string>;
  problems: string[];
}
const opened: Offline[] = [];

async function openOfflinePage(): Promise<Offline> {
  const context = await browser.newContext();
  const offline: Offline = { context, page: await context.newPage(), outside: new Set(), problems: [] };
  // The context's route sees the page's and its workers' requests.
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (/^(https?|wss?):$/.test(url.protocol) && !LOOPBACK_HOSTS.has(url.hostname)) {
      offline.outside.add(url.href);
      return route.abort('internetdisconnected');
    }
    return route.continue();
  });
  // Requests the router might not see (WebSockets, workers' own requests) are recorded too.
  context.on('request', (request) => {
    const url = new URL(request.url());
    if (/^(https?|wss?):$/.test(url.protocol) && !LOOPBACK_HOSTS.has(url.hostname)) offline.outside.add(url.href);
  });
  offline.page.on('websocket', (socket) => {
    const url = new URL(socket.url());
    if (!LOOPBACK_HOSTS.has(url.hostname)) offline.outside.add(url.href);
  });
  offline.page.on('pageerror', (error) => offline.problems.push(`page error: ${error.message}`));
  offline.page.setDefaultTimeout(PAGE_TIMEOUT_MS);
  opened.push(offline);
  return offline;
}

/** The query editor (a Monaco editor). */
const QUERY_EDITOR = '.graphiql-query-editor .monaco-editor';
/** The request headers editor, under the Headers tab (Monaco names its model `…-headers.json`). */
const HEADERS_EDITOR = '.graphiql-editor-tool .monaco-editor[data-uri$="headers.json"]';

/** Replaces the text of the Monaco editor `selector` by `text`, as a user would. */
async function typeInEditor(page: Page, selector: string, text: string): Promise<void> {
  const editor = page.locator(selector).first();
  await editor.click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.press('Delete');
  // insertText: no auto-closed brackets or suggestions interfering with key-by-key typing.
  await page.keyboard.insertText(text);
}

beforeAll(async () => {
  t = await startTestApp({ env: { NODE_ENV: 'development' } });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
});

afterEach(async () => {
  for (const offline of opened.splice(0)) {
    await offline.context.close();
    expect([...offline.outside], 'requests to hosts other than loopback').toEqual([]);
    expect(offline.problems, 'uncaught page errors').toEqual([]);
  }
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('GraphiQL offline', () => {
  it('loads from Signet alone and runs a typed query; its result shows in the result pane', async () => {
    const { page } = await openOfflinePage();
    await page.goto(`${t.url}/graphql`);
    await expectInPage(page).toHaveTitle('Signet GraphQL');
    await expectInPage(page.locator(QUERY_EDITOR)).toBeVisible();

    await typeInEditor(page, QUERY_EDITOR, '{ __typename }');
    await page.locator('.graphiql-execute-button').click();
    await expectInPage(page.locator('.graphiql-response')).toContainText('"__typename": "Query"');
  });

  it("sends the X-Auth-Token header from its headers editor: the viewer is the key's user", async () => {
    const email = `alice-${Date.now()}@graphiql.test`;
    const alice = await t.createAccount({ name: 'GraphiQL Ltd', email });
    const { page } = await openOfflinePage();
    await page.goto(`${t.url}/graphql`);
    await expectInPage(page.locator(QUERY_EDITOR)).toBeVisible();

    await typeInEditor(page, QUERY_EDITOR, '{ viewer { user { email } account { name } } }');
    await page.getByRole('button', { name: 'Headers', exact: true }).click();
    await expectInPage(page.locator(HEADERS_EDITOR)).toBeVisible();
    await typeInEditor(page, HEADERS_EDITOR, JSON.stringify({ 'X-Auth-Token': alice.apiKey }));
    await page.locator('.graphiql-execute-button').click();
    await expectInPage(page.locator('.graphiql-response')).toContainText(`"email": "${email}"`);
    await expectInPage(page.locator('.graphiql-response')).toContainText('"name": "GraphiQL Ltd"');
  });
});
