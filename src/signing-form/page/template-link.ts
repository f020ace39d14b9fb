/**
 * The page of a shared template's link (`/d/{slug}`; docs/embedding.md "Template links"): the
 * signer gives an email (the embedded form's `data-email` does it for them: then nothing is asked)
 * and the page starts their submission (`startTemplateForm`), then goes on to their own form
 * (`/s/{slug}`), passing on the options that page acts on. The template-link options (email,
 * values, read-only fields, …) are the server's to store and check: they are sent with the start
 * and not passed on.
 */
import { embedFragment } from '../embed/protocol.ts';
import { ApiError, startTemplateForm } from './api.ts';
import { h, uniqueId } from './dom.ts';
import { embedOptions } from './embed.ts';
import { t } from './i18n.ts';

/**
 * Shows the template link's page in `root` (its `data-template-slug` and `data-template-name`).
 * With an email among the embedded form's options it starts at once.
 */
export function showTemplateLink(root: HTMLElement): void {
  const templateSlug = root.dataset.templateSlug ?? '';
  const title = root.dataset.templateName || t('title.fallback');
  document.title = t('title.page', { title });

  const status = h('p', { className: 'status' });
  status.setAttribute('role', 'status');
  const alert = h('p', { className: 'alert' });
  alert.setAttribute('role', 'alert');
  alert.hidden = true;
  const emailId = uniqueId('email');
  const nameId = uniqueId('name');
  const email = h('input', {
    id: emailId,
    type: 'email',
    name: 'email',
    required: true,
    autocomplete: 'email',
    maxLength: 255,
    value: embedOptions.email ?? '',
  });
  const name = h('input', {
    id: nameId,
    type: 'text',
    name: 'name',
    autocomplete: 'name',
    maxLength: 255,
    value: embedOptions.name ?? '',
  });
  const start = h('button', { type: 'submit', className: 'button primary' }, t('start.continue'));
  const form = h(
    'form',
    { className: 'start-form', noValidate: true },
    h('label', { htmlFor: emailId }, t('start.email')),
    email,
    h('label', { htmlFor: nameId }, t('start.name')),
    name,
    h('div', { className: 'dialog-actions' }, start),
  );
  root.replaceChildren(
    h('header', { className: 'form-header' }, h('h1', {}, title), h('p', { className: 'subtitle' }, t('start.intro'))),
    h('section', { className: 'state start' }, form, status, alert),
  );

  const go = async () => {
    alert.hidden = true;
    const address = email.value.trim();
    if (!address || !email.checkValidity()) {
      alert.textContent = t('start.emailInvalid');
      alert.hidden = false;
      email.focus();
      return;
    }
    start.disabled = true;
    status.textContent = t('start.opening');
    try {
      const slug = await startTemplateForm(templateSlug, {
        email: address,
        name: name.value.trim() || undefined,
        role: embedOptions.role,
        externalId: embedOptions.external_id,
        values: embedOptions.values,
        readonlyFields: embedOptions.readonly_fields,
        metadata: embedOptions.metadata,
        sendCopyEmail: embedOptions.send_copy_email,
        completedRedirectUrl: embedOptions.completed_redirect_url,
      });
      // The signer's form, with what that page acts on; its `init` was posted by this page already.
      const fragment = embedFragment({
        ...(embedOptions.origin ? { origin: embedOptions.origin } : {}),
        ...(embedOptions.go_to_last !== undefined ? { go_to_last: embedOptions.go_to_last } : {}),
        ...(embedOptions.with_decline !== undefined ? { with_decline: embedOptions.with_decline } : {}),
        ...(embedOptions.with_title !== undefined ? { with_title: embedOptions.with_title } : {}),
        started: true,
      });
      // The language this page was asked in (the embed's data-language) stays the form's.
      const lang = new URLSearchParams(window.location.search).get('lang');
      const query = lang ? `?lang=${encodeURIComponent(lang)}` : '';
      window.location.replace(`/s/${encodeURIComponent(slug)}${query}${fragment}`);
    } catch (error) {
      status.textContent = '';
      start.disabled = false;
      alert.textContent =
        error instanceof ApiError && error.code === 'NOT_FOUND' ? t('start.linkInvalid') : (error as Error).message;
      alert.hidden = false;
    }
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void go();
  });
  if (embedOptions.email) void go();
}
