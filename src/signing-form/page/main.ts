/**
 * The signer's page (GET /s/{slug}): loads the form with openSigningForm, shows the documents with
 * the fields over them, saves values as the signer goes, checks required fields and patterns
 * before completing, and then redirects (completed_redirect_url) or lists the signed copies.
 * A field whose conditions are not met is hidden and not required, and shown as soon as the
 * values it depends on meet them (the shared rule, src/templates/field-conditions.ts).
 * Decline asks for a reason. A form that is not open shows DocuSeal's message and no inputs. With
 * `goToLast` (the submitter's go_to_last, else a returning signer) it opens at the field to resume.
 * On narrow screens, or on request (Start), the guided panel leads through the fields one at a
 * time (./guide.ts). Complete waits for values still on their way (a signature on the pad, an
 * upload) and after a refusal keeps its summary in step with the fields as they are fixed.
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
import { Guide } from './guide.ts';
import { t } from './i18n.ts';
import { SaveQueue } from './save-queue.ts';
import { hiddenFieldUuids } from '../../templates/field-conditions.ts';
import { ATTACHMENT_FIELD_TYPES } from '../../field-types.ts';
import { matchesField } from '../../templates/field-keys.ts';
import { showTemplateLink } from './template-link.ts';
import type { FieldValues, SigningForm, SigningFormAttachment, SigningFormField } from './types.ts';
import { checkValue, isEditable, isFilled, preloadPatterns, today } from './values.ts';
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
      error instanceof ApiError && error.code === 'NOT_FOUND' ? t('load.invalidLink') : (error as Error).message;
    root.replaceChildren(stateSection(t('load.failed'), message));
  }
}

function show(form: SigningForm, options: { focusResult?: boolean; justCompleted?: boolean } = {}): void {
  document.title = t('title.page', { title: formTitle(form) });
  if (form.state === 'OPEN') renderOpen(form);
  else renderClosed(form, options.justCompleted ?? false, options.focusResult ?? false);
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

/** What the page calls the documents: the submission's name, else its template's (not a file's name). */
function formTitle(form: SigningForm): string {
  return form.submission.name || form.submission.templateName || form.documents[0]?.name || t('title.fallback');
}

function stateSection(title: string, ...paragraphs: (string | null | undefined)[]): HTMLElement {
  const heading = h('h1', { className: 'state-heading', tabIndex: -1 }, title);
  return h('section', { className: 'state' }, heading, ...paragraphs.filter(Boolean).map((p) => h('p', {}, p!)));
}

/** Below this width the guided panel opens by itself (a field's box is then too small to type in). */
const GUIDED_MEDIA = '(max-width: 767.98px)';

/** The form is open: documents, fields, the guided panel, save-as-you-go, complete and decline. */
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
  // re2js comes only with a pattern to check, and before the first check needs it.
  preloadPatterns(form.fields.filter(isEditable));

  // Save status: a polite live region (WCAG 4.1.3 Status Messages).
  const status = h('p', { className: 'status' });
  status.setAttribute('role', 'status');
  const alert = h('p', { className: 'alert' });
  alert.setAttribute('role', 'alert');
  alert.hidden = true;
  const progress = h('p', { className: 'progress' });
  const completeButton = h(
    'button',
    { type: 'button', className: 'button primary', id: 'complete-button' },
    t('complete.button'),
  );
  const declineButton = h('button', { type: 'button', className: 'button', id: 'decline-button' }, t('decline.button'));
  // The embedded form shows it only with data-with-decline (DocuSeal's default); a plain link always does.
  declineButton.hidden = embedOptions.with_decline === false;
  const startButton = h('button', { type: 'button', className: 'button', id: 'guide-start' }, t('guide.start'));
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
  /** Messages shown at fields (the page's checks, the server's refusals), by field uuid. */
  const shownErrors = new Map<string, string>();
  /** After a refused Complete: the summary in the action bar follows the fields as they are fixed. */
  let attention = false;
  const updateSummary = () => {
    if (!attention) return;
    const open = [...controls.keys()].filter((uuid) => shownErrors.has(uuid) && isShown(uuid));
    if (open.length === 0) {
      attention = false;
      showAlert(null);
      return;
    }
    const first = shownErrors.get(open[0]!)!;
    const text = open.length === 1 ? first : t('complete.attention', { count: open.length, first });
    if (alert.textContent !== text) showAlert(text);
  };
  const setFieldError = (uuid: string, message: string | null) => {
    controls.get(uuid)?.setError(message);
    if (message) shownErrors.set(uuid, message);
    else shownErrors.delete(uuid);
    guide.setError(uuid, message);
    updateSummary();
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
    guide.update();
  };

  const ownRequired = form.fields.filter((f) => isEditable(f) && f.required);
  const updateProgress = () => {
    const required = ownRequired.filter((f) => isShown(f.uuid));
    if (required.length === 0) {
      progress.textContent = '';
      return;
    }
    const filled = required.filter((f) => isFilled(f, values.get(f.uuid))).length;
    progress.textContent = t('progress', { filled, total: required.length });
  };

  const queue = new SaveQueue({
    slug,
    onBusy: (busy) => {
      status.textContent = busy ? t('status.saving') : t('status.saved');
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

  // Work that produces a value (a signature being made and uploaded, files uploading): Complete
  // waits for it, so what the signer has just given is part of what completes.
  const pendingWork = new Set<Promise<unknown>>();
  const settled = async () => {
    while (pendingWork.size > 0) await Promise.allSettled([...pendingWork]);
  };

  const host: FieldHost = {
    form,
    valueOf: (uuid) => values.get(uuid),
    setValue(uuid, value, options = {}) {
      values.set(uuid, value);
      queue.set(uuid, value, options.immediate);
      // An error shown for this field is checked again as the signer corrects it.
      const control = controls.get(uuid);
      if (control && shownErrors.has(uuid))
        void checkValue(control.field, value).then((message) => {
          if (values.get(uuid) === value) setFieldError(uuid, message);
        });
      applyConditions();
      updateProgress();
    },
    attachment: (uuid) => attachments.get(uuid),
    addAttachment: (attachment) => attachments.set(attachment.uuid, attachment),
    announce: (message) => {
      status.textContent = message;
    },
    track(work) {
      pendingWork.add(work);
      void work.catch(() => undefined).finally(() => pendingWork.delete(work));
    },
    guided: () => guide.isOpen,
    openInGuide: (uuid) => {
      const field = form.fields.find((f) => f.uuid === uuid);
      if (field) guide.go(field, { focus: true });
    },
  };

  /** The signer's fields to fill, in reading order (the order the boxes were laid out in). */
  const steps = () => [...controls.values()].map((c) => c.field).filter((f) => isEditable(f) && isShown(f.uuid));
  const guide = new Guide({
    host,
    steps,
    control: (uuid) => controls.get(uuid),
    errorOf: (uuid) => shownErrors.get(uuid),
    setError: setFieldError,
    onToggle(open) {
      root.classList.toggle('guided', open);
      startButton.hidden = open || steps().length === 0;
      // The boxes show values (open) or take inputs again, with what the panel changed (closed).
      for (const control of controls.values()) control.refresh();
    },
    onLastStep: () => completeButton.focus(),
  });

  const documents = h('div', { className: 'documents' });
  const unplaced = h('section', { className: 'unplaced-fields' }, h('h2', {}, t('unplaced.heading')));
  unplaced.hidden = true;
  const subtitle = [
    t('header.from', { account: form.accountName }),
    form.submitter.name
      ? t('header.signAsNamed', { role: form.submitter.role, name: form.submitter.name })
      : t('header.signAs', { role: form.submitter.role }),
  ].join(' ');
  const footer = h(
    'footer',
    { className: 'action-bar' },
    guide.element,
    h(
      'div',
      { className: 'action-row' },
      h('div', { className: 'action-text' }, consentNotice(form), progress, status, alert),
      h('div', { className: 'action-buttons' }, startButton, declineButton, completeButton),
    ),
  );
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
    footer,
  );
  // The page keeps room under the documents for the fixed bar, and scrolls fields into view above it.
  new ResizeObserver(() => {
    if (footer.isConnected)
      document.documentElement.style.setProperty('--footer-height', `${Math.ceil(footer.offsetHeight)}px`);
  }).observe(footer);
  setWaiting(form.waitingFor);
  const pages = renderDocuments(documents, form.documents);
  for (const control of mountFields(host, pages, unplaced)) controls.set(control.field.uuid, control);
  applyConditions();
  updateProgress();
  startButton.hidden = steps().length === 0;
  startButton.addEventListener('click', () => guide.open(undefined, { focus: true }));

  const goToLast = embedOptions.go_to_last ?? form.goToLast;
  // A field hidden by its conditions is no place to resume at.
  const resume = goToLast
    ? resumeField(
        form.fields.filter((f) => isShown(f.uuid)),
        (uuid) => values.get(uuid),
      )
    : undefined;
  const narrow = window.matchMedia(GUIDED_MEDIA);
  /** Whether the panel was opened because the screen is narrow (it then closes when it widens). */
  let openedForWidth = false;
  if (narrow.matches) {
    openedForWidth = true;
    guide.open(resume?.uuid ?? steps()[0]?.uuid, { focus: Boolean(resume) });
  } else if (resume) {
    controls.get(resume.uuid)?.focus();
  }
  narrow.addEventListener('change', () => {
    if (narrow.matches && !guide.isOpen) {
      openedForWidth = true;
      guide.open();
    } else if (!narrow.matches && openedForWidth) {
      openedForWidth = false;
      guide.close();
    }
  });

  root.addEventListener('field-error', (event) => {
    const { uuid, message } = (event as CustomEvent<{ uuid: string; message: string }>).detail;
    setFieldError(uuid, message);
  });

  /** Takes the signer to a field: its step in the panel while the panel is open, else its box. */
  const goToField = (uuid: string) => {
    const control = controls.get(uuid);
    if (!control) return;
    if (guide.isOpen && isEditable(control.field)) guide.go(control.field, { focus: true });
    else control.focus();
  };

  async function handleError(error: ApiError): Promise<void> {
    let focused = false;
    let general: string | null = null;
    for (const problem of error.all.length ? error.all : [{ message: error.message, fieldUuid: error.fieldUuid }]) {
      const control = problem.fieldUuid ? controls.get(problem.fieldUuid) : undefined;
      if (control) {
        setFieldError(control.field.uuid, problem.message);
        if (!focused) goToField(control.field.uuid);
        focused = true;
        // The signer cannot change a readonly field: say it where it cannot be missed too.
        if (!isEditable(control.field)) general ??= problem.message;
      } else {
        general ??= problem.message;
      }
    }
    if (general) {
      attention = false;
      showAlert(general);
    } else {
      attention = true;
      updateSummary();
    }
    if (general && CLOSED_MESSAGE.test(general)) {
      // Closed meanwhile (completed elsewhere, declined, archived, expired): show its state.
      try {
        const current = await fetchSigningForm(slug);
        if (current.state !== 'OPEN') show(current, { focusResult: true });
      } catch {
        // The alert already says what happened.
      }
    }
  }

  let completing = false;
  completeButton.addEventListener('click', async () => {
    if (completing) return;
    completing = true;
    showAlert(null);
    attention = false;
    completeButton.disabled = true;
    try {
      // What the signer has just given is part of what completes: a signature on the panel's
      // pad, then uploads still on their way (issue 24, the Complete race).
      if (guide.isOpen && !(await guide.commit())) return;
      if (pendingWork.size > 0) {
        status.textContent = t('status.completing');
        await settled();
      }
      const problems: string[] = [];
      for (const control of controls.values()) {
        if (!isEditable(control.field) || !isShown(control.field.uuid)) continue;
        const message = await checkValue(control.field, values.get(control.field.uuid));
        setFieldError(control.field.uuid, message);
        if (message) problems.push(control.field.uuid);
      }
      if (problems.length > 0) {
        status.textContent = '';
        attention = true;
        updateSummary();
        // Focus goes to the first field that needs attention (WCAG 3.3.1).
        goToField(problems[0]!);
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
      declineButton.disabled = true;
      status.textContent = t('status.completing');
      try {
        await queue.drain();
        const completed = await completeSigningForm(slug, payload);
        status.textContent = t('status.completed');
        const redirect = safeRedirect(completed.completedRedirectUrl);
        // In a <signet-form> the element takes the whole page there (as DocuSeal's embedded form goes);
        // elsewhere (a tab, a plain iframe) this page goes.
        postToHost(root, 'completed', completed.eventDetail ?? null, redirect ?? undefined);
        if (redirect && !inEmbeddedForm) window.location.assign(redirect);
        else show(completed, { justCompleted: true, focusResult: true });
      } catch (error) {
        status.textContent = '';
        declineButton.disabled = false;
        await handleError(error instanceof ApiError ? error : new ApiError((error as Error).message));
      }
    } finally {
      completing = false;
      if (completeButton.isConnected) {
        completeButton.disabled = Boolean(form.waitingFor);
        // Disabled while completing, the button lost the focus (the browser moves it to <body>),
        // so a dialog closed on the way — the agreement cancelled — had nowhere to give it back:
        // back on Complete, where the signer was (WCAG 2.4.3). A field to fix keeps its focus.
        if (!completeButton.disabled && (document.activeElement === document.body || !document.activeElement))
          completeButton.focus();
      }
    }
  });

  declineButton.addEventListener('click', () => {
    void openDeclineDialog().then(async (reason) => {
      if (reason === null) return;
      try {
        await queue.drain();
        const declined = await declineSigningForm(slug, reason);
        show(declined, { focusResult: true });
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
    : t('waiting', { role: waitingFor });
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

/** DocuSeal's message for a form that is not open, in the page's language (form-state.ts FORM_STATE_MESSAGES). */
function closedMessage(form: SigningForm): string {
  switch (form.state) {
    case 'COMPLETED':
      return t('closed.completed');
    case 'DECLINED':
      return t('closed.declined');
    case 'ARCHIVED':
      return t('closed.archived');
    case 'EXPIRED':
      return t('closed.expired');
    default:
      return form.message ?? t('closed.fallback');
  }
}

/**
 * Completed, declined, archived or expired: the message, no inputs; signed copies once ready.
 * @param focusResult after the signer's own action (Complete, Decline): focus goes to the
 *   result's heading, so a screen reader says what happened (WCAG 2.4.3 Focus Order)
 */
function renderClosed(form: SigningForm, justCompleted: boolean, focusResult: boolean): void {
  // No bar at the bottom any more: no room kept for it.
  document.documentElement.style.removeProperty('--footer-height');
  const header = h('header', { className: 'form-header' }, h('p', { className: 'subtitle' }, formTitle(form)));
  if (form.state !== 'COMPLETED') {
    // What the signer can do next: nothing after declining; an expired link can be sent again.
    const reason =
      form.state === 'DECLINED'
        ? t('closed.declinedNotice')
        : form.state === 'EXPIRED'
          ? t('closed.expiredNotice')
          : null;
    const section = stateSection(closedMessage(form), reason);
    root.replaceChildren(header, section);
    if (focusResult) section.querySelector<HTMLElement>('h1')?.focus();
    return;
  }
  const section = justCompleted
    ? stateSection(t('completed.thanks'), t('completed.notified', { account: form.accountName }))
    : stateSection(closedMessage(form));
  section.classList.add('completed');
  const downloads = h('section', { className: 'downloads' }, h('h2', {}, t('completed.documents')));
  const list = h('ul', { className: 'download-list' });
  const waiting = h('p', { className: 'hint' });
  waiting.setAttribute('role', 'status');
  downloads.append(list, waiting);
  section.append(downloads);
  root.replaceChildren(header, section);
  if (focusResult) section.querySelector<HTMLElement>('h1')?.focus();

  const fill = (current: SigningForm): boolean => {
    if (current.completedDocuments.length === 0) {
      waiting.textContent =
        current.submission.status === 'completed' ? t('completed.preparing') : t('completed.waitingParties');
      return false;
    }
    list.replaceChildren(
      ...current.completedDocuments.map((doc) => {
        const file = doc.name.toLowerCase().endsWith('.pdf') ? doc.name : `${doc.name}.pdf`;
        return h(
          'li',
          {},
          h(
            'a',
            { href: sameOriginUrl(doc.url), download: file, className: 'download-link' },
            t('completed.download', { file }),
          ),
        );
      }),
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
  const errorId = uniqueId('decline-error');
  const dialog = h('dialog', { className: 'dialog decline-dialog' });
  dialog.setAttribute('aria-labelledby', titleId);
  const reason = h('textarea', { id: reasonId, required: true, maxLength: 1000, rows: 4 });
  reason.setAttribute('aria-describedby', errorId);
  const error = h('p', { className: 'dialog-error', id: errorId });
  error.setAttribute('role', 'alert');
  const cancel = h('button', { type: 'button', className: 'button' }, t('dialog.cancel'));
  const confirm = h('button', { type: 'submit', className: 'button danger' }, t('decline.confirm'));
  const form = h(
    'form',
    { method: 'dialog', noValidate: true },
    h('h2', { id: titleId }, t('decline.title')),
    h('p', {}, t('decline.text')),
    h('label', { htmlFor: reasonId }, t('decline.reason')),
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
        error.textContent = t('decline.reasonMissing');
        reason.setAttribute('aria-invalid', 'true');
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
