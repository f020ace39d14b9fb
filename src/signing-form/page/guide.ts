/**
 * The guided panel (issue 24 §1): the signer's fields one at a time in a panel fixed at the
 * bottom of the screen — the field's name, its input at a readable size (18 px text, 48 px tall
 * targets), Back and Next, "2 of 5" — while the document above scrolls to the field and
 * highlights it. It opens by itself on narrow screens (below 768 px, where a field's box on the
 * page is a few pixels tall) and on request on wider ones (the action bar's Start button).
 *
 * Modelled on DocuSeal's form (app/javascript/submission_form/form.vue): one step per editable
 * field in reading order, fields hidden by their conditions skipped, Next refused while a
 * required field is empty (its message shown), the signature pad inline and as wide as the
 * screen. Where DocuSeal's last step submits, here the last step hands over to the page's one
 * Complete button, so completion has one path (main.ts).
 *
 * Values go through the same FieldHost as the boxes on the page (save-as-you-go, conditions,
 * progress), with the same input builders (./fields.ts), so a value reads and saves the same
 * whichever way it was entered.
 */
import { sameOriginUrl } from './api.ts';
import { ensureConsent } from './consent.ts';
import { h, uniqueId } from './dom.ts';
import {
  acceptOf,
  createSelect,
  createTextInput,
  type FieldControl,
  type FieldHost,
  fillUploadButton,
  optionValueOf,
  orderedChoices,
  paymentNote,
  saveSignature,
  suggestedText,
  uploadFiles,
} from './fields.ts';
import { t } from './i18n.ts';
import { createSignatureEditor, type SignatureEditor } from './signature-dialog.ts';
import type { SigningFormField } from './types.ts';
import { checkValue, fieldLabel, isFilled } from './values.ts';

export interface GuideOptions {
  host: FieldHost;
  /** The signer's fields to fill, in reading order, without those their conditions hide. */
  steps(): SigningFormField[];
  control(uuid: string): FieldControl | undefined;
  /** The message shown at a field (the page's check or the server's refusal), or undefined. */
  errorOf(uuid: string): string | undefined;
  /** Shows a message at a field (or clears it with null), on the page and in the panel. */
  setError(uuid: string, message: string | null): void;
  /** The panel opened or closed: the page shows values instead of inputs in the boxes while it is open. */
  onToggle(open: boolean): void;
  /** Next on the last step, once its value passed: the page moves on to Complete. */
  onLastStep(): void;
}

/** Where the guide puts the focus after moving to a step. */
type FocusWish = { focus?: boolean };

export class Guide {
  /** The panel (hidden while closed). */
  readonly element: HTMLElement;
  private readonly count: HTMLElement;
  private readonly body: HTMLElement;
  private readonly error: HTMLElement;
  private readonly back: HTMLButtonElement;
  private readonly next: HTMLButtonElement;
  private current: SigningFormField | undefined;
  private editor: { focus(): void; signature?: SignatureEditor } | undefined;
  /** Re-signing a signature field that has a value: the editor instead of the image. */
  private redo = false;
  private busy = false;

  constructor(private readonly options: GuideOptions) {
    const countId = uniqueId('guide-count');
    this.count = h('h2', { className: 'guide-count', id: countId });
    const close = h('button', { type: 'button', className: 'guide-close link-button' }, t('guide.close'));
    close.addEventListener('click', () => this.close());
    this.body = h('div', { className: 'guide-body' });
    this.error = h('p', { className: 'guide-error', id: uniqueId('guide-error') });
    this.error.hidden = true;
    this.back = h('button', { type: 'button', className: 'button guide-back' }, t('guide.back'));
    this.next = h('button', { type: 'button', className: 'button primary guide-next' }, t('guide.next'));
    this.back.addEventListener('click', () => this.step(-1));
    this.next.addEventListener('click', () => void this.forward());
    this.element = h(
      'section',
      { className: 'guide' },
      h('div', { className: 'guide-head' }, this.count, close),
      this.body,
      this.error,
      h('div', { className: 'guide-nav' }, this.back, this.next),
    );
    this.element.setAttribute('aria-labelledby', countId);
    this.element.hidden = true;
    // Enter in a one-line input is Next (as a form's submit; DocuSeal's steps are forms).
    this.body.addEventListener('keydown', (event) => {
      const target = event.target as HTMLElement;
      if (
        event.key === 'Enter' &&
        !event.isComposing &&
        target instanceof HTMLInputElement &&
        !['checkbox', 'radio', 'file', 'button'].includes(target.type)
      ) {
        event.preventDefault();
        void this.forward();
      }
    });
  }

  get isOpen(): boolean {
    return !this.element.hidden;
  }

  /** The field the panel shows, while it is open. */
  get field(): SigningFormField | undefined {
    return this.isOpen ? this.current : undefined;
  }

  /**
   * Opens the panel at a field (default: the first one without a value, else the first).
   * Nothing happens when the signer has no field to fill.
   */
  open(uuid?: string, wish: FocusWish = {}): void {
    const steps = this.options.steps();
    if (steps.length === 0) return;
    const start =
      steps.find((f) => f.uuid === uuid) ??
      steps.find((f) => !isFilled(f, this.options.host.valueOf(f.uuid))) ??
      steps[0]!;
    const opening = !this.isOpen;
    this.element.hidden = false;
    if (opening) this.options.onToggle(true);
    this.go(start, wish);
  }

  /** Closes the panel; the boxes on the page take inputs again. */
  close(): void {
    if (!this.isOpen) return;
    this.teardown();
    if (this.current) this.options.control(this.current.uuid)?.setCurrent(false);
    this.element.hidden = true;
    this.options.onToggle(false);
  }

  /** Shows a field's message in the panel when it is the current one. */
  setError(uuid: string, message: string | null): void {
    if (this.current?.uuid !== uuid) return;
    this.error.textContent = message ?? '';
    this.error.hidden = !message;
    for (const input of this.body.querySelectorAll('input, select, textarea')) {
      if (message) input.setAttribute('aria-invalid', 'true');
      else input.removeAttribute('aria-invalid');
    }
  }

  /** The steps changed (a condition hid or showed a field): the count, or the next step when this one went. */
  update(): void {
    if (!this.isOpen || !this.current) return;
    const steps = this.options.steps();
    if (steps.some((f) => f.uuid === this.current!.uuid)) {
      this.showCount(steps);
      return;
    }
    if (steps.length === 0) {
      this.close();
      return;
    }
    // The first step after the one that went, in the page's order.
    const order = this.options.host.form.fields.map((f) => f.uuid);
    const at = order.indexOf(this.current.uuid);
    this.go(steps.find((f) => order.indexOf(f.uuid) > at) ?? steps.at(-1)!, {});
  }

  /**
   * Applies what the current step holds but has not saved yet — a signature drawn, typed or
   * chosen in the inline pad — and waits for it to be saved. Next and Complete call it first, so
   * a signature on the pad is part of what completes.
   * @returns false when it could not be saved (the reason is shown in the panel)
   */
  async commit(): Promise<boolean> {
    const field = this.field;
    const signature = this.editor?.signature;
    if (!field || !signature?.touched()) return true;
    const made = await signature.result();
    if (!made) return false;
    // Agreeing to sign electronically comes before the first signature is given (./consent.ts).
    if (!(await ensureConsent(this.options.host.form))) return false;
    const work = saveSignature(this.options.host, field, made);
    this.options.host.track(work);
    try {
      await work;
    } catch (error) {
      this.options.host.announce('');
      this.options.setError(field.uuid, (error as Error).message);
      return false;
    }
    this.options.control(field.uuid)?.refresh();
    if (this.current?.uuid === field.uuid) {
      this.redo = false;
      this.render({});
    }
    return true;
  }

  /** Moves to a field's step. */
  go(field: SigningFormField, wish: FocusWish = {}): void {
    if (this.current && this.current.uuid !== field.uuid) {
      this.options.control(this.current.uuid)?.setCurrent(false);
      this.redo = false;
    }
    this.current = field;
    const control = this.options.control(field.uuid);
    control?.setCurrent(true);
    control?.reveal();
    this.render(wish);
  }

  /** Back (-1) or a step forward without checking (+1). */
  private step(by: number): void {
    const steps = this.options.steps();
    const at = steps.findIndex((f) => f.uuid === this.current?.uuid);
    const target = steps[at + by];
    if (target) this.go(target, { focus: true });
  }

  /** Next: the step's value is applied and checked; then the next step, or Complete after the last. */
  private async forward(): Promise<void> {
    if (this.busy || !this.current) return;
    this.busy = true;
    try {
      if (!(await this.commit())) return;
      const field = this.current;
      const problem = await checkValue(field, this.options.host.valueOf(field.uuid));
      this.options.setError(field.uuid, problem);
      if (problem) {
        this.editor?.focus();
        return;
      }
      const steps = this.options.steps();
      const at = steps.findIndex((f) => f.uuid === field.uuid);
      const following = steps[at + 1];
      if (following) this.go(following, { focus: true });
      else this.options.onLastStep();
    } finally {
      this.busy = false;
    }
  }

  private showCount(steps: SigningFormField[]): void {
    const at = steps.findIndex((f) => f.uuid === this.current?.uuid);
    this.count.textContent = t('guide.count', { current: at + 1, total: steps.length });
    this.back.disabled = at <= 0;
    // After the last step comes the page's Complete button.
    this.next.textContent = at === steps.length - 1 ? t('guide.finish') : t('guide.next');
  }

  private teardown(): void {
    this.editor?.signature?.destroy();
    this.editor = undefined;
  }

  /** Builds the current step: its label, input, message. */
  private render(wish: FocusWish): void {
    const field = this.current;
    if (!field) return;
    this.teardown();
    this.showCount(this.options.steps());
    const { host } = this.options;
    const inputId = uniqueId('guide-input');
    const labelId = uniqueId('guide-label');
    const descriptionId = field.description ? uniqueId('guide-description') : undefined;
    const describedBy = [descriptionId, this.error.id].filter(Boolean).join(' ');
    const name = fieldLabel(field);
    const labelText = [
      h('span', {}, name),
      field.required ? null : h('span', { className: 'guide-optional' }, ` ${t('guide.optional')}`),
    ];
    const label = h('label', { className: 'guide-label', htmlFor: inputId, id: labelId }, ...labelText);
    const description = descriptionId
      ? h('p', { className: 'guide-description', id: descriptionId }, field.description ?? '')
      : null;
    const set = (value: unknown, immediate = true) => {
      host.setValue(field.uuid, value, { immediate });
      this.options.control(field.uuid)?.refresh();
    };
    const wire = (input: HTMLElement) => {
      input.id = inputId;
      if (describedBy) input.setAttribute('aria-describedby', describedBy);
      if (field.required && !(input instanceof HTMLInputElement && input.type === 'file'))
        input.setAttribute('aria-required', 'true');
    };
    const value = host.valueOf(field.uuid);
    const parts: (HTMLElement | null)[] = [];
    let focusTarget: HTMLElement | undefined;
    let signature: SignatureEditor | undefined;

    switch (field.type) {
      case 'checkbox': {
        const input = h('input', { type: 'checkbox', className: 'guide-checkbox', checked: value === true });
        wire(input);
        input.addEventListener('change', () => set(input.checked));
        parts.push(h('label', { className: 'guide-check', htmlFor: inputId, id: labelId }, input, ...labelText));
        focusTarget = input;
        break;
      }
      case 'select': {
        const select = createSelect(field, value);
        select.classList.add('guide-input');
        wire(select);
        select.addEventListener('change', () => set(select.value === '' ? null : select.value));
        parts.push(label, description, select);
        focusTarget = select;
        break;
      }
      case 'radio':
      case 'multiple': {
        const chosen = new Set(Array.isArray(value) ? value.map(String) : value ? [String(value)] : []);
        const inputs = (field.options ?? []).map((option, index) => {
          const optionValue = optionValueOf(field, option.value, index);
          const input = h('input', {
            type: field.type === 'radio' ? 'radio' : 'checkbox',
            name: inputId,
            value: optionValue,
            checked: chosen.has(optionValue),
          });
          if (describedBy) input.setAttribute('aria-describedby', describedBy);
          input.addEventListener('change', () => {
            if (field.type === 'radio') set(optionValue);
            else set(orderedChoices(field, new Set(inputs.filter((i) => i.checked).map((i) => i.value))));
          });
          return input;
        });
        const legend = h('legend', { className: 'guide-label', id: labelId }, ...labelText);
        parts.push(
          h(
            'fieldset',
            { className: 'guide-choices' },
            legend,
            description,
            ...inputs.map((input) => h('label', { className: 'guide-choice' }, input, h('span', {}, input.value))),
          ),
        );
        focusTarget = inputs.find((i) => i.checked) ?? inputs[0];
        break;
      }
      case 'signature':
      case 'initials': {
        const kind = field.type === 'initials' ? 'initials' : 'signature';
        const labelP = h('p', { className: 'guide-label', id: labelId }, ...labelText);
        const attachment = host.attachment(String(value ?? ''));
        if (attachment && !this.redo) {
          const again = h(
            'button',
            { type: 'button', className: 'button' },
            kind === 'initials' ? t('guide.initialAgain') : t('guide.signAgain'),
          );
          again.addEventListener('click', () => {
            this.redo = true;
            this.render({ focus: true });
          });
          const image = h('img', {
            className: 'guide-signed',
            src: sameOriginUrl(attachment.url),
            alt: t('field.signed', { name }),
          });
          parts.push(labelP, description, h('div', { className: 'guide-signed-row' }, image, again));
          focusTarget = again;
        } else {
          signature = createSignatureEditor({
            kind,
            format: field.preferences.format,
            label: name,
            suggestedText: suggestedText(host, field),
          });
          const group = h('div', { className: 'guide-signature' }, signature.element);
          group.setAttribute('role', 'group');
          group.setAttribute('aria-labelledby', labelId);
          if (describedBy) group.setAttribute('aria-describedby', describedBy);
          parts.push(labelP, description, group);
          focusTarget = undefined;
        }
        break;
      }
      case 'image':
      case 'file': {
        const input = h('input', { type: 'file', className: 'guide-file', accept: acceptOf(field) });
        input.multiple = field.type === 'file';
        wire(input);
        const chooser = h('label', { className: 'button guide-file-button', htmlFor: inputId });
        chooser.setAttribute('aria-hidden', 'true');
        const chosen = h('div', { className: 'guide-file-chosen' });
        const show = () => {
          fillUploadButton(host, field, chosen);
          chooser.textContent = isFilled(field, host.valueOf(field.uuid))
            ? t('guide.chooseAnother')
            : field.type === 'image'
              ? t('field.uploadImage')
              : t('field.attachFile');
        };
        show();
        input.addEventListener('change', () => {
          const files = [...(input.files ?? [])];
          input.value = '';
          if (files.length === 0) return;
          const work = uploadFiles(host, field, files).then(
            () => {
              this.options.setError(field.uuid, null);
              this.options.control(field.uuid)?.refresh();
              show();
            },
            (error: Error) => {
              host.announce('');
              this.options.setError(field.uuid, error.message);
            },
          );
          host.track(work);
        });
        parts.push(label, description, h('div', { className: 'guide-file-row' }, input, chooser, chosen));
        focusTarget = input;
        break;
      }
      case 'payment': {
        const note = paymentNote(field);
        parts.push(h('p', { className: 'guide-label', id: labelId }, ...labelText), note);
        focusTarget = note;
        break;
      }
      default: {
        const area = field.areas[0];
        const cells = area?.cellW ? Math.max(1, Math.round(area.w / area.cellW)) : undefined;
        const text = createTextInput(field, { cells });
        text.input.classList.add('guide-input');
        text.write(value);
        wire(text.input);
        text.input.addEventListener('input', () => set(text.read(), false));
        text.input.addEventListener('change', () => {
          text.tidy();
          set(text.read());
        });
        parts.push(label, description, text.element);
        focusTarget = text.input;
      }
    }

    this.body.replaceChildren(...parts.filter((p): p is HTMLElement => p !== null));
    this.editor = {
      signature,
      focus: () => {
        if (focusTarget) focusTarget.focus({ preventScroll: true });
        else
          (
            this.body.querySelector<HTMLElement>('[role="tab"][aria-selected="true"], input, button') ?? this.next
          ).focus();
      },
    };
    signature?.start();
    const message = this.options.errorOf(field.uuid);
    this.error.textContent = message ?? '';
    this.error.hidden = !message;
    if (message) this.setError(field.uuid, message);
    if (wish.focus) this.editor.focus();
  }
}
