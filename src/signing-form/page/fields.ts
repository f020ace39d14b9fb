/**
 * The fields laid over the pages: one box per area at the area's place (fractions of the page
 * box, so fields follow the page as it scales), holding a labelled input for this signer's
 * editable fields and the value, read-only, for the rest (readonly or prefilled fields, other
 * parties' completed values).
 *
 * A field with several areas gets its input in the first and shows its value in the others
 * (clicking one moves to the input); radio and multiple fields with an area per option get a
 * radio button or checkbox in each. Fields without an area are listed below the documents.
 *
 * While the guided panel is open (./guide.ts, `.guided` on the page) the boxes show the values
 * instead of inputs — a box's input on a phone is a few pixels tall — and a tap on a box opens its
 * field in the panel. The panel edits values with the helpers exported here (createTextInput,
 * saveSignature, uploadFiles), so both ways store the same values the same way.
 */
import { sameOriginUrl, uploadAttachment, uploadTypedSignature } from './api.ts';
import { h, uniqueId } from './dom.ts';
import { ensureConsent } from './consent.ts';
import { openSignatureDialog, type SignatureResult } from './signature-dialog.ts';
import type { FieldArea, SigningForm, SigningFormAttachment, SigningFormField } from './types.ts';
import { dateKind, type DateKind } from '../../signing/format-values.ts';
import { t } from './i18n.ts';
import { displayText, fieldLabel, isEditable, normalizePhone } from './values.ts';
import type { PageView } from './viewer.ts';

/** What the fields need from the page around them. */
export interface FieldHost {
  form: SigningForm;
  /** The current value of a field (saved, prefilled or just entered). */
  valueOf(uuid: string): unknown;
  /** Records a value and saves it (after a pause in typing, or at once with `immediate`). */
  setValue(uuid: string, value: unknown, options?: { immediate?: boolean }): void;
  /** Attachments the page knows (from the form and from this visit's uploads), by uuid. */
  attachment(uuid: string): SigningFormAttachment | undefined;
  addAttachment(attachment: SigningFormAttachment): void;
  /** Says something in the status line (uploads in progress, …). */
  announce(message: string): void;
  /**
   * Holds Complete until `work` has settled: a value on its way (a signature being made and
   * uploaded, files uploading) is part of what the signer gave (issue 24, the Complete race).
   */
  track(work: Promise<unknown>): void;
  /** Whether the guided panel is open (boxes show values; a tap opens the field in the panel). */
  guided(): boolean;
  /** Opens the field in the guided panel (a tap on its box while the panel is open). */
  openInGuide(uuid: string): void;
}

/** One field on the page. */
export interface FieldControl {
  field: SigningFormField;
  /** Shows (or with null clears) a message next to the field and marks its input invalid. */
  setError(message: string | null): void;
  /** Scrolls to the field and focuses its input. */
  focus(): void;
  /** Hides every box of the field and its message (its conditions are not met), or shows them again. */
  setHidden(hidden: boolean): void;
  /** Shows the current value again in the field's inputs and boxes (after the guide changed it). */
  refresh(): void;
  /** Marks the field's boxes as the guide's current field (or not). */
  setCurrent(current: boolean): void;
  /** Scrolls the field's first box into view (above the panel at the bottom). */
  reveal(): void;
}

/** Largest upload, in bytes: the server's limit, given to the page in the shell (page-routes.ts). */
const MAX_UPLOAD_BYTES = Number(document.getElementById('signing-form')?.dataset.maxUploadBytes) || 50 * 1024 * 1024;
const IMAGE_ACCEPT = 'image/png,image/jpeg,image/gif,image/webp';

interface Place {
  area: FieldArea;
  page: PageView;
}

/** Points of a page (as displayed) for an area, for font sizing. */
function pageSize(host: FieldHost, area: FieldArea): { width: number; height: number } | undefined {
  return host.form.documents.find((d) => d.uuid === area.attachmentUuid)?.pages[area.page];
}

/**
 * Lays every field of the form over the pages (or into `unplaced` when it has no area on a page)
 * and returns the controls of all of them, in reading order (document, page, top, left).
 */
export function mountFields(host: FieldHost, pages: Map<string, PageView[]>, unplaced: HTMLElement): FieldControl[] {
  const documentOrder = new Map(host.form.documents.map((d, i) => [d.uuid, i]));
  const firstPlace = (field: SigningFormField) => {
    const area = field.areas[0];
    return area ? [documentOrder.get(area.attachmentUuid) ?? 99, area.page, area.y, area.x] : [999, 0, 0, 0];
  };
  const fields = [...host.form.fields].sort((a, b) => {
    const [pa, pb] = [firstPlace(a), firstPlace(b)];
    for (let i = 0; i < pa.length; i++) if (pa[i] !== pb[i]) return pa[i]! - pb[i]!;
    return 0;
  });
  return fields.map((field) => {
    const places: Place[] = [];
    for (const area of field.areas) {
      const page = pages.get(area.attachmentUuid)?.[area.page];
      if (page) places.push({ area, page });
    }
    return mountField(host, field, places, unplaced);
  });
}

/** Which ARIA roles take `aria-required` (WAI-ARIA 1.2): not buttons, radios or file choosers. */
const TAKES_ARIA_REQUIRED = (input: HTMLElement): boolean =>
  input instanceof HTMLSelectElement ||
  input instanceof HTMLTextAreaElement ||
  (input instanceof HTMLInputElement && !['radio', 'file', 'button', 'submit'].includes(input.type));

/** A field's accessible name: its label, and "(required)" when the signer must fill it. */
export function accessibleName(field: SigningFormField, name = fieldLabel(field)): string {
  return field.required && isEditable(field) ? t('field.requiredName', { name }) : name;
}

function mountField(host: FieldHost, field: SigningFormField, places: Place[], unplaced: HTMLElement): FieldControl {
  const label = fieldLabel(field);
  const editable = isEditable(field);
  const errorId = uniqueId('field-error');
  const error = h('p', { className: 'field-error', id: errorId });
  error.setAttribute('role', 'alert');
  error.hidden = true;
  const describedBy = field.description ? uniqueId('field-description') : undefined;
  const boxes: HTMLElement[] = [];
  /** Redraws what a box shows while the guide is open, and read-only copies of the value. */
  const displays: (() => void)[] = [];
  /** Puts the current value back into the inputs (after the guide changed it). */
  const syncs: (() => void)[] = [];

  /** The element holding the field in a place (an area box), or in the list below the documents. */
  const makeBox = (place: Place | undefined): HTMLElement => {
    const box = h('div', { className: `field type-${field.type}` });
    box.dataset.fieldUuid = field.uuid;
    box.dataset.fieldName = field.name;
    box.classList.add(editable ? 'editable' : 'readonly', field.own ? 'own' : 'other');
    if (field.required && editable) box.classList.add('required');
    if (place) {
      const { area, page } = place;
      box.classList.add('placed');
      box.style.left = `${area.x * 100}%`;
      box.style.top = `${area.y * 100}%`;
      box.style.width = `${area.w * 100}%`;
      box.style.height = `${area.h * 100}%`;
      const size = pageSize(host, area);
      if (size) {
        const heightPt = area.h * size.height;
        const preferred = Number(field.preferences.font_size);
        const fontPt =
          Number.isFinite(preferred) && preferred > 0 ? preferred : Math.max(6, Math.min(12, heightPt * 0.62));
        // cqw: a percentage of the page box's width, so text scales with the page.
        box.style.fontSize = `${((fontPt / size.width) * 100).toFixed(3)}cqw`;
        if (field.type === 'cells' && area.cellW) {
          box.classList.add('has-cells');
          box.style.setProperty('--cells', String(Math.max(1, Math.round(area.w / area.cellW))));
        }
      }
      page.element.append(box);
    } else {
      box.classList.add('unplaced');
      box.append(h('span', { className: 'unplaced-label' }, label));
      unplaced.append(box);
      unplaced.hidden = false;
    }
    if (editable) {
      // While the guide is open a box shows the value; a tap opens the field in the panel.
      box.addEventListener('click', () => {
        if (host.guided()) host.openInGuide(field.uuid);
      });
    }
    boxes.push(box);
    return box;
  };

  /** Wires an input to its label, description and error. */
  const describe = (input: HTMLElement, name = label) => {
    input.setAttribute('aria-label', accessibleName(field, name));
    if (field.required && editable && TAKES_ARIA_REQUIRED(input)) input.setAttribute('aria-required', 'true');
    if (field.description) input.title = field.description;
    input.setAttribute('aria-describedby', [describedBy, errorId].filter(Boolean).join(' '));
  };

  /** A box's view of the value while the guide is open (hidden otherwise, by the stylesheet). */
  const addGuideDisplay = (box: HTMLElement, optionValue?: string) => {
    const display = h('span', { className: 'field-display' });
    display.setAttribute('aria-hidden', 'true');
    const fill = () => {
      // Filled only while the panel is open: otherwise the box's text is its input's alone.
      if (!host.guided()) display.replaceChildren();
      else if (optionValue === undefined) fillDisplay(host, field, display);
      else {
        const value = host.valueOf(field.uuid);
        const chosen = Array.isArray(value) ? value.map(String).includes(optionValue) : value === optionValue;
        display.textContent = chosen ? '✔' : '';
      }
    };
    fill();
    displays.push(fill);
    box.append(display);
  };

  const primaryPlace = places[0];
  const primaryBox = makeBox(primaryPlace);
  if (describedBy) {
    const description = h('span', { className: 'sr-only', id: describedBy }, field.description ?? '');
    primaryBox.append(description);
  }
  // The error sits just under the field's first area (or inside its row below the documents).
  if (primaryPlace) {
    error.style.left = `${primaryPlace.area.x * 100}%`;
    error.style.top = `${(primaryPlace.area.y + primaryPlace.area.h) * 100}%`;
    primaryPlace.page.element.append(error);
  } else {
    primaryBox.append(error);
  }

  let focusTarget: HTMLElement = primaryBox;
  const invalidTargets: HTMLElement[] = [];
  const refreshAll = () => {
    for (const display of displays) display();
  };

  const addMirror = (place: Place) => {
    const box = makeBox(place);
    box.classList.add('mirror');
    box.setAttribute('aria-hidden', 'true');
    box.addEventListener('click', () => {
      if (!host.guided()) focusTarget.focus();
    });
    displays.push(() => fillDisplay(host, field, box));
    fillDisplay(host, field, box);
  };

  if (!editable) {
    fillDisplay(host, field, primaryBox);
    for (const place of places.slice(1)) fillDisplay(host, field, makeBox(place));
    primaryBox.tabIndex = -1;
  } else {
    const optionPlaces = places.filter((p) => p.area.optionUuid);
    if ((field.type === 'radio' || field.type === 'multiple') && optionPlaces.length > 0) {
      // An input per option area; areas without an option show the chosen value(s).
      const inputs = mountOptionAreas(host, field, optionPlaces, primaryBox, describe, refreshAll, addGuideDisplay);
      focusTarget = inputs[0]!;
      invalidTargets.push(...inputs);
      syncs.push(() => {
        const value = host.valueOf(field.uuid);
        for (const input of inputs)
          input.checked = Array.isArray(value) ? value.map(String).includes(input.value) : value === input.value;
      });
      const others = places.filter((p) => !p.area.optionUuid);
      for (const place of others) addMirror(place);
    } else {
      const mounted = mountInput(host, field, primaryBox, describe, refreshAll);
      focusTarget = mounted.input;
      invalidTargets.push(mounted.input);
      syncs.push(mounted.sync);
      addGuideDisplay(primaryBox);
      for (const place of places.slice(1)) addMirror(place);
    }
  }

  return {
    field,
    setError(message) {
      error.textContent = message ?? '';
      error.hidden = !message;
      primaryBox.classList.toggle('invalid', Boolean(message));
      for (const target of invalidTargets) {
        if (message) target.setAttribute('aria-invalid', 'true');
        else target.removeAttribute('aria-invalid');
      }
    },
    focus() {
      primaryBox.scrollIntoView({ block: 'center', behavior: 'smooth' });
      focusTarget.focus({ preventScroll: true });
    },
    setHidden(hidden) {
      // Every box of the field, option areas' copies included (they carry the same data-field-uuid).
      for (const box of document.querySelectorAll<HTMLElement>(`[data-field-uuid="${CSS.escape(field.uuid)}"]`))
        box.hidden = hidden;
    },
    refresh() {
      for (const sync of syncs) sync();
      refreshAll();
    },
    setCurrent(current) {
      for (const box of document.querySelectorAll<HTMLElement>(`[data-field-uuid="${CSS.escape(field.uuid)}"]`))
        box.classList.toggle('current', current);
    },
    reveal() {
      const reduced = window.matchMedia('(prefers-reduced-motion: reduce)').matches;
      primaryBox.scrollIntoView({ block: 'center', behavior: reduced ? 'auto' : 'smooth' });
    },
  };
}

/** Radio buttons or checkboxes, one in each option's area. Returns them in area order. */
function mountOptionAreas(
  host: FieldHost,
  field: SigningFormField,
  places: Place[],
  firstBox: HTMLElement,
  describe: (input: HTMLElement, name?: string) => void,
  onChange: () => void,
  addGuideDisplay: (box: HTMLElement, optionValue?: string) => void,
): HTMLInputElement[] {
  const label = fieldLabel(field);
  const inputs: HTMLInputElement[] = [];
  const group = `field-${field.uuid}`;
  places.forEach((place, index) => {
    // The field's first box goes to the first option's area (the field's first area may be one
    // without an option, which then shows the chosen value).
    const box = index === 0 ? firstBox : (firstBox.cloneNode(false) as HTMLElement);
    box.style.left = `${place.area.x * 100}%`;
    box.style.top = `${place.area.y * 100}%`;
    box.style.width = `${place.area.w * 100}%`;
    box.style.height = `${place.area.h * 100}%`;
    if (box !== firstBox)
      box.addEventListener('click', () => {
        if (host.guided()) host.openInGuide(field.uuid);
      });
    if (box.parentElement !== place.page.element) place.page.element.append(box);
    const option = field.options?.find((o) => o.uuid === place.area.optionUuid);
    const optionValue = optionValueOf(field, option?.value, index);
    const input = h('input', {
      type: field.type === 'radio' ? 'radio' : 'checkbox',
      name: group,
      value: optionValue,
      className: 'option-input',
    });
    describe(input, `${label}: ${optionValue}`);
    const current = host.valueOf(field.uuid);
    input.checked =
      field.type === 'radio' ? current === optionValue : Array.isArray(current) && current.includes(optionValue);
    input.addEventListener('change', () => {
      if (field.type === 'radio') {
        host.setValue(field.uuid, optionValue, { immediate: true });
      } else {
        const chosen = new Set(
          Array.isArray(host.valueOf(field.uuid)) ? (host.valueOf(field.uuid) as unknown[]).map(String) : [],
        );
        if (input.checked) chosen.add(optionValue);
        else chosen.delete(optionValue);
        host.setValue(field.uuid, orderedChoices(field, chosen), { immediate: true });
      }
      onChange();
    });
    box.append(input);
    addGuideDisplay(box, optionValue);
    inputs.push(input);
  });
  return inputs;
}

/** An option's value, or "Option N" for an option without one (DocuSeal's form.vue `optionValue`). */
export function optionValueOf(_field: SigningFormField, value: string | undefined, index: number): string {
  return value || t('field.option', { number: index + 1 });
}

/** The chosen values of a multiple field in the options' order. */
export function orderedChoices(field: SigningFormField, chosen: Set<string>): string[] {
  return (field.options ?? []).map((o, i) => optionValueOf(field, o.value, i)).filter((v) => chosen.has(v));
}

/** An editable field's input in its first area, and how to show the current value in it again. */
interface MountedInput {
  input: HTMLElement;
  sync(): void;
}

/** The input of an editable field in its first area. */
function mountInput(
  host: FieldHost,
  field: SigningFormField,
  box: HTMLElement,
  describe: (input: HTMLElement, name?: string) => void,
  onChange: () => void,
): MountedInput {
  const value = host.valueOf(field.uuid);
  const set = (next: unknown, immediate = false) => {
    host.setValue(field.uuid, next, { immediate });
    onChange();
  };

  switch (field.type) {
    case 'checkbox': {
      const input = h('input', { type: 'checkbox', checked: value === true, className: 'checkbox-input' });
      describe(input);
      input.addEventListener('change', () => set(input.checked, true));
      box.append(input);
      return { input, sync: () => (input.checked = host.valueOf(field.uuid) === true) };
    }
    case 'select':
    case 'radio': {
      const select = createSelect(field, value);
      describe(select);
      select.addEventListener('change', () => set(select.value === '' ? null : select.value, true));
      box.append(select);
      return { input: select, sync: () => (select.value = String(host.valueOf(field.uuid) ?? '')) };
    }
    case 'multiple':
      return mountMultipleChooser(host, field, box, describe, onChange);
    case 'signature':
    case 'initials':
      return mountSignature(host, field, box, describe, onChange);
    case 'image':
    case 'file':
      return mountUpload(host, field, box, describe, onChange);
    case 'payment': {
      const note = paymentNote(field);
      describe(note);
      box.append(note);
      return { input: note, sync: () => undefined };
    }
    default: {
      // text, number, date, phone, cells
      const area = field.areas[0];
      const size = area ? host.form.documents.find((d) => d.uuid === area.attachmentUuid)?.pages[area.page] : undefined;
      const tall = Boolean(field.type === 'text' && area && size && area.h * size.height > 40);
      const text = createTextInput(field, {
        tall,
        cells: area?.cellW ? Math.max(1, Math.round(area.w / area.cellW)) : undefined,
      });
      text.write(value);
      describe(text.input);
      text.input.addEventListener('input', () => set(text.read()));
      text.input.addEventListener('change', () => {
        text.tidy();
        set(text.read(), true);
      });
      box.append(text.element);
      return { input: text.input, sync: () => text.write(host.valueOf(field.uuid)) };
    }
  }
}

/** A select of a field's options, the empty choice first. */
export function createSelect(field: SigningFormField, value: unknown): HTMLSelectElement {
  const select = h(
    'select',
    { className: 'select-input' },
    h('option', { value: '' }, field.type === 'radio' ? t('field.chooseOne') : t('field.choose')),
  );
  (field.options ?? []).forEach((option, index) => {
    const optionValue = optionValueOf(field, option.value, index);
    select.append(h('option', { value: optionValue, selected: optionValue === value }, optionValue));
  });
  return select;
}

/** The note of a payment field: payments are not configured on this server. */
export function paymentNote(field: SigningFormField): HTMLElement {
  const price = [field.preferences.price, field.preferences.currency]
    .filter((p) => p !== undefined && p !== null && p !== '')
    .join(' ');
  return h(
    'div',
    { className: 'payment-note', tabIndex: -1 },
    h('strong', {}, price ? t('field.paymentPrice', { price }) : t('field.payment')),
    ` ${t('field.paymentNotConfigured')}`,
  );
}

/** A text-like input (text, number, date, phone, cells) with how to read, write and tidy its value. */
export interface TextInput {
  /** What to put in the page: the input, or for a date the input with the date as the documents print it. */
  element: HTMLElement;
  input: HTMLInputElement | HTMLTextAreaElement;
  /** The value in its stored shape (docuseal-behaviour.md §11), null when empty. */
  read(): unknown;
  /** Shows a stored value. */
  write(value: unknown): void;
  /** Normalizes what was typed once the signer leaves the input (phone numbers). */
  tidy(): void;
}

/**
 * The input of a text, number, date, phone or cells field, as the overlay and the guided panel
 * both use it. A date field's input follows what its format stores (DocuSeal's date_step.vue
 * `inputType`: date, month or datetime-local); beside it (over it, while it is not being edited)
 * the date is shown as the signed documents print it (values.ts displayText), since the browser
 * writes a date input in its own locale's order.
 * @param options.tall a multi-line text area; options.cells the number of cells (one character each)
 */
export function createTextInput(field: SigningFormField, options: { tall?: boolean; cells?: number } = {}): TextInput {
  const label = fieldLabel(field);
  const input = options.tall ? h('textarea', { className: 'text-input' }) : h('input', { className: 'text-input' });
  if (input instanceof HTMLInputElement) {
    input.type =
      field.type === 'date'
        ? DATE_INPUT_TYPES[dateKind(field.preferences.format)]
        : ({ number: 'number', phone: 'tel' }[field.type] ?? 'text');
    if (field.type === 'number') {
      input.step = 'any';
      input.inputMode = 'decimal';
    }
    if (field.type === 'phone') input.autocomplete = 'tel';
    if (field.type === 'cells') {
      if (options.cells) input.maxLength = options.cells;
      input.autocomplete = 'off';
      input.spellcheck = false;
    }
  }
  if (field.type !== 'date' && field.type !== 'cells') input.placeholder = label;
  let element: HTMLElement = input;
  let shown: HTMLElement | undefined;
  if (field.type === 'date') {
    shown = h('span', { className: 'date-shown' });
    shown.setAttribute('aria-hidden', 'true');
    element = h('span', { className: 'date-wrap' }, input, shown);
  }
  const read = (): unknown => {
    if (field.type === 'number') return input.value === '' ? null : Number(input.value);
    if (field.type === 'phone') return input.value.trim() === '' ? null : normalizePhone(input.value.trim());
    if (field.type === 'date' && input.type === 'datetime-local') {
      // Stored as the instant in UTC, as DocuSeal's form does (`new Date(value).toISOString()`).
      const instant = new Date(input.value);
      return input.value === '' || Number.isNaN(instant.getTime()) ? null : instant.toISOString();
    }
    if (field.type === 'date') return input.value === '' ? null : input.value;
    return input.value;
  };
  const showDate = () => {
    if (!shown) return;
    const text = displayText(field, read());
    shown.textContent = text;
    element.classList.toggle('empty', text === '');
  };
  input.addEventListener('input', showDate);
  return {
    element,
    input,
    read,
    write(value) {
      input.value =
        value === null || value === undefined
          ? ''
          : field.type === 'date' && input.type === 'datetime-local'
            ? localDateTime(String(value))
            : String(value);
      showDate();
    },
    tidy() {
      if (field.type === 'phone' && input.value.trim()) input.value = normalizePhone(input.value.trim());
    },
  };
}

/**
 * A multiple-choice field without option areas: a button that opens a list of checkboxes. Each
 * tick is recorded and saved as it is made, so the button shows the choice before Done closes.
 */
function mountMultipleChooser(
  host: FieldHost,
  field: SigningFormField,
  box: HTMLElement,
  describe: (input: HTMLElement, name?: string) => void,
  onChange: () => void,
): MountedInput {
  const label = fieldLabel(field);
  const button = h('button', { type: 'button', className: 'field-button' });
  const show = () => {
    const chosen = host.valueOf(field.uuid);
    button.textContent =
      Array.isArray(chosen) && chosen.length ? chosen.join(', ') : t('field.chooseMany', { name: label });
    // The name starts with the field's name and contains what the button shows (WCAG 2.5.3).
    button.setAttribute('aria-label', `${accessibleName(field)}: ${button.textContent}`);
  };
  describe(button);
  show();
  button.addEventListener('click', () => {
    const titleId = uniqueId('multiple-title');
    const dialog = h('dialog', { className: 'dialog' });
    dialog.setAttribute('aria-labelledby', titleId);
    const current = new Set(
      Array.isArray(host.valueOf(field.uuid)) ? (host.valueOf(field.uuid) as unknown[]).map(String) : [],
    );
    const boxes = (field.options ?? []).map((option, index) => {
      const value = optionValueOf(field, option.value, index);
      const input = h('input', { type: 'checkbox', value, checked: current.has(value) });
      return { input, row: h('label', { className: 'choice' }, input, ` ${value}`) };
    });
    // Each tick is recorded as it happens (as option-area checkboxes are), not when the dialog's
    // close event arrives: that event is a task queued after Done, so the summary and the values
    // would lag the click.
    const record = () => {
      host.setValue(
        field.uuid,
        boxes.filter((b) => b.input.checked).map((b) => b.input.value),
        { immediate: true },
      );
      show();
      onChange();
    };
    for (const { input } of boxes) input.addEventListener('change', record);
    const done = h('button', { type: 'submit', className: 'button primary' }, t('dialog.done'));
    const form = h(
      'form',
      { method: 'dialog' },
      h('h2', { id: titleId }, label),
      h('fieldset', { className: 'choices' }, h('legend', { className: 'sr-only' }, label), ...boxes.map((b) => b.row)),
      h('div', { className: 'dialog-actions' }, done),
    );
    dialog.append(form);
    document.body.append(dialog);
    dialog.addEventListener('close', () => {
      dialog.remove();
      button.focus();
    });
    dialog.showModal();
  });
  box.append(button);
  return { input: button, sync: show };
}

/** "Ada Lovelace" → "AL". */
function initialsOf(name: string): string {
  return name
    .split(/\s+/)
    .filter(Boolean)
    .map((part) => part[0]!.toUpperCase())
    .join('');
}

/** What the signature editor suggests typing for a field: the signer's name, or its initials. */
export function suggestedText(host: FieldHost, field: SigningFormField): string {
  const name = host.form.submitter.name ?? '';
  return field.type === 'initials' ? initialsOf(name) : name;
}

/**
 * Uploads what the signer made for a signature or initials field (the PNG, or the typed text the
 * server renders) and saves the attachment's uuid as the field's value.
 * @throws ApiError with the server's message (`signature is empty`, …)
 */
export async function saveSignature(host: FieldHost, field: SigningFormField, made: SignatureResult): Promise<void> {
  const kind = field.type === 'initials' ? 'initials' : 'signature';
  host.announce(kind === 'initials' ? t('status.savingInitials') : t('status.savingSignature'));
  const uploaded =
    'typedText' in made
      ? await uploadTypedSignature(host.form.slug, made.typedText, kind)
      : await uploadAttachment(host.form.slug, made.png, `${kind}.png`, kind);
  host.addAttachment({
    uuid: uploaded.uuid,
    url: uploaded.url,
    filename: uploaded.filename,
    contentType: uploaded.content_type,
  });
  host.setValue(field.uuid, uploaded.uuid, { immediate: true });
}

/**
 * Signature and initials: a button opening the signature dialog; the PNG (or the typed text, which
 * the server renders) is uploaded and its uuid saved.
 */
function mountSignature(
  host: FieldHost,
  field: SigningFormField,
  box: HTMLElement,
  describe: (input: HTMLElement, name?: string) => void,
  onChange: () => void,
): MountedInput {
  const kind = field.type === 'initials' ? 'initials' : 'signature';
  const label = fieldLabel(field);
  const button = h('button', { type: 'button', className: 'field-button signature-button' });
  describe(button);
  const show = () => {
    button.replaceChildren();
    const attachment = host.attachment(String(host.valueOf(field.uuid) ?? ''));
    if (attachment) {
      button.append(h('img', { src: sameOriginUrl(attachment.url), alt: t('field.signed', { name: label }) }));
      button.setAttribute('aria-label', accessibleName(field));
    } else {
      const text = kind === 'initials' ? t('field.initialHere') : t('field.signHere');
      button.append(h('span', {}, text));
      // The name holds the visible words too (WCAG 2.5.3 Label in Name).
      button.setAttribute('aria-label', `${accessibleName(field)}: ${text}`);
    }
  };
  show();
  // Not disabled while uploading: a disabled button would drop the keyboard focus.
  let busy = false;
  button.addEventListener('click', () => {
    if (busy) return;
    host.track(sign());
  });
  // From opening the dialog to the saved value: Complete waits for all of it.
  const sign = async () => {
    // Agreeing to sign electronically comes before the first signature (./consent.ts).
    if (!(await ensureConsent(host.form))) return;
    const made = await openSignatureDialog({
      kind,
      format: field.preferences.format,
      label,
      suggestedText: suggestedText(host, field),
    });
    button.focus();
    if (!made) return;
    busy = true;
    button.setAttribute('aria-busy', 'true');
    try {
      await saveSignature(host, field, made);
      show();
      onChange();
    } catch (error) {
      host.announce('');
      box.dispatchEvent(
        new CustomEvent('field-error', {
          bubbles: true,
          detail: { uuid: field.uuid, message: (error as Error).message },
        }),
      );
    } finally {
      busy = false;
      button.removeAttribute('aria-busy');
    }
  };
  box.append(button);
  return { input: button, sync: show };
}

/** What an image or file field accepts, for a file input's `accept`. */
export function acceptOf(field: SigningFormField): string {
  const accept = field.preferences.accept;
  return field.type === 'image' ? IMAGE_ACCEPT : typeof accept === 'string' ? accept : '';
}

/**
 * Uploads the files chosen for an image (the first) or file field (all) and saves the uuid(s).
 * Files over the server's limit are refused here, before any upload.
 * @throws Error with the message to show at the field (too large, the server's refusal)
 */
export async function uploadFiles(host: FieldHost, field: SigningFormField, files: File[]): Promise<void> {
  const isImage = field.type === 'image';
  const tooLarge = files.find((f) => f.size > MAX_UPLOAD_BYTES);
  if (tooLarge)
    throw new Error(
      t('upload.tooLarge', { file: tooLarge.name, size: Math.round((MAX_UPLOAD_BYTES / 1024 / 1024) * 10) / 10 }),
    );
  host.announce(
    files.length > 1
      ? t('status.uploadingMany', { count: files.length })
      : t('status.uploading', { file: files[0]!.name }),
  );
  const uuids: string[] = [];
  for (const file of files) {
    const uploaded = await uploadAttachment(host.form.slug, file, file.name, isImage ? 'image' : 'file');
    host.addAttachment({
      uuid: uploaded.uuid,
      url: uploaded.url,
      filename: uploaded.filename,
      contentType: uploaded.content_type,
    });
    uuids.push(uploaded.uuid);
  }
  host.setValue(field.uuid, isImage ? uuids[0] : uuids, { immediate: true });
  host.announce(t('status.uploaded'));
}

/** The names (file) or the image (image) an upload field holds, for its button. */
export function fillUploadButton(host: FieldHost, field: SigningFormField, element: HTMLElement): void {
  const isImage = field.type === 'image';
  element.replaceChildren();
  const current = host.valueOf(field.uuid);
  const uuids = Array.isArray(current) ? current.map(String) : current ? [String(current)] : [];
  const attachments = uuids.map((uuid) => host.attachment(uuid)).filter((a): a is SigningFormAttachment => Boolean(a));
  if (isImage && attachments[0]) {
    element.append(h('img', { src: sameOriginUrl(attachments[0].url), alt: '' }));
  } else if (attachments.length) {
    element.append(h('span', {}, attachments.map((a) => a.filename).join(', ')));
  } else {
    element.append(h('span', {}, isImage ? t('field.uploadImage') : t('field.attachFile')));
  }
}

/** Image and file fields: a file chooser; each file is uploaded, the uuid (image) or uuids (file) saved. */
function mountUpload(
  host: FieldHost,
  field: SigningFormField,
  box: HTMLElement,
  describe: (input: HTMLElement, name?: string) => void,
  onChange: () => void,
): MountedInput {
  const isImage = field.type === 'image';
  const label = fieldLabel(field);
  const inputId = uniqueId('upload');
  const input = h('input', { type: 'file', id: inputId, className: 'file-input' });
  input.accept = acceptOf(field);
  input.multiple = !isImage;
  describe(input, isImage ? t('field.imageName', { name: label }) : t('field.filesName', { name: label }));
  const chooser = h('label', { htmlFor: inputId, className: 'field-button upload-button' });
  chooser.setAttribute('aria-hidden', 'true');
  const show = () => fillUploadButton(host, field, chooser);
  show();
  // Not disabled while uploading (that would drop the keyboard focus): later choices wait.
  let busy = false;
  input.addEventListener('change', () => host.track(upload()));
  const upload = async () => {
    const files = [...(input.files ?? [])];
    input.value = '';
    if (files.length === 0) return;
    if (busy) {
      host.announce(t('status.waitForUpload'));
      return;
    }
    busy = true;
    box.setAttribute('aria-busy', 'true');
    try {
      await uploadFiles(host, field, files);
      show();
      onChange();
    } catch (error) {
      host.announce('');
      box.dispatchEvent(
        new CustomEvent('field-error', {
          bubbles: true,
          detail: { uuid: field.uuid, message: (error as Error).message },
        }),
      );
    } finally {
      busy = false;
      box.removeAttribute('aria-busy');
    }
  };
  box.append(input, chooser);
  return { input, sync: show };
}

/** Fills an element with a field's value, read-only: text, a tick, an image, or file links. */
function fillDisplay(host: FieldHost, field: SigningFormField, element: HTMLElement): void {
  element.replaceChildren();
  const value = host.valueOf(field.uuid);
  const label = fieldLabel(field);
  if (['signature', 'initials', 'image', 'stamp'].includes(field.type)) {
    const attachment = typeof value === 'string' ? host.attachment(value) : undefined;
    if (attachment) {
      element.append(h('img', { src: sameOriginUrl(attachment.url), alt: label }));
    } else if (field.type === 'stamp') {
      element.append(h('span', { className: 'placeholder' }, t('field.stampLater')));
    }
    return;
  }
  if (field.type === 'file') {
    const uuids = Array.isArray(value) ? value.map(String) : value ? [String(value)] : [];
    for (const uuid of uuids) {
      const attachment = host.attachment(uuid);
      if (attachment)
        element.append(
          h('a', { href: sameOriginUrl(attachment.url), target: '_blank', rel: 'noopener' }, attachment.filename),
          ' ',
        );
    }
    return;
  }
  if (field.type === 'payment') {
    element.append(h('span', { className: 'placeholder' }, t('field.paymentReadonly')));
    return;
  }
  const text = displayText(field, value);
  const span = h('span', { className: 'value' }, text);
  if (!text && field.type !== 'checkbox') span.classList.add('empty');
  // Screen readers hear the field's name before its value.
  element.append(
    h('span', { className: 'sr-only' }, text ? `${label}: ` : t('field.emptyValue', { name: label })),
    span,
  );
}

/** The input a date field gets by what its format stores: a day, a month, or a local date and time. */
const DATE_INPUT_TYPES: Record<DateKind, string> = { date: 'date', month: 'month', datetime: 'datetime-local' };

/** A stored instant as a `datetime-local` input shows it (the browser's time zone); '' when it is not one. */
function localDateTime(value: string): string {
  const instant = new Date(value);
  if (Number.isNaN(instant.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return (
    `${instant.getFullYear()}-${pad(instant.getMonth() + 1)}-${pad(instant.getDate())}` +
    `T${pad(instant.getHours())}:${pad(instant.getMinutes())}`
  );
}
