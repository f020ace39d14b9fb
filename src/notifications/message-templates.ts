/**
 * Signature-request messages: DocuSeal's email variables, its default subject and body, and the
 * SMS text (docuseal-behaviour.md §7.4; wording from DocuSeal's English locale), in the signer's
 * language (issue 24): the fixed texts are the `email` and `sms` namespaces of
 * src/i18n/locales/<code>.json, filled with DocuSeal variables (`{submission.name}`, …) that are
 * then replaced as in a sender's own text. A subject or body given through the API is used as
 * given, in whatever language it is written. The HTML says its language and direction
 * (`<html lang="ar" dir="rtl">`); a body given through the API gets the direction of its first
 * strong character, as `dir="auto"` would (src/i18n/bidi.ts).
 *
 * Variables are written `{{name}}` or `{name}` (any number of braces), case-insensitively. A known
 * variable without a value becomes empty; anything else in braces stays as written, as DocuSeal's
 * ReplaceEmailVariables does. Values are inserted in one pass, so a value that itself looks like
 * `{{…}}` (a signer named "{{account.name}}") is not expanded again, and in HTML it is escaped.
 */

import { firstStrongDirection } from '../i18n/bidi.ts';
import { DEFAULT_LANGUAGE, directionOf, type LanguageCode } from '../i18n/languages.ts';
import { translator } from '../i18n/messages.ts';

/** A party of the submission as the variables see it. */
export interface MessageSubmitter {
  id?: number;
  slug?: string;
  email?: string | null;
  name?: string | null;
  phone?: string | null;
  /**
   * The party's field values keyed by field name, for `{{submitter.<field name>}}` and
   * `{{submitters[N].<field name>}}`; image-like values (signature, image, file…) as URLs.
   */
  values?: Record<string, unknown>;
}

/** What the variables of §7.4 are filled from. */
export interface MessageVariables {
  account: { name: string };
  template: { id: number; name: string };
  submission: {
    id: number;
    /** `{{submission.name}}`; the template name when empty. */
    name?: string | null;
    /** `{{submission.link}}`: the submission's page for the sender. */
    link?: string | null;
    /** `{{submission.expire_at}}`, printed as DocuSeal's short form ("21 Nov 14:05") in `timeZone`. */
    expireAt?: Date | null;
    /** Every party in the submission's role order: `{{submitters}}`, `{{submitters[N].…}}` (N from 1). */
    submitters?: MessageSubmitter[];
  };
  /** The party the message goes to; `link` is its signing URL (`{APP_URL}/s/{slug}`). */
  submitter: MessageSubmitter & { id: number; slug: string; link: string };
  /** The user who created the submission: `{{sender.name}}`, `{{sender.first_name}}`, `{{sender.email}}`. */
  sender?: { firstName?: string | null; lastName?: string | null; email?: string | null } | null;
  /** `{{documents.link}}` / `{{documents.links}}`: where the signed documents can be seen. */
  documentsLink?: string | null;
  /** IANA time zone for dates (default UTC). */
  timeZone?: string;
}

/** Which request this is; it picks DocuSeal's default subject and body. */
export type RequestPurpose = 'sign' | 'submit' | 'view';

/**
 * The DocuSeal variables the fixed texts' placeholders stand for (`{{name}}` in a message is the
 * submission's name, …): each text is filled with them, then rendered as a sender's text is.
 */
const MESSAGE_VARIABLES = {
  name: '{submission.name}',
  template: '{template.name}',
  parties: '{submission.submitters}',
  account: '{account.name}',
  link: '{submitter.link}',
  id: '{submission.id}',
  party: '{submitter.name}',
} as const;

/** A fixed text of the `email` namespace in `language`, its placeholders as DocuSeal variables. */
export function emailText(language: LanguageCode, key: string, values: Record<string, unknown> = {}): string {
  return translator(language, 'email')(key, { ...MESSAGE_VARIABLES, ...values });
}

/**
 * DocuSeal's default subjects (§7.4) in `language`: signature fields → sign ("You are invited to
 * sign a document"); none → submit; view-only party → view.
 */
export function requestSubject(purpose: RequestPurpose, language: LanguageCode = DEFAULT_LANGUAGE): string {
  return emailText(language, `request_subject_${purpose}`);
}

/**
 * Default bodies in `language`, in the restricted Markdown of §7.4: greeting, the invitation
 * naming the submission (`{submission.name}`: its name, else its template's, as DocuSeal's
 * invitation views do: `submission.name || submission.template.name`), the signing link as a
 * button, the invitation to reply, the sign-off with the account's name. `sign` and `submit` are
 * DocuSeal's English text; DocuSeal's locale has no view-only body, so `view` is ours.
 */
export function requestBody(purpose: RequestPurpose, language: LanguageCode = DEFAULT_LANGUAGE): string {
  return [
    emailText(language, 'greeting'),
    emailText(language, `request_body_${purpose}`),
    `[${emailText(language, `request_button_${purpose}`)}]({submitter.link})`,
    emailText(language, 'contact'),
    emailText(language, 'sign_off'),
  ].join('\n\n');
}

/** DocuSeal's request SMS in `language`: "{account.name} has invited you to sign a document: {submitter.link}". */
export function requestSmsBody(language: LanguageCode = DEFAULT_LANGUAGE): string {
  return translator(language, 'sms')('request', { ...MESSAGE_VARIABLES });
}

/** One or more braces around anything without braces: DocuSeal's `\{+name\}+`. */
const VARIABLE = /\{+([^{}]+)\}+/g;
/** Private-use characters that stand for values while the body is turned into HTML. */
const VALUE_OPEN = '\uE000';
const VALUE_CLOSE = '\uE001';
const PIECE_OPEN = '\uE002';
const PIECE_CLOSE = '\uE003';
const PRIVATE_USE = /[\uE000-\uE003]/g;

/**
 * Replaces the §7.4 variables in a subject, SMS or plain-text body.
 * @param text the text as the sender wrote it
 * @returns the text with each known variable replaced by its value ('' when it has none) and
 *   every other `{…}` left as written
 */
export function renderTemplateText(text: string, variables: MessageVariables): string {
  return text.replace(VARIABLE, (match, key: string) => resolveVariable(key, variables) ?? match);
}

/**
 * The value of one variable (the text between the braces), '' for a known variable without a
 * value, undefined for an unknown name. Names follow DocuSeal's lib/replace_email_variables.rb.
 */
export function resolveVariable(key: string, v: MessageVariables): string | undefined {
  const lower = key.toLowerCase();
  const submission = v.submission;
  const submitter = v.submitter;
  switch (lower) {
    case 'template.name':
      return v.template.name;
    case 'template.id':
      return String(v.template.id);
    case 'submission.name':
      return submission.name || v.template.name;
    case 'submission.id':
      return String(submission.id);
    case 'submission.link':
      return submission.link ?? '';
    case 'submission.expire_at':
      return submission.expireAt ? formatShortDate(submission.expireAt, v.timeZone) : '';
    case 'submitters':
    case 'submission.submitters':
      return [...new Set((submission.submitters ?? [submitter]).map(displayName).filter(Boolean))].join(', ');
    case 'submitter.link':
      return submitter.link;
    case 'submitter.email':
      return submitter.email ?? '';
    case 'submitter.name':
      return displayName(submitter);
    case 'submitter.first_name':
      return firstName(submitter.name);
    case 'submitter.id':
      return String(submitter.id);
    case 'submitter.slug':
      return submitter.slug;
    case 'account.name':
      return v.account.name;
    case 'sender.name':
      return [v.sender?.firstName, v.sender?.lastName].filter(Boolean).join(' ');
    case 'sender.first_name':
      return v.sender?.firstName ?? '';
    case 'sender.email':
      // DocuSeal drops a "+tag" from the sender's address.
      return (v.sender?.email ?? '').replace(/\+\w+@/, '@');
    case 'documents.link':
    case 'documents.links':
      return v.documentsLink ?? '';
  }
  const indexed = /^submitters\[(\d+)\]\.(.+)$/i.exec(key);
  if (indexed) {
    const party = submission.submitters?.[Number(indexed[1]) - 1];
    return party ? partyAttribute(party, indexed[2]) : '';
  }
  const own = /^submitter\.(.+)$/i.exec(key);
  if (own) return fieldValue(submitter, own[1].trim());
  return undefined;
}

function partyAttribute(party: MessageSubmitter, attribute: string): string {
  switch (attribute.toLowerCase()) {
    case 'email':
      return party.email ?? '';
    case 'name':
      return party.name ?? '';
    case 'first_name':
      return firstName(party.name);
  }
  return fieldValue(party, attribute.trim());
}

function fieldValue(party: MessageSubmitter, fieldName: string): string {
  const value = party.values?.[fieldName];
  if (value === undefined || value === null) return '';
  if (Array.isArray(value)) return value.map(String).join(', ');
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** DocuSeal's `name || email || phone`. */
function displayName(party: MessageSubmitter): string {
  return party.name || party.email || party.phone || '';
}

function firstName(name: string | null | undefined): string {
  return name?.trim().split(/\s+/, 1)[0] ?? '';
}

/** Rails' `:short` time format, "%d %b %H:%M" ("05 Nov 14:05"), in the given zone. */
function formatShortDate(date: Date, timeZone = 'UTC'): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      day: '2-digit',
      month: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    })
      .formatToParts(date)
      .map((part) => [part.type, part.value]),
  );
  return `${parts.day} ${parts.month} ${parts.hour}:${parts.minute}`;
}

/** A rendered email: subject, text/plain and text/html. */
export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

/**
 * The signature-request email for one party (§7.4).
 * - Subject: the message's subject with variables; a message with a body but a blank subject gets
 *   "You are invited to sign a document" (DocuSeal's EmailMessages); no message → the default for
 *   `purpose`. Defaults are in `language` (default English); a given subject or body is kept as given.
 * - Body: the message's body with variables, else the default body for `purpose` (which holds
 *   the signing link). A custom body is NOT given the link when it lacks `{{submitter.link}}`:
 *   DocuSeal appends it only to submissions made in its UI, never to API ones (§7.4, §14.10).
 *   `appendLinkIfMissing` is that UI behaviour, for callers that need it; it also holds back when
 *   the body has `{{submitter.id}}`, `{{submission.link}}` or `{{template.id}}`, as DocuSeal does.
 * - The body is restricted Markdown (paragraphs, line breaks, `[label](url)`, `**bold**`,
 *   `*italic*`/`_italic_`, bare URLs linked); text/plain shows a link as "label: url".
 */
export function buildSignatureRequestEmail(options: {
  variables: MessageVariables;
  message?: { subject?: string | null; body?: string | null } | null;
  purpose?: RequestPurpose;
  appendLinkIfMissing?: boolean;
  /** The signer's language (src/i18n/signer-language.ts) for the default texts; default English. */
  language?: LanguageCode;
}): RenderedEmail {
  const purpose = options.purpose ?? 'sign';
  const language = options.language ?? DEFAULT_LANGUAGE;
  const customSubject = options.message?.subject?.trim();
  const customBody = options.message?.body?.trim() ? options.message.body : undefined;
  const subjectTemplate =
    customSubject || (customBody ? requestSubject('sign', language) : requestSubject(purpose, language));
  let body = customBody ?? requestBody(purpose, language);
  if (
    customBody &&
    options.appendLinkIfMissing &&
    !/\{+(submitter\.link|submitter\.id|submission\.link|template\.id)\}+/i.test(customBody)
  ) {
    body = `${body.trimEnd()}\n\n{{submitter.link}}`;
  }
  return {
    subject: oneLine(renderTemplateText(subjectTemplate, options.variables)),
    ...renderMessageBody(body, options.variables, customBody ? {} : { language }),
  };
}

/**
 * The signature-request SMS (DocuSeal's "{account.name} has invited you to sign a document:
 * {submitter.link}", in `language`), or `body` with variables when given.
 */
export function buildSignatureRequestSms(options: {
  variables: MessageVariables;
  body?: string | null;
  language?: LanguageCode;
}): string {
  const body = options.body?.trim() ? options.body : requestSmsBody(options.language);
  return renderTemplateText(body, options.variables).trim();
}

/**
 * A Markdown body with variables → text/plain and a small HTML document. Values are placed after
 * the Markdown is read, so they are never read as Markdown or HTML themselves.
 * @param options.language the language the body is written in (Signet's fixed texts): the HTML's
 *   `lang` and `dir` (`rtl` for he and ar); without it (a sender's own text) no `lang`, and `dir`
 *   from the text's first strong character
 * @param options.plainBeforeLast paragraphs of someone's own words (a decline reason), put before
 *   the body's last paragraph as plain text: no Markdown, no variables, escaped in HTML
 */
export function renderMessageBody(
  body: string,
  variables: MessageVariables,
  options: { language?: LanguageCode; plainBeforeLast?: readonly string[] } = {},
): { text: string; html: string } {
  const values: string[] = [];
  const source = body
    .replace(PRIVATE_USE, '')
    .replace(/\r\n?/g, '\n')
    .replace(VARIABLE, (match, key: string) => {
      const value = resolveVariable(key, variables);
      if (value === undefined) return match;
      values.push(value);
      return `${VALUE_OPEN}${values.length - 1}${VALUE_CLOSE}`;
    });
  const fill = (s: string) => s.replace(/\uE000(\d+)\uE001/g, (_, i: string) => values[Number(i)]);

  const plain = (options.plainBeforeLast ?? []).map((p) => p.replace(/\r\n?/g, '\n').trim()).filter(Boolean);
  const whole = fill(
    source.replace(MARKDOWN_LINK, (_, label: string, url: string) => {
      const [l, u] = [fill(label), fill(url)];
      return l === u ? u : `${l}: ${u}`;
    }),
  )
    .replace(/[ \t]+$/gm, '')
    .trim();
  const lastBreak = whole.search(/\n{2,}(?![\s\S]*\n{2,})/);
  const text =
    plain.length === 0
      ? whole
      : lastBreak < 0
        ? [...plain, whole].join('\n\n')
        : `${whole.slice(0, lastBreak)}\n\n${plain.join('\n\n')}${whole.slice(lastBreak)}`;

  const markdown = source
    .split(/\n{2,}/)
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => `<p>${inlineHtml(p, values)}</p>`);
  const escaped = plain.map((p) => `<p>${escapeHtml(p).replace(/\n/g, '<br>\n')}</p>`);
  const paragraphs = [...markdown.slice(0, -1), ...escaped, ...markdown.slice(-1)];
  const htmlBody = paragraphs.join('\n');
  const dir = options.language ? directionOf(options.language) : firstStrongDirection(text);
  const lang = options.language ? ` lang="${options.language}"` : '';
  const html =
    `<!DOCTYPE html>\n<html${lang} dir="${dir}"><head><meta charset="utf-8"></head>` +
    `<body dir="${dir}">\n${htmlBody}\n</body></html>\n`;
  return { text, html };
}

const MARKDOWN_LINK = /\[([^\]\n]+)\]\(([^)\s]+)\)/g;
/** A Markdown link, a bare URL, or a value. */
const INLINE_PIECE =
  /\[([^\]\n]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>"\uE000-\uE003]+[^\s<>"\uE000-\uE003.,;:!?)'])|\uE000(\d+)\uE001/g;

function inlineHtml(paragraph: string, values: string[]): string {
  const pieces: string[] = [];
  const keep = (html: string) => `${PIECE_OPEN}${pieces.push(html) - 1}${PIECE_CLOSE}`;
  const fill = (s: string) => s.replace(/\uE000(\d+)\uE001/g, (_, i: string) => values[Number(i)]);
  const withPieces = paragraph.replace(
    INLINE_PIECE,
    (_, label?: string, href?: string, bare?: string, index?: string) => {
      if (label !== undefined && href !== undefined) {
        const url = fill(href);
        return keep(
          isSafeUrl(url) ? `<a href="${escapeHtml(url)}">${escapeHtml(fill(label))}</a>` : escapeHtml(fill(label)),
        );
      }
      if (bare !== undefined) return keep(`<a href="${escapeHtml(bare)}">${escapeHtml(bare)}</a>`);
      const value = values[Number(index)];
      return keep(
        /^https?:\/\/\S+$/.test(value) ? `<a href="${escapeHtml(value)}">${escapeHtml(value)}</a>` : escapeHtml(value),
      );
    },
  );
  return escapeHtml(withPieces)
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, '<strong>$1</strong>')
    .replace(/(^|[^*\w])\*(?=\S)([^*]*?\S)\*(?![*\w])/g, '$1<em>$2</em>')
    .replace(/(^|[^_\w])_(?=\S)([^_]*?\S)_(?![_\w])/g, '$1<em>$2</em>')
    .replace(/\n/g, '<br>\n')
    .replace(/\uE002(\d+)\uE003/g, (_, i: string) => pieces[Number(i)]);
}

function isSafeUrl(url: string): boolean {
  return /^(https?:\/\/|mailto:)\S+$/i.test(url);
}

const HTML_ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => HTML_ENTITIES[c]);
}

/** Subjects are one header line. */
function oneLine(s: string): string {
  return s.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}
