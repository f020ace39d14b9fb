/**
 * The signature (or initials) dialog: draw with a mouse, finger or pen (signature_pad), type in
 * the bundled script font, or upload an image. A drawing or an upload becomes a PNG image (a
 * drawing trimmed to its ink); a typed name stays text, which the server renders in the same font
 * (src/documents/typed-signature.ts) and keeps. The caller uploads either (docs/signing-form.md
 * "Uploads").
 *
 * `preferences.format` of the field limits the ways (docuseal-behaviour.md §11): `drawn`,
 * `typed`, `drawn_or_typed`, `upload`; none given offers all three.
 *
 * The same editor sits in a dialog (openSignatureDialog, the document's Sign-here button) and
 * inline, as wide as the screen, in the guided panel (./guide.ts).
 */
import SignaturePad from 'signature_pad';
import { h, uniqueId } from './dom.ts';
import { t } from './i18n.ts';

type Way = 'draw' | 'type' | 'upload';

const INK = '#14245c';
/** Longest side of an uploaded signature image after scaling down, in pixels. */
const MAX_UPLOAD_SIDE = 1600;

export interface SignatureDialogOptions {
  kind: 'signature' | 'initials';
  /** The field's preferences.format. */
  format: unknown;
  /** The field's label, for the dialog's title. */
  label: string;
  /** Suggested text for the Type tab (the signer's name, or its initials). */
  suggestedText: string;
}

function waysFor(format: unknown): Way[] {
  switch (format) {
    case 'drawn':
      return ['draw'];
    case 'typed':
      return ['type'];
    case 'drawn_or_typed':
      return ['draw', 'type'];
    case 'upload':
      return ['upload'];
    default:
      return ['draw', 'type', 'upload'];
  }
}

/** What the signer made: a PNG (drawn or uploaded), or typed text. */
export type SignatureResult = { png: Blob } | { typedText: string };

/** Longest typed signature, in characters (src/limits.ts MAX_LENGTH.typedSignature, checked by the server). */
const TYPED_MAX_LENGTH = 59;

/** The drawing, typing and upload panes of a signature, in a dialog or inline in the guide. */
export interface SignatureEditor {
  /** The tabs, the panes and the error line. */
  element: HTMLElement;
  /** Sizes the drawing pad to its box: call once the element is in the document and shown. */
  start(): void;
  /** Whether the signer has drawn, typed (on the Type tab) or chosen an image. */
  touched(): boolean;
  /** What the signer made, or null with the reason shown beside it (nothing drawn, typed or chosen). */
  result(): Promise<SignatureResult | null>;
  /** Shows a message in the editor's error line. */
  showError(message: string): void;
  /** Stops listening to the pad and frees the upload preview. */
  destroy(): void;
}

/**
 * The editor of a signature or initials: tabs Draw / Type / Upload (as `preferences.format`
 * allows) over a drawing pad as wide as its box (signature_pad), a text input with its script
 * preview, and an image chooser. Tabs follow the WAI-ARIA tabs pattern (arrow keys move).
 */
export function createSignatureEditor(options: SignatureDialogOptions): SignatureEditor {
  const ways = waysFor(options.format);
  const initials = options.kind === 'initials';
  const error = h('p', { className: 'dialog-error', id: uniqueId('signature-error') });
  error.setAttribute('role', 'alert');

  // Draw
  const drawCanvas = h('canvas', { className: 'signature-canvas' });
  drawCanvas.setAttribute('aria-label', initials ? t('signature.drawAreaInitials') : t('signature.drawArea'));
  drawCanvas.setAttribute('role', 'img');
  let pad: SignaturePad | undefined;
  const clearButton = h('button', { type: 'button', className: 'link-button' }, t('signature.clear'));
  clearButton.addEventListener('click', () => pad?.clear());
  const drawPanel = h(
    'div',
    { className: 'signature-panel' },
    h('div', { className: 'signature-canvas-frame' }, drawCanvas),
    h(
      'div',
      { className: 'signature-panel-row' },
      h('span', { className: 'hint' }, initials ? t('signature.drawHintInitials') : t('signature.drawHint')),
      clearButton,
    ),
  );

  // Type
  const typeInputId = uniqueId('typed-signature');
  const typeInput = h('input', {
    type: 'text',
    id: typeInputId,
    className: 'typed-input',
    value: options.suggestedText.slice(0, TYPED_MAX_LENGTH),
    autocomplete: 'name',
    maxLength: TYPED_MAX_LENGTH,
  });
  const typePreview = h('p', { className: 'typed-preview' }, options.suggestedText);
  typePreview.setAttribute('aria-hidden', 'true');
  typeInput.addEventListener('input', () => {
    typePreview.textContent = typeInput.value;
  });
  const typePanel = h(
    'div',
    { className: 'signature-panel' },
    h('label', { htmlFor: typeInputId }, initials ? t('signature.typeInitials') : t('signature.typeName')),
    typeInput,
    typePreview,
  );

  // Upload
  const uploadInputId = uniqueId('upload-signature');
  const uploadInput = h('input', {
    type: 'file',
    id: uploadInputId,
    className: 'signature-file',
    accept: 'image/png,image/jpeg,image/webp,image/gif',
  });
  const uploadPreview = h('img', { className: 'upload-preview', alt: '' });
  uploadPreview.hidden = true;
  uploadInput.addEventListener('change', () => {
    const file = uploadInput.files?.[0];
    if (uploadPreview.src) URL.revokeObjectURL(uploadPreview.src);
    uploadPreview.hidden = !file;
    if (file) uploadPreview.src = URL.createObjectURL(file);
  });
  const uploadPanel = h(
    'div',
    { className: 'signature-panel' },
    h('label', { htmlFor: uploadInputId }, initials ? t('signature.uploadInitials') : t('signature.uploadSignature')),
    uploadInput,
    uploadPreview,
  );

  const panels: Record<Way, HTMLElement> = { draw: drawPanel, type: typePanel, upload: uploadPanel };
  const wayLabels: Record<Way, string> = {
    draw: t('signature.draw'),
    type: t('signature.type'),
    upload: t('signature.upload'),
  };
  let active: Way = ways[0]!;
  let started = false;
  const tabs = h('div', { className: 'tabs' });
  tabs.setAttribute('role', 'tablist');
  tabs.setAttribute('aria-label', initials ? t('signature.waysInitials') : t('signature.ways'));
  const tabButtons = new Map<Way, HTMLButtonElement>();
  const select = (way: Way, focus = false) => {
    active = way;
    error.textContent = '';
    for (const [w, button] of tabButtons) {
      button.setAttribute('aria-selected', String(w === way));
      button.tabIndex = w === way ? 0 : -1;
      panels[w].hidden = w !== way;
    }
    if (focus) tabButtons.get(way)?.focus();
    if (way === 'draw' && started) setUpPad();
    if (way === 'type' && started) typeInput.focus();
  };
  for (const way of ways) {
    const panelId = uniqueId(`panel-${way}`);
    const button = h('button', { type: 'button', className: 'tab', id: uniqueId(`tab-${way}`) }, wayLabels[way]);
    button.setAttribute('role', 'tab');
    button.setAttribute('aria-controls', panelId);
    button.addEventListener('click', () => select(way));
    button.addEventListener('keydown', (event) => {
      const index = ways.indexOf(way);
      // In a right-to-left page the next tab is to the left.
      const forward = document.dir === 'rtl' ? 'ArrowLeft' : 'ArrowRight';
      const backward = document.dir === 'rtl' ? 'ArrowRight' : 'ArrowLeft';
      if (event.key === forward) select(ways[(index + 1) % ways.length]!, true);
      if (event.key === backward) select(ways[(index + ways.length - 1) % ways.length]!, true);
    });
    panels[way].id = panelId;
    panels[way].setAttribute('role', 'tabpanel');
    panels[way].setAttribute('aria-labelledby', button.id);
    tabButtons.set(way, button);
    tabs.append(button);
  }
  for (const way of ways) panels[way].hidden = way !== active;

  const element = h(
    'div',
    { className: 'signature-editor' },
    ways.length > 1 ? tabs : null,
    ...ways.map((w) => panels[w]),
    error,
  );

  function setUpPad() {
    if (pad) return;
    // The canvas is measured once shown: its bitmap matches its CSS size times the pixel ratio.
    const ratio = Math.max(window.devicePixelRatio || 1, 1);
    drawCanvas.width = Math.round(drawCanvas.clientWidth * ratio);
    drawCanvas.height = Math.round(drawCanvas.clientHeight * ratio);
    drawCanvas.getContext('2d')!.scale(ratio, ratio);
    pad = new SignaturePad(drawCanvas, { penColor: INK, minWidth: 1, maxWidth: 3 });
  }

  const firstThing = () => (initials ? t('signature.drawInitialsFirst') : t('signature.drawFirst'));

  return {
    element,
    start() {
      started = true;
      select(active);
    },
    touched() {
      if (active === 'draw') return Boolean(pad && !pad.isEmpty());
      if (active === 'type') return typeInput.value.trim() !== '';
      return Boolean(uploadInput.files?.[0]);
    },
    showError(message) {
      error.textContent = message;
    },
    destroy() {
      pad?.off();
      if (uploadPreview.src) URL.revokeObjectURL(uploadPreview.src);
    },
    async result() {
      error.textContent = '';
      if (active === 'draw') {
        if (!pad || pad.isEmpty()) {
          error.textContent = firstThing();
          return null;
        }
        return { png: await canvasToPng(trimToInk(drawCanvas)) };
      }
      if (active === 'type') {
        const text = typeInput.value.trim();
        if (!text) {
          error.textContent = initials ? t('signature.typeInitialsFirst') : t('signature.typeNameFirst');
          typeInput.focus();
          return null;
        }
        return { typedText: text };
      }
      const file = uploadInput.files?.[0];
      if (!file) {
        error.textContent = t('signature.chooseImageFirst');
        return null;
      }
      let bitmap: ImageBitmap;
      try {
        bitmap = await createImageBitmap(file);
      } catch {
        error.textContent = t('signature.notAnImage');
        return null;
      }
      const scale = Math.min(1, MAX_UPLOAD_SIDE / Math.max(bitmap.width, bitmap.height));
      const canvas = h('canvas');
      canvas.width = Math.max(1, Math.round(bitmap.width * scale));
      canvas.height = Math.max(1, Math.round(bitmap.height * scale));
      canvas.getContext('2d')!.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
      bitmap.close();
      return { png: await canvasToPng(canvas) };
    },
  };
}

/**
 * Shows the editor in a modal dialog with Cancel and Apply; resolves to the result, or null when
 * the signer cancels.
 */
export function openSignatureDialog(options: SignatureDialogOptions): Promise<SignatureResult | null> {
  const titleId = uniqueId('signature-title');
  const dialog = h('dialog', { className: 'dialog signature-dialog' });
  dialog.setAttribute('aria-labelledby', titleId);
  const editor = createSignatureEditor(options);
  const cancel = h('button', { type: 'button', className: 'button' }, t('dialog.cancel'));
  const apply = h(
    'button',
    { type: 'submit', className: 'button primary' },
    options.kind === 'initials' ? t('signature.applyInitials') : t('signature.applySignature'),
  );
  const form = h(
    'form',
    { method: 'dialog' },
    h('h2', { id: titleId }, options.label),
    editor.element,
    h('div', { className: 'dialog-actions' }, cancel, apply),
  );
  dialog.append(form);
  document.body.append(dialog);

  return new Promise((resolve) => {
    let result: SignatureResult | null = null;
    dialog.addEventListener('close', () => {
      editor.destroy();
      dialog.remove();
      resolve(result);
    });
    cancel.addEventListener('click', () => dialog.close());
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void (async () => {
        apply.disabled = true;
        try {
          const made = await editor.result();
          if (!made) return;
          result = made;
          dialog.close();
        } catch (e) {
          editor.showError(e instanceof Error ? e.message : String(e));
        } finally {
          apply.disabled = false;
        }
      })();
    });
    dialog.showModal();
    editor.start();
  });
}

/** A copy of the canvas cropped to its painted pixels plus a small margin (whole canvas if blank). */
function trimToInk(source: HTMLCanvasElement): HTMLCanvasElement {
  const { width, height } = source;
  const pixels = source.getContext('2d')!.getImageData(0, 0, width, height).data;
  let top = height;
  let left = width;
  let right = -1;
  let bottom = -1;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (pixels[(y * width + x) * 4 + 3]! > 0) {
        if (x < left) left = x;
        if (x > right) right = x;
        if (y < top) top = y;
        bottom = y;
      }
    }
  }
  if (right < 0) return source;
  const margin = Math.round(Math.min(width, height) * 0.03);
  left = Math.max(0, left - margin);
  top = Math.max(0, top - margin);
  right = Math.min(width - 1, right + margin);
  bottom = Math.min(height - 1, bottom + margin);
  const trimmed = h('canvas');
  trimmed.width = right - left + 1;
  trimmed.height = bottom - top + 1;
  trimmed
    .getContext('2d')!
    .drawImage(source, left, top, trimmed.width, trimmed.height, 0, 0, trimmed.width, trimmed.height);
  return trimmed;
}

function canvasToPng(canvas: HTMLCanvasElement): Promise<Blob> {
  return new Promise((resolve, reject) => {
    canvas.toBlob((blob) => (blob ? resolve(blob) : reject(new Error(t('signature.imageFailed')))), 'image/png');
  });
}
