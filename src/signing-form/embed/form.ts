/**
 * The embedded signing form, served as `/js/form.js` (docs/embedding.md): a custom element other
 * sites put in their pages,
 *
 *   <script src="https://signet.example.com/js/form.js"></script>
 *   <signet-form data-src="https://signet.example.com/s/{slug}"></signet-form>
 *
 * also defined as `<docuseal-form>` (unless the page has one already), with DocuSeal's attributes,
 * so DocuSeal's snippets and its React/Vue wrappers (given Signet's host) work unchanged. The
 * element shows Signet's signing page in a frame: `data-src` is a signer's link (`/s/{slug}`) or
 * a shared template's (`/d/{slug}`); the other attributes travel to the page in the frame URL's
 * fragment (./protocol.ts). The page posts its events to this page's origin; the element checks
 * that each comes from its own frame and from `data-src`'s origin, and dispatches it on itself as
 * DocuSeal's `<docuseal-form>` does: `init`, `load`, `completed`, `declined` CustomEvents whose
 * `detail` is the submitter (for `load`, `completed`, `declined`: the form.* webhooks' `data`).
 *
 * DocuSeal's embed draws the form into the host page itself; Signet's runs in a frame so that the
 * form keeps its own origin, Content-Security-Policy and slug-only access. No library: it is one
 * element, and the host page loads nothing but this script.
 */
import { type EmbedOptions, embedFragment, isEmbedMessage } from './protocol.ts';

/** A signer's or a template's link, under whatever path Signet is served at. */
const LINK_PATH = /\/(s|d)\/[A-Za-z0-9_-]+\/?$/;

/** DocuSeal's booleans arrive as "true"/"false" (its React wrapper), or as a bare attribute. */
function booleanAttribute(element: HTMLElement, name: string): boolean | undefined {
  const value = element.getAttribute(name);
  if (value === null) return undefined;
  return value === '' || value.toLowerCase() === 'true';
}

/** A non-empty string attribute, else undefined. */
function stringAttribute(element: HTMLElement, name: string): string | undefined {
  const value = element.getAttribute(name)?.trim();
  return value ? value : undefined;
}

/** A JSON object attribute (data-values, data-metadata); `{}` or a bad one (said on the console) is left out. */
function objectAttribute(element: HTMLElement, name: string): Record<string, unknown> | undefined {
  const raw = stringAttribute(element, name);
  if (!raw) return undefined;
  try {
    const value: unknown = JSON.parse(raw);
    if (typeof value === 'object' && value !== null && !Array.isArray(value))
      return Object.keys(value).length > 0 ? (value as Record<string, unknown>) : undefined;
  } catch {
    // Said below.
  }
  console.error(`signet-form: ${name} is not a JSON object; ignored.`);
  return undefined;
}

/** The element's attributes as the page and the template link take them (./protocol.ts EmbedOptions). */
function optionsOf(element: HTMLElement): EmbedOptions {
  const options: EmbedOptions = { origin: window.location.origin };
  const strings = {
    email: 'data-email',
    name: 'data-name',
    role: 'data-role',
    external_id: 'data-external-id',
    completed_redirect_url: 'data-completed-redirect-url',
  } as const;
  for (const [key, attribute] of Object.entries(strings)) {
    const value = stringAttribute(element, attribute);
    if (value !== undefined) options[key as keyof typeof strings] = value;
  }
  // DocuSeal's earlier names of two of them.
  options.role ??= stringAttribute(element, 'data-submitter');
  options.external_id ??= stringAttribute(element, 'data-application-key');
  const booleans = {
    send_copy_email: 'data-send-copy-email',
    go_to_last: 'data-go-to-last',
    with_decline: 'data-with-decline',
    with_title: 'data-with-title',
  } as const;
  for (const [key, attribute] of Object.entries(booleans)) {
    const value = booleanAttribute(element, attribute);
    if (value !== undefined) options[key as keyof typeof booleans] = value;
  }
  // DocuSeal's default: the embedded form has no Decline button unless asked for.
  options.with_decline ??= false;
  const values = objectAttribute(element, 'data-values');
  if (values) options.values = values;
  const metadata = objectAttribute(element, 'data-metadata');
  if (metadata) options.metadata = metadata;
  const readonly = stringAttribute(element, 'data-readonly-fields')
    ?.split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  if (readonly?.length) options.readonly_fields = readonly;
  return options;
}

/** A logo address the element may show (data-logo): http(s) or an inline image. */
function logoUrl(element: HTMLElement): string | undefined {
  const raw = stringAttribute(element, 'data-logo');
  if (!raw) return undefined;
  try {
    const url = new URL(raw, document.baseURI);
    if (url.protocol === 'https:' || url.protocol === 'http:' || /^data:image\//.test(raw)) return url.href;
  } catch {
    // Not a URL: no logo.
  }
  return undefined;
}

/** The frame's least height, in CSS px: below it the form is too cramped to fill in. */
const MIN_HEIGHT = 480;

/**
 * The element's height: what is left of the window below the element's top once the content below
 * it is counted (`--signet-form-fit`, set by SignetFormElement#fit), so the page around it does
 * not scroll and the form's own action bar (Decline, Complete), at the bottom of its frame, is on
 * screen; 100vh when less than MIN_HEIGHT is left (the host page scrolls to the form, which then
 * fills the window). A height the host page sets on the element wins over both (outer styles beat
 * `:host`).
 */
const STYLE = `
  :host { display: flex; flex-direction: column; height: var(--signet-form-fit, 100vh); min-height: ${MIN_HEIGHT}px; }
  :host([hidden]) { display: none; }
  .logo { display: block; max-height: 48px; max-width: 60%; margin: 8px auto; object-fit: contain; }
  iframe { flex: 1 1 auto; width: 100%; min-height: 0; border: 0; }
`;

/**
 * `<signet-form>`: renders on connection and again when an attribute changes; listens for its
 * frame's messages while connected.
 */
export class SignetFormElement extends HTMLElement {
  #frame: HTMLIFrameElement | undefined;
  /** The origin of `data-src`: messages from anywhere else are ignored. */
  #origin: string | undefined;
  #queued = false;
  /** What was last rendered (the frame's address and the logo): the same again is not rendered again. */
  #rendered: string | undefined;

  readonly #onMessage = (event: MessageEvent): void => {
    if (!this.#frame || event.source !== this.#frame.contentWindow || event.origin !== this.#origin) return;
    if (!isEmbedMessage(event.data)) return;
    const { type, detail, redirect_url: redirect } = event.data;
    const proceed = this.dispatchEvent(new CustomEvent(type, { detail: detail ?? null, cancelable: true }));
    // completed_redirect_url: the whole page goes, as with DocuSeal's embedded form, unless a listener
    // called preventDefault(). Only http(s) addresses.
    if (type === 'completed' && proceed && typeof redirect === 'string' && /^https?:\/\//i.test(redirect))
      window.location.assign(redirect);
  };

  /** Watches the host page's layout: the room left for the element changes with it. */
  #layout: ResizeObserver | undefined;

  /**
   * Sizes the element to the window (see STYLE): window height − the element's top in the page −
   * the page's content below the element, in CSS px; unset when that is under MIN_HEIGHT.
   */
  readonly #fit = (): void => {
    if (!this.isConnected) return;
    // Measured at 100vh, so the page is at least as tall as the window and scrollHeight is the
    // content's (not the window's) bottom; set again in the same task, so nothing is painted between.
    this.style.removeProperty('--signet-form-fit');
    const box = this.getBoundingClientRect();
    const top = box.top + window.scrollY;
    const below = Math.max(0, document.documentElement.scrollHeight - (box.bottom + window.scrollY));
    const room = Math.floor(document.documentElement.clientHeight - top - below);
    const value = room >= MIN_HEIGHT ? `${room}px` : '';
    if (value) this.style.setProperty('--signet-form-fit', value);
  };

  connectedCallback(): void {
    window.addEventListener('message', this.#onMessage);
    window.addEventListener('resize', this.#fit);
    this.#render();
    // Content above or below may change size (images, fonts, the host's own script); our own size
    // change comes back here once and then leaves the value as it is.
    this.#layout = new ResizeObserver(this.#fit);
    this.#layout.observe(document.body ?? document.documentElement);
    this.#fit();
  }

  disconnectedCallback(): void {
    window.removeEventListener('message', this.#onMessage);
    window.removeEventListener('resize', this.#fit);
    this.#layout?.disconnect();
    this.#layout = undefined;
  }

  attributeChangedCallback(): void {
    // Frameworks set several attributes in a row: render once, after them.
    if (!this.isConnected || this.#queued) return;
    this.#queued = true;
    queueMicrotask(() => {
      this.#queued = false;
      if (this.isConnected) this.#render();
    });
  }

  static get observedAttributes(): string[] {
    return [
      'data-src',
      'data-email',
      'data-name',
      'data-role',
      'data-external-id',
      'data-values',
      'data-readonly-fields',
      'data-metadata',
      'data-send-copy-email',
      'data-go-to-last',
      'data-with-decline',
      'data-with-title',
      'data-completed-redirect-url',
      'data-logo',
      'data-language',
    ];
  }

  #render(): void {
    const root = this.shadowRoot ?? this.attachShadow({ mode: 'open' });
    const src = stringAttribute(this, 'data-src');
    let url: URL | undefined;
    try {
      url = src ? new URL(src, document.baseURI) : undefined;
    } catch {
      url = undefined;
    }
    if (!url || !/^https?:$/.test(url.protocol) || !LINK_PATH.test(url.pathname)) {
      if (src) console.error(`signet-form: data-src must be a signing link (…/s/{slug} or …/d/{slug}): ${src}`);
      root.replaceChildren();
      this.#frame = undefined;
      this.#rendered = undefined;
      return;
    }
    // DocuSeal's data-language: the page's `?lang=`, before every other source of the signer's
    // language (src/i18n/signer-language.ts).
    const language = stringAttribute(this, 'data-language');
    if (language) url.searchParams.set('lang', language);
    else url.searchParams.delete('lang');
    url.hash = embedFragment(optionsOf(this));
    const logo = logoUrl(this);
    const rendered = JSON.stringify([url.href, logo]);
    if (rendered === this.#rendered) return;
    this.#rendered = rendered;
    this.#origin = url.origin;
    const style = document.createElement('style');
    style.textContent = STYLE;
    const frame = document.createElement('iframe');
    frame.title = stringAttribute(this, 'title') ?? 'Signing form';
    frame.src = url.href;
    const parts: Node[] = [style];
    if (logo) {
      const image = document.createElement('img');
      image.className = 'logo';
      image.alt = '';
      image.src = logo;
      parts.push(image);
    }
    parts.push(frame);
    this.#frame = frame;
    root.replaceChildren(...parts);
  }
}

/** The same element under DocuSeal's name, for pages and wrappers written for DocuSeal. */
class DocusealFormElement extends SignetFormElement {}

if (!customElements.get('signet-form')) customElements.define('signet-form', SignetFormElement);
if (!customElements.get('docuseal-form')) customElements.define('docuseal-form', DocusealFormElement);
