/**
 * Web-first assertions for the browser tests: `await expectInPage(locator).toHaveText('…')` asks
 * the page again and again until the condition holds or the timeout runs out, so a test never
 * reads the page between an action and the page's answer to it.
 *
 * Library: Playwright's own `expect` from `@playwright/test` (same version as `playwright-core`,
 * no browser download; it drives Debian's /usr/bin/chromium through the locators we pass). It is
 * the reference implementation of these assertions: it retries inside the page on every animation
 * frame, re-resolves the locator each time, and its failure names the locator, the expected and
 * the last received value and the call log. Vitest's `expect` stays for plain values; this one is
 * only for locators and pages (`toHaveText`, `toContainText`, `toHaveValue`, `toHaveCount`,
 * `toBeVisible`, `toBeHidden`, `toBeChecked`, `toBeDisabled`, `toBeFocused`, `toHaveAttribute`,
 * `toHaveURL`, … and `.not`).
 *
 * Rule: after an action (click, fill, check, key press, navigation), assert on the page through
 * this, never with `expect(await locator.textContent())`; no fixed sleeps.
 */
import { expect as playwrightExpect } from '@playwright/test';

/**
 * How long a web-first assertion keeps asking, in milliseconds: the page's own default action
 * timeout in these tests. A browser, a PDF renderer and the completion job share two cores with
 * other suites, so Playwright's 5 s default is too short for a busy machine; a wait that holds
 * ends at once, so a longer timeout costs nothing when the test passes.
 */
export const PAGE_TIMEOUT_MS = 20_000;

/** Playwright's `expect`, waiting up to PAGE_TIMEOUT_MS (or `{ timeout }` per assertion). */
export const expectInPage = playwrightExpect.configure({ timeout: PAGE_TIMEOUT_MS });

/** What acceptConsent looks in: the page, or the frame of an embedded form. */
interface HasRoles {
  getByRole(role: 'dialog', options: { name: string }): import('playwright-core').Locator;
}

/** A page that takes key presses (acceptConsentWithKeyboard). */
interface HasKeyboard extends HasRoles {
  keyboard: { press(key: string): Promise<void> };
}

/**
 * The signer agrees to sign electronically in the consent dialog the page shows before the first
 * signature or initials, or before Complete (src/signing-form/page/consent.ts): waits for the
 * dialog, clicks "I agree" and waits until it has closed (the acceptance recorded), after which the
 * page goes on with what the signer was doing. English texts (the consent namespace of en.json).
 */
export async function acceptConsent(page: HasRoles): Promise<void> {
  const dialog = page.getByRole('dialog', { name: 'Agreement to sign electronically' });
  await dialog.getByRole('button', { name: 'I agree' }).click({ timeout: PAGE_TIMEOUT_MS });
  await expectInPage(dialog).toBeHidden();
}

/**
 * acceptConsent with the keyboard alone (WCAG 2.1.1): the dialog opens with its text focused (a
 * scrolling region), Tab goes to Cancel and then to "I agree", Enter agrees; waits until the dialog
 * has closed. English texts.
 */
export async function acceptConsentWithKeyboard(page: HasKeyboard): Promise<void> {
  const dialog = page.getByRole('dialog', { name: 'Agreement to sign electronically' });
  await expectInPage(dialog.getByRole('region', { name: 'Agreement to sign electronically' })).toBeFocused();
  await page.keyboard.press('Tab');
  await expectInPage(dialog.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await page.keyboard.press('Tab');
  await expectInPage(dialog.getByRole('button', { name: 'I agree' })).toBeFocused();
  await page.keyboard.press('Enter');
  await expectInPage(dialog).toBeHidden();
}
