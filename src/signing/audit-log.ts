/**
 * The audit log PDF of a completed submission (issue 5; DocuSeal's content:
 * reference/docuseal-behaviour.md §10.4). Drawn with pdf-lib in DejaVu Sans, so Latin, Greek,
 * Cyrillic, Armenian, Georgian and most symbols render; CJK does not (no glyphs in DejaVu) and
 * right-to-left text is drawn in logical order (pdf-lib does no bidi or shaping).
 */
import { createHash } from 'node:crypto';
import { PDFDocument, type PDFFont, type PDFImage, type PDFPage, rgb } from 'pdf-lib';
import type { AuditLogValue } from './audit-log-values.ts';
import { chainHeadLine } from './audit-chain.ts';
import { embedImageFile } from './embed-image.ts';
import { embedDejaVu, loadDejaVu, registerFontkit } from '../documents/fonts.ts';

export interface AuditLogEvent {
  /** Submission event type (`view_form`, `complete_form`, ...; §5.4). */
  type: string;
  at: Date;
  ip?: string | null;
  userAgent?: string | null;
  /**
   * The event's data as stored. Delivery events carry their outcome (src/db/queries/
   * notification-events.ts): `send_email`/`send_sms` `{provider, attempt, to}`, `fail_email`/
   * `fail_sms` `{provider, attempt, max_attempts, retrying, error, to}`; `fail_completion` `{reason}`.
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
}

export const AUDIT_LOG_TITLE = 'Audit Log';
export const TESTING_AUDIT_LOG_TITLE = 'Testing Log - Not for Production Use';

/**
 * DocuSeal's event sentences (§10.4), by event type; other types print as they are. Delivery
 * events with an outcome in their data are described by deliverySentence instead.
 */
const EVENT_LABELS: Record<string, string> = {
  send_email: 'Email sent',
  send_reminder_email: 'Reminder email sent',
  send_sms: 'SMS sent',
  send_reminder_sms: 'Reminder SMS sent',
  send_2fa_sms: 'Verification SMS sent',
  click_email: 'Email link clicked',
  click_sms: 'SMS link clicked',
  phone_verified: 'Phone verified',
  email_verified: 'Email verified',
  view_form: 'Form viewed',
  start_form: 'Submission started',
  invite_party: 'Party invited',
  complete_form: 'Submission completed',
  api_complete_form: 'Submission completed via API',
  decline_form: 'Form declined',
  start_verification: 'Identity verification started',
  complete_verification: 'Identity verification completed',
  fail_email: 'Email failed',
  fail_sms: 'SMS failed',
  fail_completion: 'Completion failed',
};

/** How providers are named in the log (the `provider` of a delivery event). */
const PROVIDER_NAMES: Record<string, string> = { smtp: 'SMTP', sendgrid: 'SendGrid', twilio: 'Twilio' };

/**
 * What happened to an email or SMS, from its event's data (src/db/queries/notification-events.ts):
 * kept in the outbox (no provider configured: nothing left the service), sent through which
 * provider (and on which attempt, when not the first), or failed (retried or given up, with the
 * provider's error). Undefined for events without an outcome (recorded before issue 13, or of
 * another type): those print DocuSeal's sentence.
 */
export function deliverySentence(type: string, data: Record<string, unknown> | null | undefined): string | undefined {
  if (!data || typeof data.provider !== 'string') return undefined;
  const sms = type.includes('sms');
  const what =
    type === 'send_reminder_email'
      ? 'Reminder email'
      : type === 'send_reminder_sms'
        ? 'Reminder SMS'
        : type === 'send_2fa_sms'
          ? 'Verification SMS'
          : sms
            ? 'SMS'
            : 'Email';
  const to = typeof data.to === 'string' && data.to ? ` to ${data.to}` : '';
  const attempt = typeof data.attempt === 'number' ? data.attempt : 1;
  const provider = PROVIDER_NAMES[data.provider] ?? data.provider;
  if (type.startsWith('send_')) {
    if (data.provider === 'outbox')
      return `${what}${to} kept, not sent: no ${sms ? 'SMS' : 'email'} provider configured`;
    return `${what} sent${to} via ${provider}${attempt > 1 ? ` on attempt ${attempt}` : ''}`;
  }
  if (type.startsWith('fail_')) {
    const error = typeof data.error === 'string' && data.error ? `: ${data.error}` : '';
    const max = typeof data.max_attempts === 'number' ? data.max_attempts : undefined;
    const of = max ? ` (attempt ${attempt} of ${max})` : ` (attempt ${attempt})`;
    const next =
      data.retrying === true
        ? '; will be retried'
        : typeof data.reason === 'string'
          ? `; not retried: ${data.reason}`
          : max !== undefined && attempt >= max
            ? '; given up'
            : '; refused, not retried';
    return `${what}${to} via ${provider} failed${of}${error}${next}`;
  }
  return undefined;
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
  const title = input.testing ? TESTING_AUDIT_LOG_TITLE : AUDIT_LOG_TITLE;
  const doc = await PDFDocument.create({ updateMetadata: false });
  registerFontkit(doc);
  const [regular, bold, mono] = await Promise.all([
    loadDejaVu('DejaVuSans'),
    loadDejaVu('DejaVuSans-Bold'),
    loadDejaVu('DejaVuSansMono'),
  ]);
  // pdf-lib would name each subset "<font>-<random number>"; a tag derived from the input keeps
  // the output reproducible and is the "ABCDEF+" form that marks a subset (ISO 32000-1 §9.6.4).
  const tag = subsetTag(input);
  const embedded = await Promise.all([
    embedDejaVu(doc, regular, { customName: `${tag}+DejaVuSans` }),
    embedDejaVu(doc, bold, { customName: `${tag}+DejaVuSans-Bold` }),
    embedDejaVu(doc, mono, { customName: `${tag}+DejaVuSansMono` }),
  ]);
  const widths = new Map<PDFFont, (text: string, size: number) => number>(embedded.map((e) => [e.pdfFont, e.width]));
  const fonts: Fonts = { regular: embedded[0].pdfFont, bold: embedded[1].pdfFont, mono: embedded[2].pdfFont };
  doc.setTitle(`${title} - Submission ${input.submissionId}`);
  doc.setAuthor(clean(input.accountName));
  doc.setCreator('Signet');
  doc.setProducer('Signet');
  doc.setCreationDate(input.generatedAt);
  doc.setModificationDate(input.generatedAt);

  const layout = new Layout(
    doc,
    fonts,
    (font, text, size) => widths.get(font)!(text, size),
    timeZone && US_TIME_ZONE.test(timeZone) ? LETTER : A4,
  );
  const time = (date: Date) => formatTime(date, timeZone);

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
      style: { font: fonts.bold, size: 7, color: MUTED, indent: 12, gapAfter: 1 },
    };
    const nameHeight = layout.height(name.text, name.style);
    const typed = value.typed === undefined ? undefined : `Typed: ${value.typed}`;
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
    const text = value.text ?? typed ?? (value.image ? 'Image not readable' : '');
    const style = { size: 10, indent: 12, gapAfter: 6 };
    // The name and the first line of its value stay on one page; a long value then runs on over pages.
    layout.keepTogether(nameHeight + lineHeight(10));
    layout.text(name.text, name.style);
    layout.paragraphs(text, style);
  };

  layout.text('Signet', { font: fonts.bold, size: 10, color: MUTED });
  layout.text(title, { font: fonts.bold, size: 20, gapAfter: 6 });
  layout.field('Submission ID', String(input.submissionId));
  layout.field('Account', input.accountName);
  layout.field('Generated at', time(input.generatedAt));
  if (timeZone) layout.field('Time zone', timeZone);
  if (input.auditChain)
    layout.field('Audit trail', chainHeadLine(input.auditChain.events, input.auditChain.head), {
      font: fonts.mono,
      size: 8,
    });

  layout.heading('Documents');
  if (input.documents.length === 0) layout.text('None', { color: MUTED });
  for (const document of input.documents) {
    layout.keepTogether(3 * 14 + 8);
    layout.text(document.name, { font: fonts.bold, size: 10.5, gapAfter: 2 });
    layout.field('Original SHA-256', document.originalSha256, { font: fonts.mono, size: 8.5 });
    layout.field('Final SHA-256', document.finalSha256, { font: fonts.mono, size: 8.5 });
    layout.space(6);
  }

  layout.heading('Parties');
  for (const party of input.parties) {
    layout.keepTogether(9 * 14);
    layout.text(party.role, { font: fonts.bold, size: 12, gapAfter: 4 });
    layout.field('Name', party.name);
    layout.field('Email', party.email);
    layout.field('Phone', party.phone);
    layout.field('IP', party.ip);
    layout.field('User agent', party.userAgent);
    layout.field('Completed at', party.completedAt ? time(party.completedAt) : 'Not completed');
    if (party.values && party.values.length > 0) {
      layout.space(4);
      layout.text('Values', { font: fonts.bold, size: 9.5, color: MUTED, gapAfter: 2 });
      for (const value of party.values) await drawValue(value);
    }
    layout.space(4);
    layout.text('Events', { font: fonts.bold, size: 9.5, color: MUTED, gapAfter: 2 });
    const events = [...party.events].sort((a, b) => a.at.getTime() - b.at.getTime());
    if (events.length === 0) layout.text('None', { size: 9, color: MUTED, indent: 12 });
    for (const event of events) {
      const label = eventSentence(event);
      const what = { text: `${time(event.at)}   ${label}`, style: { size: 9, indent: 12 } };
      const where = [event.ip ? `IP ${event.ip}` : '', event.userAgent ? `User agent ${event.userAgent}` : ''].filter(
        Boolean,
      );
      const details = { text: where.join(' · '), style: { size: 8, color: MUTED, indent: 24, gapAfter: 2 } };
      layout.keepTogether(
        layout.height(what.text, what.style) + (where.length > 0 ? layout.height(details.text, details.style) : 0),
      );
      layout.text(what.text, what.style);
      if (where.length > 0) layout.text(details.text, details.style);
    }
    layout.space(10);
  }

  layout.footers(`${title} · Submission ${input.submissionId}`);
  // In one go, without object streams (as drawValues saves): the signer loads it right after.
  return doc.save({ useObjectStreams: false, objectsPerTick: Number.POSITIVE_INFINITY });
}

/** Width in points of `text` in `font` at `size` (pdf-lib's widthOfTextAtSize, faster: src/documents/fonts.ts). */
type Measure = (font: PDFFont, text: string, size: number) => number;

interface Fonts {
  regular: PDFFont;
  bold: PDFFont;
  mono: PDFFont;
}

interface TextStyle {
  font?: PDFFont;
  /** Points. */
  size?: number;
  color?: ReturnType<typeof rgb>;
  /** Points from the left margin. */
  indent?: number;
  /** Points below the last line. */
  gapAfter?: number;
}

/** A top-to-bottom flow of wrapped lines over as many pages as it takes. */
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
  ) {
    this.width = pageSize[0] - 2 * MARGIN;
    this.page = doc.addPage(pageSize);
    this.y = pageSize[1] - MARGIN;
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
    this.text(text, { font: this.fonts.bold, size: 14, gapAfter: 2 });
    this.page.drawLine({
      start: { x: MARGIN, y: this.y + 2 },
      end: { x: MARGIN + this.width, y: this.y + 2 },
      thickness: 0.5,
      color: RULE,
    });
    this.space(8);
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

  /** A paragraph: wrapped to the width left of the indent. */
  text(text: string, style: TextStyle = {}): void {
    const font = style.font ?? this.fonts.regular;
    const size = style.size ?? 10;
    const indent = style.indent ?? 0;
    for (const line of this.wrap(clean(text), font, size, this.width - indent)) {
      this.line(size);
      this.page.drawText(line, { x: MARGIN + indent, y: this.y, font, size, color: style.color ?? INK });
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
    this.page.drawImage(image, {
      x: MARGIN + (options.indent ?? 0),
      y: this.y,
      width: options.width,
      height: options.height,
    });
    this.space(options.gapAfter ?? 0);
  }

  /** "Label   value" with the value wrapped in its column; "—" for a missing value. */
  field(label: string, value: string | null | undefined, style: TextStyle = {}): void {
    const font = style.font ?? this.fonts.regular;
    const size = style.size ?? 10;
    const lines = this.wrap(clean(value ?? '') || '—', font, size, this.width - LABEL_WIDTH);
    lines.forEach((line, i) => {
      this.line(10);
      if (i === 0) this.page.drawText(label, { x: MARGIN, y: this.y, font: this.fonts.regular, size: 9, color: MUTED });
      this.page.drawText(line, { x: MARGIN + LABEL_WIDTH, y: this.y, font, size, color: INK });
    });
    this.space(2);
  }

  /** Stamps "Page n of N" and `text` at the bottom of every page. */
  footers(text: string): void {
    const pages = this.doc.getPages();
    pages.forEach((page, i) => {
      const y = MARGIN - 12;
      page.drawText(clean(text), { x: MARGIN, y, font: this.fonts.regular, size: 8, color: MUTED });
      const number = `Page ${i + 1} of ${pages.length}`;
      const width = this.measure(this.fonts.regular, number, 8);
      page.drawText(number, { x: MARGIN + this.width - width, y, font: this.fonts.regular, size: 8, color: MUTED });
    });
  }

  /** Moves the cursor down one line of `size`, to a new page when the line would not fit. */
  private line(size: number): void {
    const height = lineHeight(size);
    if (this.y - height < MARGIN + FOOTER_HEIGHT) this.newPage();
    this.y -= height;
  }

  private wrap(text: string, font: PDFFont, size: number, width: number): string[] {
    return wrap(text, (s) => this.measure(font, s, size), width);
  }

  private newPage(): void {
    this.page = this.doc.addPage(this.pageSize);
    this.y = this.pageSize[1] - MARGIN;
  }
}

/** The sentence of an event: its delivery outcome when it has one, else DocuSeal's label, else the type alone. */
function eventSentence(event: AuditLogEvent): string {
  const delivery = deliverySentence(event.type, event.data);
  if (delivery) return `${delivery} (${event.type})`;
  const label = EVENT_LABELS[event.type];
  const reason =
    event.type === FAIL_COMPLETION && typeof event.data?.reason === 'string' ? `: ${event.data.reason}` : '';
  return label ? `${label}${reason} (${event.type})` : event.type;
}

const FAIL_COMPLETION = 'fail_completion';
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

/** Lines of at most `width` points (as `measure` gives them): breaks at spaces, and inside words longer than a line. */
function wrap(text: string, measure: (s: string) => number, width: number): string[] {
  const lines: string[] = [];
  let current = '';
  for (const word of text.split(' ')) {
    const candidate = current ? `${current} ${word}` : word;
    if (measure(candidate) <= width) {
      current = candidate;
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

/** "2026-11-21T17:30:05Z", plus " (2026-11-21 18:30:05 GMT+01:00)" in a zone other than UTC. */
function formatTime(date: Date, timeZone: string | undefined): string {
  const utc = `${date.toISOString().slice(0, 19)}Z`;
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
