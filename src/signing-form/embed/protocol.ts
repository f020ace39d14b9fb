/**
 * What the embedded signing form (`<signet-form>`, ./form.ts, on the host site) and the signing
 * page in its frame (../page/, on Signet) tell each other (docs/embedding.md):
 *
 * - element → page: the element's attributes, as EmbedOptions, in the frame URL's fragment
 *   (`#signet-embed=<JSON>`). A fragment is never sent to a server, so the signer's email and
 *   prefilled values stay out of logs; the page reads it once it runs.
 * - page → element: `postMessage` of an EmbedMessage for each event (`init`, `load`, `completed`,
 *   `declined`), which the element dispatches on itself as a CustomEvent with the same `detail`.
 *   A page in a plain `<iframe>` posts the same messages to its parent.
 *
 * Everything read here comes from another party (a URL anyone can edit, a message any frame can
 * post): readEmbedOptions keeps only keys of the expected kinds and sizes, isEmbedMessage only the
 * expected shape; the server checks again whatever it is sent.
 */

/** `source` of every message the page posts, so hosts can tell them from others. */
export const MESSAGE_SOURCE = 'signet-form';

/** The fragment key the element passes its options under. */
export const FRAGMENT_KEY = 'signet-embed';

/** The events, as DocuSeal's `<docuseal-form>` names them. */
export const EMBED_EVENTS = ['init', 'load', 'completed', 'declined'] as const;
export type EmbedEventType = (typeof EMBED_EVENTS)[number];

/** A message from the page to the host. `detail`: null for `init`, the submitter (webhook `data` shape) otherwise. */
export interface EmbedMessage {
  source: typeof MESSAGE_SOURCE;
  type: EmbedEventType;
  detail: unknown;
  /**
   * `completed` in a `<signet-form>`: where the signer goes next (completed_redirect_url, http or
   * https). The element takes the whole page there, as DocuSeal's embedded form does, unless a
   * listener cancels the event; the page in the frame stays.
   */
  redirect_url?: string;
}

/** The element's attributes the page and the template link act on, in DocuSeal's keys. */
export interface EmbedOptions {
  /** The host page's origin, where the page posts its events (checked against EMBED_ORIGINS). */
  origin?: string;
  /** Template links: who signs (data-email, data-name, data-role, data-external-id). */
  email?: string;
  name?: string;
  role?: string;
  external_id?: string;
  /** Template links: stored with the signer (data-metadata). */
  metadata?: Record<string, unknown>;
  /** Template links: the signer's copy of the signed documents (data-send-copy-email, default true). */
  send_copy_email?: boolean;
  /** Template links: where the page goes after completing (data-completed-redirect-url). */
  completed_redirect_url?: string;
  /** Values by field name or uuid (data-values): stored on a template link; prefilled by the page on a signer's. */
  values?: Record<string, unknown>;
  /** Field names (data-readonly-fields): stored on a template link; locked by the page on a signer's link. */
  readonly_fields?: string[];
  /** Open at the first field still to fill (data-go-to-last); unset: the form's own rule. */
  go_to_last?: boolean;
  /** Show the Decline button (data-with-decline; DocuSeal's default: false). */
  with_decline?: boolean;
  /** Show the document title (data-with-title; default true). */
  with_title?: boolean;
  /** Set by the template link's page when it goes on to the signer's form (its `init` was posted already). */
  started?: boolean;
}

/** Longest fragment read, in characters: values are bounded again by the server. */
const MAX_FRAGMENT = 200_000;

const STRINGS = ['origin', 'email', 'name', 'role', 'external_id', 'completed_redirect_url'] as const;
const BOOLEANS = ['send_copy_email', 'go_to_last', 'with_decline', 'with_title', 'started'] as const;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The options in a URL fragment (`location.hash`), keeping only well-typed keys; `{}` when there
 * are none or they do not parse.
 */
export function readEmbedOptions(hash: string): EmbedOptions {
  const raw = new URLSearchParams(hash.replace(/^#/, '')).get(FRAGMENT_KEY);
  if (!raw || raw.length > MAX_FRAGMENT) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return {};
  }
  if (!isObject(parsed)) return {};
  const options: EmbedOptions = {};
  for (const key of STRINGS) if (typeof parsed[key] === 'string') options[key] = parsed[key];
  for (const key of BOOLEANS) if (typeof parsed[key] === 'boolean') options[key] = parsed[key];
  if (isObject(parsed.values)) options.values = parsed.values;
  if (isObject(parsed.metadata)) options.metadata = parsed.metadata;
  if (Array.isArray(parsed.readonly_fields))
    options.readonly_fields = parsed.readonly_fields.filter((name): name is string => typeof name === 'string');
  return options;
}

/** The fragment (with `#`) carrying `options`. */
export function embedFragment(options: EmbedOptions): string {
  return `#${new URLSearchParams({ [FRAGMENT_KEY]: JSON.stringify(options) })}`;
}

/** Whether a posted message is one of the page's. */
export function isEmbedMessage(data: unknown): data is EmbedMessage {
  return (
    isObject(data) &&
    data.source === MESSAGE_SOURCE &&
    typeof data.type === 'string' &&
    (EMBED_EVENTS as readonly string[]).includes(data.type)
  );
}
