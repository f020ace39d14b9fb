/**
 * The signer's page (GET /s/{slug}): loads the form with openSigningForm, shows the documents with
 * the fields over them, saves values as the signer goes, checks required fields and patterns
 * before completing, and then redirects (completed_redirect_url) or lists the signed copies.
 * A field whose conditions are not met is hidden and not required, and shown as soon as the
 * values it depends on meet them (the shared rule, src/templates/field-conditions.ts).
 * Decline asks for a reason. A form that is not open shows DocuSeal's message and no inputs. With
 * `goToLast` (the submitter's go_to_last, else a returning signer) it opens at the field to resume.
 *
 * In a frame (the embedded form, docs/embedding.md) it posts `init`, `load`, `completed` and
 * `declined` to the page around it (./embed.ts) and acts on the embedded form's options: values
 * to prefill, fields to lock, go_to_last, the Decline button and the title. The same script shows
 * a shared template's link (`/d/{slug}`, ./template-link.ts).
 */
import './styles.css';
import {
  ApiError,
  completeSigningForm,
  declineSigningForm,
  fetchSigningForm,
  openSigningForm,
  recordEmailClick,
  sameOriginUrl,
} from './api.ts';
import { consentNotice, ensureConsent } from './consent.ts';
import { h, uniqueId } from './dom.ts';
import { embedOptions, inEmbeddedForm, postToHost } from './embed.ts';
import { mountFields, type FieldControl, type FieldHost } from './fields.ts';
import { SaveQueue } from './save-queue.ts';
import { hiddenFieldUuids } from '../../templates/field-conditions.ts';
import { ATTACHMENT_FIELD_TYPES } from '../../field-types.ts';
import { matchesField } from '../../templates/field-keys.ts';
import { showTemplateLink } from './template-link.ts';
import type { FieldValues, SigningForm, SigningFormAttachment, SigningFormField } from './types.ts';
import { checkValue, isEditable, isFilled, today } from './values.ts';
import { renderDocuments } from './viewer.ts';

const root = document.getElementById('signing-form')!;
const slug = root.dataset.slug ?? '';

/** DocuSeal's refusals when the form is no longer open (docuseal-behaviour.md §3). */
const CLOSED_MESSAGE = /^Form (has been|is view only)/;

void boot();

async function boot(): Promise<void> {
  // A template link's page goes on to the signer's form: there, `init` was posted already.
  if (!embedOptions.started) postToHost(root, 'init', null);
  if (root.dataset.templateSlug !== undefined) {
    showTemplateLink(root);
    return;
  }
  // Opened from a request email: DocuSeal's page posts the link's `t` (submitter_email_clicks).
  const clickTag = new URLSearchParams(window.location.search).get('t');
  if (clickTag) void recordEmailClick(slug, clickTag).catch(() => undefined);
  try {
    const form = await openSigningForm(slug);
    show(form);
    postToHost(root, 'load', form.eventDetail ?? null);
  } catch (error) {
    const message =
      error instanceof ApiError && error.code === 'NOT_FOUND'
        ? 'This signing link is not valid.'
        : (error as Error).message;
    root.replaceChildren(stateSection('The form could not be loaded', message));
  }
}

function show(form: SigningForm, options: { justCompleted?: boolean } = {}): void {
  document.title = `${formTitle(form)} · Signet`;
  if (form.state === 'OPEN') renderOpen(form);
  else renderClosed(form, options.justCompleted ?? false);
}

/**
 * Where the form opens with go_to_last, as DocuSeal's form does (submission_form/form.vue
 * `mounted`, each of the signer's editable fields being a step): the earliest of the last field,
 * the first required field without a value, and the field after the last one with a value.
 */
function resumeField(
  fields: SigningFormField[],
  currentValue: (uuid: string) => unknown,
): SigningFormField | undefined {
  const steps = fields.filter(isEditable);
  if (steps.length === 0) return undefined;
  const filled = (field: SigningFormField) => isFilled(field, currentValue(field.uuid));
  const requiredEmpty = steps.findIndex((field) => field.required && !filled(field));
  const afterLastFilled = steps.findLastIndex(filled) + 1;
  const candidates = [steps.length - 1, afterLastFilled, ...(requiredEmpty === -1 ? [] : [requiredEmpty])];
  return steps[Math.min(...candidates)];
}

function formTitle(form: SigningForm): string {
  return form.submission.name || form.documents[0]?.name || 'Documents to sign';
}

function stateSection(title: string, ...paragraphs: (string | null | undefined)[]): HTMLElement {
  return h(
    'section',
    { className: 'state' },
    h('h1', {}, title),
    ...paragraphs.filter(Boolean).map((p) => h('p', {}, p!)),
  );
}

/** The form is open: documents, fields, save-as-you-go, complete and decline. */
function renderOpen(form: SigningForm): void {
  const values = new Map<string, unknown>();
  const attachments = new Map<string, SigningFormAttachment>();
  const locked = applyEmbedOptions(form);
  for (const field of form.fields) {
    let value = field.value ?? null;
    // `{{date}}` means today (docuseal-behaviour.md §11); the signer may change it.
    if (
      field.type === 'date' &&
      isEditable(field) &&
      (value === '{{date}}' || (value === null && field.defaultValue === '{{date}}'))
    ) {
      value = today(field.preferences.format);
    }
    values.set(field.uuid, value);
    for (const attachment of field.attachments) attachments.set(attachment.uuid, attachment);
  }

  const status = h('p', { className: 'status' });
  status.setAttribute('role', 'status');
  const alert = h('p', { className: 'alert' });
  alert.setAttribute('role', 'alert');
  alert.hidden = true;
  const progress = h('p', { className: 'progress' });
  const completeButton = h(
    'button',
    { type: 'button', className: 'button primary', id: 'complete-button' },
    'Complete',
  );
  const declineButton = h('button', { type: 'button', className: 'button', id: 'decline-button' }, 'Decline');
  // The embedded form shows it only with data-with-decline (DocuSeal's default); a plain link always does.
  declineButton.hidden = embedOptions.with_decline === false;
  const waitingBanner = h('p', { className: 'notice waiting', id: uniqueId('waiting') });
  waitingBanner.setAttribute('role', 'status');

  const showAlert = (message: string | null) => {
    alert.textContent = message ?? '';
    alert.hidden = !message;
  };
  const setWaiting = (waitingFor: string | null) => {
    waitingBanner.hidden = !waitingFor;
    waitingBanner.textContent = waitingFor ? waitingMessage(waitingFor) : '';
    completeButton.disabled = Boolean(waitingFor);
    if (waitingFor) completeButton.setAttribute('aria-describedby', waitingBanner.id);
    else completeButton.removeAttribute('aria-describedby');
  };

  const controls = new Map<string, FieldControl>();
  const shownErrors = new Set<string>();
  const setFieldError = (uuid: string, message: string | null) => {
    controls.get(uuid)?.setError(message);
    if (message) shownErrors.add(uuid);
    else shownErrors.delete(uuid);
  };

  // Fields whose conditions are not met (the rule the server applies at completion,
  // src/templates/field-conditions.ts): hidden, not required, not sent. Judged again on every change.
  const conditionFields = form.fields.map((f) => ({
    uuid: f.uuid,
    type: f.type,
    options: f.options,
    default_value: f.defaultValue,
    conditions: f.conditions,
  }));
  const hasConditions = conditionFields.some((f) => f.conditions?.length);
  let hidden = new Set<string>();
  const isShown = (uuid: string) => !hidden.has(uuid);
  const applyConditions = () => {
    if (!hasConditions) return;
    hidden = hiddenFieldUuids(conditionFields, Object.fromEntries(values));
    for (const control of controls.values()) {
      const isHidden = hidden.has(control.field.uuid);
      control.setHidden(isHidden);
      if (isHidden && shownErrors.has(control.field.uuid)) setFieldError(control.field.uuid, null);
    }
    unplaced.hidden = !unplaced.querySelector('.field:not([hidden])');
  };

  const ownRequired = form.fields.filter((f) => isEditable(f) && f.required);
  const updateProgress = () => {
    const required = ownRequired.filter((f) => isShown(f.uuid));
    if (required.length === 0) {
      progress.textContent = '';
      return;
    }
    const filled = required.filter((f) => isFilled(f, values.get(f.uuid))).length;
    progress.textContent = `${filled} of ${required.length} required fields filled`;
  };

  const queue = new SaveQueue({
    slug,
    onBusy: (busy) => {
      status.textContent = busy ? 'Saving…' : 'All changes saved.';
    },
    onSaved: (saved) => {
      if (saved.state !== 'OPEN') show(saved);
      else setWaiting(saved.waitingFor);
    },
    onError: (error, unsaved) => {
      if (error.code === 'NETWORK') queue.requeue(unsaved);
      void handleError(error);
    },
  });

  const host: FieldHost = {
    form,
    valueOf: (uuid) => values.get(uuid),
    setValue(uuid, value, options = {}) {
      values.set(uuid, value);
      queue.set(uuid, value, options.immediate);
      // An error shown for this field is checked again as the signer corrects it.
      const control = controls.get(uuid);
      if (control && shownErrors.has(uuid)) setFieldError(uuid, checkValue(control.field, value));
      applyConditions();
      updateProgress();
    },
    attachment: (uuid) => attachments.get(uuid),
    addAttachment: (attachment) => attachments.set(attachment.uuid, attachment),
    announce: (message) => {
      status.textContent = message;
    },
  };

  const documents = h('div', { className: 'documents' });
  const unplaced = h('section', { className: 'unplaced-fields' }, h('h2', {}, 'More fields'));
  unplaced.hidden = true;
  const subtitle = [
    `From ${form.accountName}.`,
    `You sign as ${form.submitter.role}${form.submitter.name ? ` (${form.submitter.name})` : ''}.`,
  ].join(' ');
  root.replaceChildren(
    h(
      'header',
      { className: 'form-header' },
      embedOptions.with_title === false ? null : h('h1', {}, formTitle(form)),
      h('p', { className: 'subtitle' }, subtitle),
    ),
    waitingBanner,
    documents,
    unplaced,
    h(
      'footer',
      { className: 'action-bar' },
      h('div', { className: 'action-text' }, consentNotice(form), progress, status, alert),
      h('div', { className: 'action-buttons' }, declineButton, completeButton),
    ),
  );
  setWaiting(form.waitingFor);
  const pages = renderDocuments(documents, form.documents);
  for (const control of mountFields(host, pages, unplaced)) controls.set(control.field.uuid, control);
  applyConditions();
  updateProgress();
  if (embedOptions.go_to_last ?? form.goToLast) {
    // A field hidden by its conditions is no place to resume at.
    const resume = resumeField(
      form.fields.filter((f) => isShown(f.uuid)),
      (uuid) => values.get(uuid),
    );
    if (resume) controls.get(resume.uuid)?.focus();
  }

  root.addEventListener('field-error', (event) => {
    const { uuid, message } = (event as CustomEvent<{ uuid: string; message: string }>).detail;
    setFieldError(uuid, message);
  });

  async function handleError(error: ApiError): Promise<void> {
    let focused = false;
    let general: string | null = null;
    for (const problem of error.all.length ? error.all : [{ message: error.message, fieldUuid: error.fieldUuid }]) {
      const control = problem.fieldUuid ? controls.get(problem.fieldUuid) : undefined;
      if (control) {
        setFieldError(control.field.uuid, problem.message);
        if (!focused) control.focus();
        focused = true;
        // The signer cannot change a readonly field: say it where it cannot be missed too.
        if (!isEditable(control.field)) general ??= problem.message;
      } else {
        general ??= problem.message;
      }
    }
    showAlert(general);
    if (general && CLOSED_MESSAGE.test(general)) {
      // Closed meanwhile (completed elsewhere, declined, archived, expired): show its state.
      try {
        const current = await fetchSigningForm(slug);
        if (current.state !== 'OPEN') show(current);
      } catch {
        // The alert already says what happened.
      }
    }
  }

  completeButton.addEventListener('click', async () => {
    showAlert(null);
    const problems: { uuid: string; message: string }[] = [];
    for (const control of controls.values()) {
      if (!isEditable(control.field) || !isShown(control.field.uuid)) continue;
      const message = checkValue(control.field, values.get(control.field.uuid));
      setFieldError(control.field.uuid, message);
      if (message) problems.push({ uuid: control.field.uuid, message });
    }
    if (problems.length > 0) {
      status.textContent = '';
      const first = problems[0]!.message;
      showAlert(problems.length === 1 ? first : `${problems.length} fields need your attention. ${first}`);
      controls.get(problems[0]!.uuid)?.focus();
      return;
    }
    // Completing is signing: the signer agrees to sign electronically first (./consent.ts).
    if (!(await ensureConsent(form))) return;
    const payload: FieldValues = {};
    for (const field of form.fields) {
      const value = values.get(field.uuid);
      if (
        (isEditable(field) || locked.has(field.uuid)) &&
        isShown(field.uuid) &&
        field.type !== 'payment' &&
        value !== null &&
        value !== undefined &&
        value !== ''
      )
        payload[field.uuid] = value;
    }
    completeButton.disabled = true;
    declineButton.disabled = true;
    status.textContent = 'Completing…';
    try {
      await queue.drain();
      const completed = await completeSigningForm(slug, payload);
      status.textContent = 'Completed.';
      const redirect = safeRedirect(completed.completedRedirectUrl);
      // In a <signet-form> the element takes the whole page there (as DocuSeal's embedded form goes);
      // elsewhere (a tab, a plain iframe) this page goes.
      postToHost(root, 'completed', completed.eventDetail ?? null, redirect ?? undefined);
      if (redirect && !inEmbeddedForm) window.location.assign(redirect);
      else show(completed, { justCompleted: true });
    } catch (error) {
      status.textContent = '';
      completeButton.disabled = Boolean(form.waitingFor);
      declineButton.disabled = false;
      await handleError(error instanceof ApiError ? error : new ApiError((error as Error).message));
    }
  });

  declineButton.addEventListener('click', () => {
    void openDeclineDialog().then(async (reason) => {
      if (reason === null) return;
      try {
        await queue.drain();
        const declined = await declineSigningForm(slug, reason);
        show(declined);
        postToHost(root, 'declined', declined.eventDetail ?? null);
      } catch (error) {
        await handleError(error instanceof ApiError ? error : new ApiError((error as Error).message));
      }
    });
  });

  // Values typed just before leaving are sent even as the page goes away.
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'hidden' && queue.dirty) void queue.flush({ keepalive: true });
  });
}

/**
 * The embedded form's `data-values` and `data-readonly-fields` on a signer's link (on a template
 * link the server stored them: ./template-link.ts). Each names the signer's fields as the API's
 * keys do (uuid, name, either case, parameterized: templates/field-keys.ts). A value fills an
 * editable field the signer has not saved a value for (it is sent when they complete, or save);
 * a named field is shown read-only with its value, which is sent on completion. Both are this
 * page's doing: the signer's browser is theirs, so the server does not hold them to it — fields
 * that must not change are made read-only when the submitter is created (`readonly_fields`).
 * @returns the uuids of the fields it locked
 */
function applyEmbedOptions(form: SigningForm): Set<string> {
  const locked = new Set<string>();
  const prefill = Object.entries(embedOptions.values ?? {});
  const lockNames = embedOptions.readonly_fields ?? [];
  if (prefill.length === 0 && lockNames.length === 0) return locked;
  for (const field of form.fields) {
    if (!isEditable(field) || field.type === 'payment') continue;
    const given = prefill.find(([key]) => matchesField(field, key));
    const unsaved = field.value === null || field.value === undefined || field.value === field.defaultValue;
    if (given && unsaved && !ATTACHMENT_FIELD_TYPES.has(field.type)) field.value = given[1];
    if (lockNames.some((name) => matchesField(field, name))) {
      field.readonly = true;
      locked.add(field.uuid);
    }
  }
  return locked;
}

/** waitingFor is a message ("Waiting for Manager to complete the form.") or a role name. */
function waitingMessage(waitingFor: string): string {
  return /\s/.test(waitingFor.trim()) && /[.!]$/.test(waitingFor.trim())
    ? waitingFor
    : `Waiting for ${waitingFor} to complete the form.`;
}

/** Only http(s) addresses are followed after completion. */
function safeRedirect(url: string | null): string | null {
  if (!url) return null;
  try {
    const parsed = new URL(url, window.location.href);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : null;
  } catch {
    return null;
  }
}

/** Completed, declined, archived or expired: the message, no inputs; signed copies once ready. */
function renderClosed(form: SigningForm, justCompleted: boolean): void {
  const message = form.message ?? 'This form is closed.';
  if (form.state !== 'COMPLETED') {
    const reason = form.state === 'DECLINED' ? 'The sender has been told that you declined.' : null;
    root.replaceChildren(
      h('header', { className: 'form-header' }, h('p', { className: 'subtitle' }, formTitle(form))),
      stateSection(message, reason),
    );
    return;
  }
  const section = justCompleted
    ? stateSection('Thank you! You have completed the form.', `${form.accountName} has been notified.`)
    : stateSection(message);
  section.classList.add('completed');
  const downloads = h('section', { className: 'downloads' }, h('h2', {}, 'Signed documents'));
  const list = h('ul', { className: 'download-list' });
  const waiting = h('p', { className: 'hint' });
  waiting.setAttribute('role', 'status');
  downloads.append(list, waiting);
  section.append(downloads);
  root.replaceChildren(
    h('header', { className: 'form-header' }, h('p', { className: 'subtitle' }, formTitle(form))),
    section,
  );

  const fill = (current: SigningForm): boolean => {
    if (current.completedDocuments.length === 0) {
      waiting.textContent =
        current.submission.status === 'completed'
          ? 'The signed copies are being prepared…'
          : 'The signed copies will be available here once every party has signed.';
      return false;
    }
    list.replaceChildren(
      ...current.completedDocuments.map((doc) =>
        h(
          'li',
          {},
          h(
            'a',
            {
              href: sameOriginUrl(doc.url),
              download: doc.name.endsWith('.pdf') ? doc.name : `${doc.name}.pdf`,
              className: 'download-link',
            },
            doc.name,
          ),
        ),
      ),
    );
    waiting.textContent = '';
    return true;
  };
  if (fill(form)) return;
  // The completion job runs in the background: ask again, less and less often.
  let delay = 1000;
  const poll = async () => {
    try {
      if (fill(await fetchSigningForm(slug))) return;
    } catch {
      // Try again later.
    }
    delay = Math.min(delay * 1.5, 15_000);
    window.setTimeout(() => void poll(), delay);
  };
  window.setTimeout(() => void poll(), delay);
}

/** Asks for the reason; resolves to it, or null when the signer changes their mind. */
function openDeclineDialog(): Promise<string | null> {
  const titleId = uniqueId('decline-title');
  const reasonId = uniqueId('decline-reason');
  const dialog = h('dialog', { className: 'dialog decline-dialog' });
  dialog.setAttribute('aria-labelledby', titleId);
  const reason = h('textarea', { id: reasonId, required: true, maxLength: 1000, rows: 4 });
  const error = h('p', { className: 'dialog-error' });
  error.setAttribute('role', 'alert');
  const cancel = h('button', { type: 'button', className: 'button' }, 'Cancel');
  const confirm = h('button', { type: 'submit', className: 'button danger' }, 'Decline');
  const form = h(
    'form',
    { method: 'dialog', noValidate: true },
    h('h2', { id: titleId }, 'Decline to sign'),
    h('p', {}, 'The sender will see your reason.'),
    h('label', { htmlFor: reasonId }, 'Reason'),
    reason,
    error,
    h('div', { className: 'dialog-actions' }, cancel, confirm),
  );
  dialog.append(form);
  document.body.append(dialog);
  return new Promise((resolve) => {
    let result: string | null = null;
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve(result);
    });
    cancel.addEventListener('click', () => dialog.close());
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const text = reason.value.trim();
      if (!text) {
        error.textContent = 'Please give a reason.';
        reason.focus();
        return;
      }
      result = text;
      dialog.close();
    });
    dialog.showModal();
    reason.focus();
  });
}
