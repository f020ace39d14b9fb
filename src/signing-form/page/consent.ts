/**
 * The signer's agreement to sign electronically, on the page (issue 24 §4; docs/signing-form.md
 * "Consent"): before the first signature or initials is made, and before Complete when it has not
 * been given, a modal dialog shows the disclosure (`SigningForm.consent`: the account's own text or
 * Signet's in the page's language) with "I agree" and "Cancel"; agreeing records it
 * (acceptSigningConsent, which the server requires before it takes a signature or a completion)
 * and the signer goes on with what they were doing. Near Complete a line says that completing is
 * signing electronically, with a button that shows the whole disclosure.
 *
 * The dialog is a native <dialog> opened with showModal(): the browser makes the rest of the page
 * inert (focus stays in the dialog), Escape cancels it, and focus goes back to the control that
 * opened it (WCAG 2.2 2.1.2, 2.4.3). It is labelled by its title and described by the text; the
 * text is a focusable scrolling region, so a keyboard user can scroll a long disclosure (2.1.1);
 * 16 px text and 44 px buttons at any width (2.5.8, the page's own minimum for targets).
 */
import { acceptSigningConsent, ApiError } from './api.ts';
import { h, uniqueId } from './dom.ts';
import { t } from './i18n.ts';
import type { SigningForm } from './types.ts';

/** The version accepted on this page so far (the form's own answer may predate it). */
let acceptedHere: string | null = null;

/** The lines near Complete, told when the signer agrees. */
const notices = new Set<{ form: SigningForm; line: HTMLElement }>();

/** Whether this signer has agreed (before this visit, or in it). */
function hasAgreed(form: SigningForm): boolean {
  return acceptedHere !== null || Boolean(form.consent?.acceptedAt);
}

/**
 * Resolves to true once the signer has agreed to sign electronically: at once when they had, else
 * after they agree in the dialog (recorded on the server first); false when they cancel.
 * @param form the form as the page has it (its `consent`)
 */
export function ensureConsent(form: SigningForm): Promise<boolean> {
  if (hasAgreed(form)) return Promise.resolve(true);
  return openConsentDialog(form, { mode: 'accept' });
}

/**
 * The line shown near Complete: completing is signing electronically, and a button that opens the
 * whole disclosure (to agree, or only to read it again once agreed).
 */
export function consentNotice(form: SigningForm): HTMLElement {
  const read = h('button', { type: 'button', className: 'link-button consent-read' }, t('consent:read'));
  read.addEventListener('click', () => {
    void openConsentDialog(form, { mode: hasAgreed(form) ? 'read' : 'accept' });
  });
  const line = h('span', {});
  const notice = h('p', { className: 'consent-notice' }, line, ' ', read);
  for (const known of notices) if (!known.line.isConnected) notices.delete(known);
  notices.add({ form, line });
  refreshNotices();
  return notice;
}

function refreshNotices(): void {
  for (const { form, line } of notices) line.textContent = t(hasAgreed(form) ? 'consent:accepted' : 'consent:notice');
}

/**
 * Shows the disclosure. In `accept` mode: "I agree" records the acceptance and resolves true,
 * "Cancel" or Escape resolves false. In `read` mode (already agreed): one "Close" button.
 */
function openConsentDialog(form: SigningForm, options: { mode: 'accept' | 'read' }): Promise<boolean> {
  const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  const titleId = uniqueId('consent-title');
  const textId = uniqueId('consent-text');
  const dialog = h('dialog', { className: 'dialog consent-dialog' });
  dialog.setAttribute('aria-labelledby', titleId);
  dialog.setAttribute('aria-describedby', textId);
  const paragraphs = form.consent.text
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.trim())
    .filter(Boolean)
    .map((paragraph) => h('p', {}, paragraph));
  // A focusable region: a keyboard user scrolls a long text with the arrow keys.
  const text = h('div', { className: 'consent-text', id: textId, tabIndex: 0 }, ...paragraphs);
  text.setAttribute('role', 'region');
  text.setAttribute('aria-labelledby', titleId);
  const error = h('p', { className: 'dialog-error' });
  error.setAttribute('role', 'alert');
  const buttons =
    options.mode === 'accept'
      ? [
          h('button', { type: 'button', className: 'button consent-cancel' }, t('consent:cancel')),
          h('button', { type: 'submit', className: 'button primary consent-accept' }, t('consent:accept')),
        ]
      : [h('button', { type: 'submit', className: 'button primary consent-close' }, t('consent:close'))];
  const body = h(
    'form',
    { method: 'dialog', className: 'consent-form' },
    h('h2', { id: titleId }, t('consent:title')),
    text,
    error,
    h('div', { className: 'dialog-actions' }, ...buttons),
  );
  dialog.append(body);
  document.body.append(dialog);

  return new Promise((resolve) => {
    let agreed = false;
    let busy = false;
    dialog.addEventListener('close', () => {
      dialog.remove();
      // Back where the signer was (WCAG 2.4.3); the caller may move on from there.
      if (opener?.isConnected) opener.focus();
      resolve(agreed);
    });
    dialog.addEventListener('cancel', (event) => {
      // Escape cancels, except while the acceptance is on its way.
      if (busy) event.preventDefault();
    });
    if (options.mode === 'accept') buttons[0]!.addEventListener('click', () => dialog.close());
    body.addEventListener('submit', (event) => {
      event.preventDefault();
      if (options.mode === 'read') {
        dialog.close();
        return;
      }
      if (busy) return;
      busy = true;
      const accept = buttons[1]!;
      accept.setAttribute('aria-busy', 'true');
      error.textContent = '';
      void acceptSigningConsent(form.slug, form.consent.version)
        .then((version) => {
          acceptedHere = version;
          agreed = true;
          refreshNotices();
          dialog.close();
        })
        .catch((failure: unknown) => {
          const message = failure instanceof ApiError || failure instanceof Error ? failure.message : String(failure);
          error.textContent = t('consent:failed', { message });
        })
        .finally(() => {
          busy = false;
          accept.removeAttribute('aria-busy');
        });
    });
    dialog.showModal();
    text.focus();
  });
}
