/**
 * The page in a frame (docs/embedding.md): the embedded form's options from the URL fragment
 * (../embed/protocol.ts), and the events posted to the page that frames it.
 *
 * Where events go: a message carries the signer's data, so it is posted only to origins allowed to
 * frame the form. The server lists them in `data-embed-origins` (EMBED_ORIGINS, `*` for any). The
 * element says which origin it is on (`origin`); when that one is allowed, it alone is the target,
 * so the browser delivers the message only if the frame's parent really is that origin. A plain
 * `<iframe>` says nothing: the message is posted to each allowed origin (the browser delivers it to
 * the one that matches the parent, if any), or to any (`*`) when any site may frame the form — the
 * same data its slug already gives whoever has the link.
 */
import {
  type EmbedEventType,
  type EmbedMessage,
  type EmbedOptions,
  MESSAGE_SOURCE,
  readEmbedOptions,
} from '../embed/protocol.ts';

/** Whether the page runs in a frame (then it posts its events). */
export const framed = window.parent !== window;

/** The embedded form's options (empty outside a `<signet-form>`). */
export const embedOptions: EmbedOptions = readEmbedOptions(window.location.hash);

/** An origin as browsers write it, else undefined. */
function asOrigin(value: string | undefined): string | undefined {
  if (!value) return undefined;
  try {
    const url = new URL(value);
    return /^https?:$/.test(url.protocol) && url.origin === value ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The targets of postMessage (module comment). */
function hostTargets(root: HTMLElement): string[] {
  const allowed = (root.dataset.embedOrigins ?? '*').split(' ').filter(Boolean);
  const any = allowed.length === 0 || allowed.includes('*');
  const claimed = asOrigin(embedOptions.origin);
  if (claimed && (any || allowed.includes(claimed))) return [claimed];
  return any ? ['*'] : allowed;
}

/** Whether a `<signet-form>` frames the page (it names its origin); a plain iframe does not. */
export const inEmbeddedForm = framed && asOrigin(embedOptions.origin) !== undefined;

/**
 * Posts an event to the page that frames this one (nothing when not framed).
 * @param detail null for `init`; the form's `eventDetail` (the submitter, webhook `data` shape) otherwise
 * @param redirectUrl `completed` in a `<signet-form>`: where the element takes the page (../embed/protocol.ts)
 */
export function postToHost(root: HTMLElement, type: EmbedEventType, detail: unknown, redirectUrl?: string): void {
  if (!framed) return;
  const message: EmbedMessage = {
    source: MESSAGE_SOURCE,
    type,
    detail,
    ...(redirectUrl ? { redirect_url: redirectUrl } : {}),
  };
  for (const target of hostTargets(root)) window.parent.postMessage(message, target);
}
