/**
 * The audit log PDF of a completed submission (issue 5; DocuSeal's content:
 * reference/docuseal-behaviour.md §10.4), in the language of its signers (issue 24): its fixed
 * texts are the `audit` namespace of src/i18n/locales/<code>.json, and each time is printed in
 * ISO 8601 UTC, then — in another language than English, or another zone than UTC — as that
 * language writes a date and time (Intl, CLDR).
 *
 * Drawn with pdf-lib in DejaVu Sans, so Latin, Greek, Cyrillic, Hebrew, Arabic, Armenian, Georgian
 * and most symbols render, and — for what DejaVu has no glyph for — in the CJK face of
 * src/documents/fonts.ts (loadCjk: WenQuanYi Micro Hei, Debian's fonts-wqy-microhei), so a log in
 * Chinese, Japanese or Korean is printed in that language and CJK names and values render; each
 * line is cut into runs by face in one place (fontRuns), and the CJK face is embedded (a subset)
 * only when the log has such text. Without the CJK file a log asked for in a language whose texts
 * the fonts cannot draw (ja, ko, zh) is printed in English (auditLogLanguage). Right-to-left:
 * a Hebrew or Arabic log is laid out from the right (labels right, values to their left, footers
 * mirrored), and every line — in any log — is drawn in the order of a reduced Unicode
 * Bidirectional Algorithm (src/i18n/bidi.ts), so Latin words, numbers, e-mail addresses and times
 * inside Arabic or Hebrew text keep their order. Arabic letters are shaped (joined forms and the
 * lam-alef ligature) by fontkit, pdf-lib's layout engine; text extracted from the PDF gives them
 * as Unicode presentation forms (NFKC gives the letters).
 */
import { createHash } from 'node:crypto';
import { PDFDocument, type PDFImage, type PDFPage, rgb } from 'pdf-lib';
import type { AuditLogValue } from './audit-log-values.ts';
import { chainHeadLine } from './audit-chain.ts';
import { embedImageFile } from './embed-image.ts';
import {
  type DejaVuFace,
  drawRuns,
  type EmbeddedFace,
  embedDejaVu,
  lacksGlyphs,
  loadCjk,
  loadDejaVu,
  needsFallback,
  registerFontkit,
  runsWidth,
} from '../documents/fonts.ts';
import { bidiRuns, firstStrongDirection, hasRightToLeft } from '../i18n/bidi.ts';
import { DEFAULT_LANGUAGE, directionOf, type LanguageCode } from '../i18n/languages.ts';
import { CATALOGS, type Translate, translator } from '../i18n/messages.ts';

export interface AuditLogEvent {
  /** Submission event type (`view_form`, `complete_form`, ...; §5.4). */
  type: string;
  at: Date;
  ip?: string | null;
  userAgent?: string | null;
  /**
   * The event's data as stored. Delivery events carry their outcome (src/db/queries/
   * notification-events.ts): `send_email`/`send_sms` `{provider, attempt, to}`, `fail_email`/
   * `fail_sms` `{provider, attempt, max_attempts, retrying, error, to}`; `fail_completion` `{reason}`;
   * `consent_accepted` `{version, language, sha256}` (src/signing-form/signing-consent.ts).
   */
  data?: Record<string, unknown> | null;
}

export interface AuditLogParty {
  name?: string | null;
  email?: string | null;
  phone?: string | null;
  /** The template role ("First Party"). */
  role: string;
  /** IP and user agent of the completion (the complete_form event). */
  ip?: string | null;
  userAgent?: string | null;
  completedAt?: Date | null;
  /** This party's events; drawn in time order. */
  events: AuditLogEvent[];
  /** This party's answers, in template order (listAuditLogValues, src/signing/audit-log-values.ts). */
  values?: AuditLogValue[];
}

export interface BuildAuditLogInput {
  submissionId: number;
  accountName: string;
  /** Testing accounts get DocuSeal's title "Testing Log - Not for Production Use" (§2). */
  testing?: boolean;
  /**
   * Each result document: its name and the SHA-256 (as the caller stores it, e.g. lower-case hex)
   * of the original (template) file and of the final signed file.
   */
  documents: { name: string; originalSha256: string; finalSha256: string }[];
  /** In role order. */
  parties: AuditLogParty[];
  generatedAt: Date;
  /**
   * The head of the submission's audit chain when the log is made (src/signing/audit-chain.ts):
   * printed as "Audit trail: N events, chain head <SHA-256 hex>", the record a later check of the
   * chain compares with.
   */
  auditChain?: { events: number; head: string } | null;
  /**
   * IANA zone (the account's). Times are always printed in UTC; a zone other than UTC is named in
   * the header and adds the local time with its offset next to each, and a US zone makes the
   * pages Letter instead of A4 (as DocuSeal). An unknown zone is ignored.
   */
  timeZone?: string;
  /**
   * The language of its fixed texts and dates (a code of src/i18n/languages.ts; the completion
   * gives its last party's: src/signing/complete-submission.ts); default English. One the fonts
   * cannot draw (ja, ko, zh without the CJK font) is printed in English (auditLogLanguage).
   */
  language?: LanguageCode;
}

/**
 * The delivery sentences' name of each event type's message (`audit.delivery.*` keys): a
 * reminder, a verification code, else the channel's plain message.
 */
function deliveryKind(type: string): string {
  if (type === 'send_reminder_email') return 'reminder_email';
  if (type === 'send_reminder_sms') return 'reminder_sms';
  if (type === 'send_2fa_sms') return 'verification_sms';
  return type.includes('sms') ? 'sms' : 'email';
}

/** How providers are named in the log (the `provider` of a delivery event). */
const PROVIDER_NAMES: Record<string, string> = { smtp: 'SMTP', sendgrid: 'SendGrid', twilio: 'Twilio' };

/**
 * What happened to an email or SMS, from its event's data (src/db/queries/notification-events.ts):
 * kept in the outbox (no provider configured: nothing left the service), sent through which
 * provider (and on which attempt, when not the first), or failed (retried or given up, with the
 * provider's error), in the language of `t` (the `audit` namespace; default English). Undefined
 * for events without an outcome (recorded before issue 13, or of another type): those print
 * DocuSeal's sentence.
 */
export function deliverySentence(
  type: string,
  data: Record<string, unknown> | null | undefined,
  t: Translate = translator(DEFAULT_LANGUAGE, 'audit'),
): string | undefined {
  if (!data || typeof data.provider !== 'string') return undefined;
  const sms = type.includes('sms');
  const what = t(`delivery.${deliveryKind(type)}`);
  const to = typeof data.to === 'string' && data.to ? data.to : undefined;
  const withTo = to ? '_to' : '';
  const attempt = typeof data.attempt === 'number' ? data.attempt : 1;
  const provider = PROVIDER_NAMES[data.provider] ?? data.provider;
  if (type.startsWith('send_')) {
    if (data.provider === 'outbox') return t(`delivery.kept_${sms ? 'sms' : 'email'}${withTo}`, { what, to });
    const sent = t(`delivery.sent${withTo}`, { what, to, provider });
    return attempt > 1 ? `${sent} ${t('delivery.on_attempt', { attempt })}` : sent;
  }
  if (type.startsWith('fail_')) {
    const error = typeof data.error === 'string' && data.error ? `: ${data.error}` : '';
    const max = typeof data.max_attempts === 'number' ? data.max_attempts : undefined;
    const of = max ? t('delivery.attempt_of', { attempt, max }) : t('delivery.attempt', { attempt });
    const next =
      data.retrying === true
        ? t('delivery.retrying')
        : typeof data.reason === 'string'
          ? t('delivery.not_retried', { reason: data.reason })
          : max !== undefined && attempt >= max
            ? t('delivery.given_up')
            : t('delivery.refused');
    return `${t(`delivery.failed${withTo}`, { what, to, provider })} ${of}${error}; ${next}`;
  }
  return undefined;
}

/**
 * Features the log's text is laid out with: fonts.ts TEXT_FEATURES but the required ligatures,
 * which Arabic writes lam and alef with (DejaVu has them for Arabic only).
 */
const LOG_FEATURES = { liga: false, clig: false } as const;
/** Direction marks and no-break spaces Intl puts in dates: the log lays out text itself, and every font has a space. */
const INTL_MARKS = /[\u200e\u200f\u061c]/g;
const INTL_SPACES = /[\u00a0\u202f]/g;

/**
 * A time as the log prints it: ISO 8601 UTC to the second ("2026-11-21T17:30:05Z"), then in
 * parentheses — in English, in a zone other than UTC: "2026-11-21 18:30:05 GMT+01:00"; in
 * another language, always: the date and time as the language writes them, in the zone (UTC
 * without one), with Latin digits ("21. November 2026 um 17:30:05 UTC"). In Hebrew and Arabic
 * the language's form comes first and the ISO time in parentheses.
 */
function formatTime(date: Date, timeZone: string | undefined, language: LanguageCode): string {
  const utc = `${date.toISOString().slice(0, 19)}Z`;
  if (language !== DEFAULT_LANGUAGE) {
    const local = localDateTime(language, timeZone ?? 'UTC')
      .format(date)
      .replace(INTL_MARKS, '')
      .replace(INTL_SPACES, ' ');
    // Right to left, the local time first: an ISO time before Arabic or Hebrew words would be
    // read with its parenthesis (the Unicode Bidirectional Algorithm keeps "Z (21" together).
    return directionOf(language) === 'rtl' ? `${local} (${utc})` : `${utc} (${local})`;
  }
  if (!timeZone) return utc;
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'longOffset',
    })
      .formatToParts(date)
      .map((part) => [part.type, part.value]),
  );
  return (
    `${utc} (${parts.year}-${parts.month}-${parts.day} ` +
    `${parts.hour}:${parts.minute}:${parts.second} ${parts.timeZoneName})`
  );
}

const localDateTimes = new Map<string, Intl.DateTimeFormat>();

/** The long date and time of a language in a zone, Latin digits (one formatter per pair and process). */
function localDateTime(language: LanguageCode, timeZone: string): Intl.DateTimeFormat {
  const key = `${language} ${timeZone}`;
  let format = localDateTimes.get(key);
  if (!format) {
    format = new Intl.DateTimeFormat(`${language}-u-nu-latn`, { dateStyle: 'long', timeStyle: 'long', timeZone });
    localDateTimes.set(key, format);
  }
  return format;
}

const drawable = new Map<string, boolean>();
const languageTexts = new Map<LanguageCode, string[]>();

/** The texts a log in `language` prints besides its input: its `audit` texts and its dates (every month). */
function textsOf(language: LanguageCode): string[] {
  let texts = languageTexts.get(language);
  if (!texts) {
    const collected: string[] = [];
    const collect = (value: unknown) => {
      if (typeof value === 'string') collected.push(value.replace(/\{\{[^}]*\}\}/g, ''));
      else if (value && typeof value === 'object') Object.values(value).forEach(collect);
    };
    collect(CATALOGS[language].audit);
    for (let month = 0; month < 12; month++)
      collected.push(formatTime(new Date(Date.UTC(2026, month, 28, 10, 15, 30)), 'UTC', language));
    texts = collected;
    languageTexts.set(language, texts);
  }
  return texts;
}

/**
 * The language the log is printed in: `language` when each of `faces` (DejaVu Sans regular and
 * bold) — or else `fallback` (loadCjk's face, when there is one) — has a glyph for every
 * character of its `audit` texts and of its dates (every month, written as formatTime writes
 * them); else English. ja, ko and zh need the CJK face: without it they are printed in English
 * (documented in docs/signing-form.md "Languages"). Checked once per language, faces and process.
 * @param faces the faces the log is drawn with (loadDejaVu)
 * @param fallback the face for what they lack (loadCjk), or null
 */
export function auditLogLanguage(
  language: LanguageCode,
  faces: readonly DejaVuFace[],
  fallback: DejaVuFace | null = null,
): LanguageCode {
  const key = `${language} ${fallback ? fallback.face.postscriptName : ''}`;
  let ok = drawable.get(key);
  if (ok === undefined) {
    const characters = new Set(Array.from(textsOf(language).join('')).filter((c) => !/\s/u.test(c)));
    const extra = new Set(fallback ? fallback.face.characterSet : []);
    ok = faces.every((face) => {
      const has = new Set(face.face.characterSet);
      return [...characters].every((c) => has.has(c.codePointAt(0)!) || extra.has(c.codePointAt(0)!));
    });
    drawable.set(key, ok);
  }
  return ok ? language : DEFAULT_LANGUAGE;
}

/** Every string of the log's input (names, values, events' data), images' bytes left out. */
function inputStrings(input: BuildAuditLogInput): string[] {
  const strings: string[] = [];
  const collect = (value: unknown) => {
    if (typeof value === 'string') strings.push(value);
    else if (value && typeof value === 'object' && !(value instanceof Uint8Array) && !(value instanceof Date))
      Object.values(value).forEach(collect);
  };
  collect(input);
  return strings;
}

const A4: [number, number] = [595.28, 841.89];
const LETTER: [number, number] = [612, 792];
/** Zones DocuSeal would print on Letter: the US ones. */
const US_TIME_ZONE = new RegExp(
  `^(US\\/|America\\/(${/New_York|Detroit|Chicago|Denver|Phoenix|Boise|Los_Angeles|Anchorage|Juneau|Sitka/.source}|` +
    `${/Nome|Adak|Metlakatla|Yakutat|Menominee|Indiana\/|Kentucky\/|North_Dakota\//.source})|Pacific\\/Honolulu$)`,
);

const MARGIN = 50;
const FOOTER_HEIGHT = 30;
const LABEL_WIDTH = 110;
const INK = rgb(0.1, 0.1, 0.1);
const MUTED = rgb(0.42, 0.42, 0.42);
const RULE = rgb(0.8, 0.8, 0.8);

/**
 * The audit log PDF: title ("Audit Log", or the testing title), submission id, account, generation
 * time; per document its name and the original and final SHA-256 exactly as given; per party
 * role, name, email, phone, IP, user agent, completion time, its values (as DocuSeal's audit log,
 * lib/submissions/generate_audit_trail.rb: each field's name in small capitals, then its value;
 * signatures, initials, images and stamps as images 200 pt wide, initials 50, at most 100 pt
 * high, each stored image embedded once; a typed signature's image followed by "Typed: <text>") and every event
 * (UTC time in ISO 8601 with Z to the second, what happened — for an email or SMS whether it was
 * kept, sent through which provider, or failed and retried (deliverySentence) — its IP and user
 * agent). Long values wrap (at spaces, else anywhere) and keep their line breaks; pages break
 * between lines, so a value of any length stays readable over as many pages as it takes (a
 * field's name stays with its value's first line, an image with its name, an event with its
 * details), and each page has a "Page n of N" footer. The bytes depend only on the input: document dates are
 * `generatedAt`, and font subset tags are derived from the input.
 * @returns the PDF bytes (A4, or Letter for a US time zone)
 * @throws Error when the DejaVu fonts (npm package dejavu-fonts-ttf) are missing. An image that
 *   cannot be read prints "Image not readable" instead.
 */
export async function buildAuditLog(input: BuildAuditLogInput): Promise<Uint8Array> {
  const timeZone = usableTimeZone(input.timeZone);
  const doc = await PDFDocument.create({ updateMetadata: false });
  registerFontkit(doc);
  const [regular, bold, mono] = await Promise.all([
    loadDejaVu('DejaVuSans'),
    loadDejaVu('DejaVuSans-Bold'),
    loadDejaVu('DejaVuSansMono'),
  ]);
  const requested = input.language ?? DEFAULT_LANGUAGE;
  // The CJK face only when the log's texts or the input need what DejaVu lacks.
  const cjk = lacksGlyphs([...textsOf(requested), ...inputStrings(input)], [regular.face, bold.face])
    ? await loadCjk()
    : null;
  const language = auditLogLanguage(requested, [regular, bold], cjk);
  const t = translator(language, 'audit');
  const direction = directionOf(language);
  const title = t(input.testing ? 'testing_title' : 'title');
  // pdf-lib would name each subset "<font>-<random number>"; a tag derived from the input keeps
  // the output reproducible and is the "ABCDEF+" form that marks a subset (ISO 32000-1 §9.6.4).
  const tag = subsetTag(input);
  const embedded = await Promise.all([
    embedDejaVu(doc, regular, { customName: `${tag}+DejaVuSans`, features: LOG_FEATURES }),
    embedDejaVu(doc, bold, { customName: `${tag}+DejaVuSans-Bold`, features: LOG_FEATURES }),
    embedDejaVu(doc, mono, { customName: `${tag}+DejaVuSansMono`, features: LOG_FEATURES }),
  ]);
  // One CJK subset serves all three faces (it has no bold): embedded only when the log has text
  // DejaVu cannot draw and it can.
  const fallback =
    cjk && needsFallback([...textsOf(language), ...inputStrings(input)], regular.face, cjk.face)
      ? [await embedDejaVu(doc, cjk, { customName: `${tag}+${cjk.face.postscriptName}`, features: LOG_FEATURES })]
      : [];
  const fonts: Fonts = {
    regular: [embedded[0], ...fallback],
    bold: [embedded[1], ...fallback],
    mono: [embedded[2], ...fallback],
  };
  doc.setTitle(t('document_title', { title, id: input.submissionId }));
  doc.setLanguage(language);
  doc.setAuthor(clean(input.accountName));
  doc.setCreator('Signet');
  doc.setProducer('Signet');
  doc.setCreationDate(input.generatedAt);
  doc.setModificationDate(input.generatedAt);

  const layout = new Layout(
    doc,
    fonts,
    (font, text, size) => runsWidth(text, font, size),
    timeZone && US_TIME_ZONE.test(timeZone) ? LETTER : A4,
    direction,
  );
  const time = (date: Date) => formatTime(date, timeZone, language);

  // Each stored image is embedded once, however many fields and parties show it.
  const images = new Map<string, Promise<PDFImage | null>>();
  const embedImage = (image: NonNullable<AuditLogValue['image']>) => {
    let embedded = images.get(image.uuid);
    if (!embedded) {
      // An image the documents could draw is readable; should one not be, the log says so rather than fail.
      embedded = embedImageFile(doc, image.file, `the image ${image.uuid}`).catch(() => null);
      images.set(image.uuid, embedded);
    }
    return embedded;
  };
  /**
   * One answer (DocuSeal's layout): the field's name in small capitals, then the value or image
   * below it; a typed signature's image is followed by "Typed: <its text>".
   */
  const drawValue = async (value: AuditLogValue) => {
    const name = {
      text: value.name.toLocaleUpperCase('en'),
      style: { font: fonts.bold, size: 7, color: MUTED, indent: 12, gapAfter: 1, dir: 'auto' as const },
    };
    const nameHeight = layout.height(name.text, name.style);
    const typed = value.typed === undefined ? undefined : t('typed', { text: value.typed });
    if (value.image) {
      const image = await embedImage(value.image);
      if (image) {
        const size = imageSize(image, value.type);
        const typedStyle = { size: 9, color: MUTED, indent: 12, gapAfter: 6 };
        layout.keepTogether(nameHeight + size.height + 10 + (typed ? layout.height(typed, typedStyle) : 0));
        layout.text(name.text, name.style);
        layout.image(image, { ...size, indent: 12, gapBefore: 3, gapAfter: typed ? 2 : 8 });
        if (typed) layout.text(typed, typedStyle);
        return;
      }
    }
    const text = value.text ?? typed ?? (value.image ? t('image_not_readable') : '');
    const style = { size: 10, indent: 12, gapAfter: 6, dir: 'auto' as const };
    // The name and the first line of its value stay on one page; a long value then runs on over pages.
    layout.keepTogether(nameHeight + lineHeight(10));
    layout.text(name.text, name.style);
    layout.paragraphs(text, style);
  };

  layout.text('Signet', { font: fonts.bold, size: 10, color: MUTED });
  layout.text(title, { font: fonts.bold, size: 20, gapAfter: 6 });
  layout.field(t('submission_id'), String(input.submissionId));
  layout.field(t('account'), input.accountName);
  layout.field(t('generated_at'), time(input.generatedAt));
  if (timeZone) layout.field(t('time_zone'), timeZone);
  if (input.auditChain)
    // Kept as written in every language: verify-pdf.ts reads it back (parseChainHead).
    layout.field(t('audit_trail'), chainHeadLine(input.auditChain.events, input.auditChain.head), {
      font: fonts.mono,
      size: 8,
      dir: 'ltr',
    });

  layout.heading(t('documents'));
  if (input.documents.length === 0) layout.text(t('none'), { color: MUTED });
  for (const document of input.documents) {
    layout.keepTogether(3 * 14 + 8);
    layout.text(document.name, { font: fonts.bold, size: 10.5, gapAfter: 2, dir: 'auto' });
    layout.field(t('original_sha256'), document.originalSha256, { font: fonts.mono, size: 8.5, dir: 'ltr' });
    layout.field(t('final_sha256'), document.finalSha256, { font: fonts.mono, size: 8.5, dir: 'ltr' });
    layout.space(6);
  }

  layout.heading(t('parties'));
  for (const party of input.parties) {
    layout.keepTogether(9 * 14);
    layout.text(party.role, { font: fonts.bold, size: 12, gapAfter: 4, dir: 'auto' });
    layout.field(t('name'), party.name);
    layout.field(t('email'), party.email);
    layout.field(t('phone'), party.phone);
    layout.field(t('ip'), party.ip);
    layout.field(t('user_agent'), party.userAgent);
    layout.field(t('completed_at'), party.completedAt ? time(party.completedAt) : t('not_completed'));
    if (party.values && party.values.length > 0) {
      layout.space(4);
      layout.text(t('values'), { font: fonts.bold, size: 9.5, color: MUTED, gapAfter: 2 });
      for (const value of party.values) await drawValue(value);
    }
    layout.space(4);
    layout.text(t('events'), { font: fonts.bold, size: 9.5, color: MUTED, gapAfter: 2 });
    const events = [...party.events].sort((a, b) => a.at.getTime() - b.at.getTime());
    if (events.length === 0) layout.text(t('none'), { size: 9, color: MUTED, indent: 12 });
    for (const event of events) {
      const label = eventSentence(event, t);
      const what = { text: `${time(event.at)}   ${label}`, style: { size: 9, indent: 12 } };
      const where = [
        event.ip ? t('event_ip', { ip: event.ip }) : '',
        event.userAgent ? t('event_user_agent', { ua: event.userAgent }) : '',
      ].filter(Boolean);
      const details = { text: where.join(' · '), style: { size: 8, color: MUTED, indent: 24, gapAfter: 2 } };
      layout.keepTogether(
        layout.height(what.text, what.style) + (where.length > 0 ? layout.height(details.text, details.style) : 0),
      );
      layout.text(what.text, what.style);
      if (where.length > 0) layout.text(details.text, details.style);
    }
    layout.space(10);
  }

  layout.footers(t('footer', { title, id: input.submissionId }), (page, pages) => t('page', { page, pages }));
  // In one go, without object streams (as drawValues saves): the signer loads it right after.
  return doc.save({ useObjectStreams: false, objectsPerTick: Number.POSITIVE_INFINITY });
}

/** Width in points of `text` in `font` at `size` (runsWidth, src/documents/fonts.ts). */
type Measure = (font: Font, text: string, size: number) => number;

/** A face and its fallbacks (the CJK face when the log needs it): fontRuns picks one per run. */
type Font = readonly EmbeddedFace[];

interface Fonts {
  regular: Font;
  bold: Font;
  mono: Font;
}

interface TextStyle {
  font?: Font;
  /** Points. */
  size?: number;
  color?: ReturnType<typeof rgb>;
  /** Points from the left margin. */
  indent?: number;
  /** Points below the last line. */
  gapAfter?: number;
  /**
   * The text's own direction, whatever the log's (it stays aligned to the log's start): `ltr`
   * for machine text such as hashes and the chain head, which must read back in order
   * (verify-pdf.ts); `auto` for what people wrote (names, values), by its first strong character
   * as HTML's `dir="auto"`. Default: the log's direction (its fixed texts).
   */
  dir?: 'ltr' | 'auto';
}

/**
 * A top-to-bottom flow of wrapped lines over as many pages as it takes, laid out from the left
 * (`ltr`) or from the right (`rtl`: indents, the label column and images start at the right
 * margin, lines are right-aligned); every line is drawn in bidi order (drawLine).
 */
class Layout {
  private page: PDFPage;
  /** Baseline cursor, points from the bottom. */
  private y: number;
  private readonly width: number;

  constructor(
    private readonly doc: PDFDocument,
    private readonly fonts: Fonts,
    private readonly measure: Measure,
    private readonly pageSize: [number, number],
    private readonly direction: 'ltr' | 'rtl' = 'ltr',
  ) {
    this.width = pageSize[0] - 2 * MARGIN;
    this.page = doc.addPage(pageSize);
    this.y = pageSize[1] - MARGIN;
  }

  /**
   * Draws one line with its start `offset` points from the margin it starts at (the left one, or
   * the right one in a right-to-left log), at `y`, in the order of the Unicode Bidirectional
   * Algorithm (src/i18n/bidi.ts): runs left to right; a right-to-left run of Hebrew or Arabic
   * letters is given to fontkit as it is (fontkit shapes it and lays it out from the right), one of
   * neutral characters only (spaces, brackets, already mirrored) is reversed here. A line with no
   * right-to-left character in a left-to-right log is drawn as it is.
   */
  private drawLine(
    page: PDFPage,
    line: string,
    offset: number,
    y: number,
    options: { font: Font; size: number; color: ReturnType<typeof rgb> },
    base: 'ltr' | 'rtl' = this.direction,
  ): void {
    const { font, size, color } = options;
    if (this.direction === 'ltr' && !hasRightToLeft(line)) {
      drawRuns(page, line, font, { x: MARGIN + offset, y, size, color });
      return;
    }
    const runs = bidiRuns(line, base).map((run) => ({
      text: run.rtl && !hasRightToLeft(run.text) ? Array.from(run.text).reverse().join('') : run.text,
      width: this.measure(font, run.text, size),
    }));
    const total = runs.reduce((sum, run) => sum + run.width, 0);
    let x = this.direction === 'rtl' ? MARGIN + this.width - offset - total : MARGIN + offset;
    for (const run of runs) {
      drawRuns(page, run.text, font, { x, y, size, color });
      x += run.width;
    }
  }

  /** Starts a new page unless `height` points fit above the footer. */
  keepTogether(height: number): void {
    if (this.y - height < MARGIN + FOOTER_HEIGHT) this.newPage();
  }

  space(points: number): void {
    this.y -= points;
  }

  heading(text: string): void {
    this.space(10);
    this.keepTogether(60);
    // The rule below the descenders (Arabic letters reach under the baseline).
    this.text(text, { font: this.fonts.bold, size: 14, gapAfter: 4 });
    this.page.drawLine({
      start: { x: MARGIN, y: this.y },
      end: { x: MARGIN + this.width, y: this.y },
      thickness: 0.5,
      color: RULE,
    });
    this.space(6);
  }

  /** Points that text(text, style) takes. */
  height(text: string, style: TextStyle = {}): number {
    const lines = this.wrap(
      clean(text),
      style.font ?? this.fonts.regular,
      style.size ?? 10,
      this.width - (style.indent ?? 0),
    );
    return lines.length * lineHeight(style.size ?? 10) + (style.gapAfter ?? 0);
  }

  /** The base direction of a text in `style` (TextStyle.dir). */
  private baseOf(text: string, style: TextStyle): 'ltr' | 'rtl' {
    return style.dir === 'ltr' ? 'ltr' : style.dir === 'auto' ? firstStrongDirection(text) : this.direction;
  }

  /** A paragraph: wrapped to the width left of the indent. */
  text(text: string, style: TextStyle = {}): void {
    const font = style.font ?? this.fonts.regular;
    const size = style.size ?? 10;
    const indent = style.indent ?? 0;
    const base = this.baseOf(text, style);
    for (const line of this.wrap(clean(text), font, size, this.width - indent)) {
      this.line(size);
      this.drawLine(this.page, line, indent, this.y, { font, size, color: style.color ?? INK }, base);
    }
    this.space(style.gapAfter ?? 0);
  }

  /**
   * Text that keeps its line breaks: each line of `text` wrapped as text() wraps it, an empty line
   * kept as a blank line; pages break between lines as needed.
   */
  paragraphs(text: string, style: TextStyle = {}): void {
    const lines = text.split(/\r\n|\r|\n|\u2028|\u2029/);
    lines.forEach((line, i) => {
      const last = i === lines.length - 1;
      if (clean(line) === '') this.space(lineHeight(style.size ?? 10));
      else this.text(line, { ...style, gapAfter: last ? style.gapAfter : 0 });
      if (last && clean(line) === '') this.space(style.gapAfter ?? 0);
    });
  }

  /** An image of `width` × `height` points at the cursor (its top edge), on a new page if it does not fit. */
  image(
    image: PDFImage,
    options: { width: number; height: number; indent?: number; gapBefore?: number; gapAfter?: number },
  ): void {
    this.space(options.gapBefore ?? 0);
    this.keepTogether(options.height);
    this.y -= options.height;
    const indent = options.indent ?? 0;
    this.page.drawImage(image, {
      x: this.direction === 'rtl' ? MARGIN + this.width - indent - options.width : MARGIN + indent,
      y: this.y,
      width: options.width,
      height: options.height,
    });
    this.space(options.gapAfter ?? 0);
  }

  /**
   * "Label   value": the label in its column (wrapped when a language's label is wider), the value
   * wrapped in the rest, in its own direction (TextStyle.dir, default `auto`); "—" for a missing value.
   */
  field(label: string, value: string | null | undefined, style: TextStyle = {}): void {
    const font = style.font ?? this.fonts.regular;
    const size = style.size ?? 10;
    const shown = clean(value ?? '') || '—';
    const base = this.baseOf(shown, { dir: 'auto', ...style });
    const lines = this.wrap(shown, font, size, this.width - LABEL_WIDTH);
    const labels = this.wrap(clean(label), this.fonts.regular, 9, LABEL_WIDTH - 6);
    for (let i = 0; i < Math.max(lines.length, labels.length); i++) {
      this.line(10);
      const labelLine = labels[i];
      if (labelLine)
        this.drawLine(this.page, labelLine, 0, this.y, { font: this.fonts.regular, size: 9, color: MUTED });
      const line = lines[i];
      if (line) this.drawLine(this.page, line, LABEL_WIDTH, this.y, { font, size, color: INK }, base);
    }
    this.space(2);
  }

  /** Stamps `text` (at the start) and "Page n of N" (`pageOf`, at the end) at the bottom of every page. */
  footers(text: string, pageOf: (page: number, pages: number) => string): void {
    const pages = this.doc.getPages();
    const style = { font: this.fonts.regular, size: 8, color: MUTED };
    pages.forEach((page, i) => {
      const y = MARGIN - 12;
      this.drawLine(page, clean(text), 0, y, style);
      const number = pageOf(i + 1, pages.length);
      this.drawLine(page, number, this.width - this.measure(this.fonts.regular, number, 8), y, style);
    });
  }

  /** Moves the cursor down one line of `size`, to a new page when the line would not fit. */
  private line(size: number): void {
    const height = lineHeight(size);
    if (this.y - height < MARGIN + FOOTER_HEIGHT) this.newPage();
    this.y -= height;
  }

  private wrap(text: string, font: Font, size: number, width: number): string[] {
    return wrap(text, (s) => this.measure(font, s, size), width);
  }

  private newPage(): void {
    this.page = this.doc.addPage(this.pageSize);
    this.y = this.pageSize[1] - MARGIN;
  }
}

/**
 * The sentence of an event: its delivery outcome when it has one, else DocuSeal's label (§10.4,
 * `audit.event.<type>`; a failed completion's reason, an accepted disclosure's version after it),
 * else the type alone; the type follows in parentheses.
 */
function eventSentence(event: AuditLogEvent, t: Translate): string {
  const delivery = deliverySentence(event.type, event.data, t);
  if (delivery) return `${delivery} (${event.type})`;
  const key = `event.${event.type}`;
  const label = /^[a-z0-9_]+$/.test(event.type) ? t(key) : key;
  const reason =
    event.type === FAIL_COMPLETION && typeof event.data?.reason === 'string'
      ? `: ${event.data.reason}`
      : event.type === CONSENT_ACCEPTED && typeof event.data?.version === 'string'
        ? `: ${t('consent_version', { version: event.data.version })}`
        : '';
  return label !== key ? `${label}${reason} (${event.type})` : event.type;
}

const FAIL_COMPLETION = 'fail_completion';
/** The acceptance of the electronic-signature disclosure: its version follows (src/signing-form/signing-consent.ts). */
const CONSENT_ACCEPTED = 'consent_accepted';
/** DocuSeal's audit log: images 200 pt wide (initials 50), at most 100 pt high (MAX_IMAGE_HEIGHT). */
const IMAGE_WIDTH = 200;
const INITIALS_WIDTH = 50;
const MAX_IMAGE_HEIGHT = 100;

/**
 * Points an image is shown at (generate_audit_trail.rb): a fixed width, the height by its aspect,
 * both shrunk to a 100 pt height.
 */
function imageSize(image: PDFImage, type: string): { width: number; height: number } {
  let width = type === 'initials' ? INITIALS_WIDTH : IMAGE_WIDTH;
  let height = image.height * (width / image.width);
  if (height > MAX_IMAGE_HEIGHT) {
    width *= MAX_IMAGE_HEIGHT / height;
    height = MAX_IMAGE_HEIGHT;
  }
  return { width, height };
}

function lineHeight(size: number): number {
  return size * 1.35;
}

/** Six capital letters from a hash of the input, for font subset names. */
function subsetTag(input: BuildAuditLogInput): string {
  // Image bytes count by their hash: JSON of a Uint8Array is one key per byte.
  const json = JSON.stringify(input, function (this: Record<string, unknown>, key, value) {
    const raw = this[key];
    return raw instanceof Uint8Array ? createHash('sha256').update(raw).digest('hex') : value;
  });
  const digest = createHash('sha256').update(json).digest();
  return Array.from(digest.subarray(0, 6), (byte) => String.fromCharCode(65 + (byte % 26))).join('');
}

/**
 * Lines of at most `width` points (as `measure` gives them): breaks at spaces, and inside words
 * longer than a line. A line's width is the sum of its words' and spaces' (pdf-lib applies no
 * kerning, and no joining or ligature crosses a space), so each word is measured once: text that
 * takes fontkit's full layout (Arabic, Hebrew) wraps in linear time.
 */
function wrap(text: string, measure: (s: string) => number, width: number): string[] {
  const lines: string[] = [];
  const space = measure(' ');
  let current = '';
  let currentWidth = 0;
  for (const word of text.split(' ')) {
    const wordWidth = measure(word);
    const candidateWidth = current ? currentWidth + space + wordWidth : wordWidth;
    if (candidateWidth <= width) {
      current = current ? `${current} ${word}` : word;
      currentWidth = candidateWidth;
      continue;
    }
    if (current) lines.push(current);
    current = '';
    // A word wider than the line: cut it by code points.
    let piece = '';
    for (const char of word) {
      if (piece && measure(piece + char) > width) {
        lines.push(piece);
        piece = '';
      }
      piece += char;
    }
    current = piece;
    currentWidth = measure(piece);
  }
  lines.push(current);
  return lines;
}

/** One line of printable text: controls and line breaks become spaces, runs of spaces collapse. */
function clean(text: string): string {
  return text
    .replace(/[\p{Cc}\u2028\u2029]+/gu, ' ')
    .replace(/ {2,}/g, ' ')
    .trim();
}

/** The zone when Intl knows it and it is not UTC; otherwise undefined (UTC only). */
function usableTimeZone(timeZone: string | undefined): string | undefined {
  if (!timeZone) return undefined;
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone }).resolvedOptions().timeZone;
    return resolved === 'UTC' || resolved === 'Etc/UTC' ? undefined : timeZone;
  } catch {
    return undefined;
  }
}
