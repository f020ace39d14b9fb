/**
 * HTML field tags (`<text-field>`, `<signature-field>`, … — reference/docuseal-behaviour.md §12.4):
 * found and validated in the user's HTML before anything renders, then marked so that their
 * rendered boxes can be read back from the PDF (see readFieldAreas and docs/rendering.md).
 *
 * The marker: right after each field's start tag goes an absolutely positioned inline SVG that
 * fills the field's box and holds an SVG link to `<prefix><index>`. Chromium writes every link it
 * paints as a PDF link annotation whose /Rect is the painted box in page space, after page
 * breaks, margins and scaling — in the same Chromium inside Gotenberg too. The prefix carries a
 * random nonce per render, so the user's own links can neither match nor fake one.
 */
import type { PDFArray, PDFDict } from 'pdf-lib';
import { AppError } from '../errors.ts';
import type { HtmlFieldTag, HtmlFieldType } from './types.ts';
import { HTML_FIELD_TYPES } from './types.ts';

/** A field tag as written in the HTML, before layout. */
export type ParsedFieldTag = Omit<HtmlFieldTag, 'area'> & {
  /** `<text-field name="Industry">`, for messages. */
  label: string;
};

/** Types whose value is picked from `options` (as for the API's fields, src/field-types.ts OPTION_FIELD_TYPES). */
const OPTION_TYPES: ReadonlySet<string> = new Set(['select', 'radio', 'multiple']);

/**
 * Default size of a field element the HTML gives no width or height, in CSS px. It only applies
 * where no author rule sets one (the rule has zero specificity); DocuSeal's examples always
 * set both, so this only rescues bare tags.
 */
const DEFAULT_SIZES: Record<HtmlFieldType, [number, number]> = {
  text: [160, 24],
  number: [100, 24],
  phone: [160, 24],
  date: [120, 24],
  datenow: [120, 24],
  select: [160, 24],
  cells: [200, 24],
  payment: [160, 24],
  signature: [200, 60],
  initials: [80, 40],
  stamp: [160, 80],
  image: [160, 120],
  file: [160, 40],
  checkbox: [16, 16],
  radio: [160, 48],
  multiple: [160, 48],
};

/** Elements whose content the HTML parser does not read as markup. */
const RAW_TEXT_ELEMENTS = new Set(['script', 'style', 'xmp', 'iframe', 'noembed', 'noframes', 'textarea', 'title']);

interface StartTag {
  name: string;
  /** First occurrence wins, as in the HTML parser; names lower-cased, values decoded. */
  attributes: Record<string, string>;
  /** Offset of `<` and just past `>`. */
  start: number;
  end: number;
  selfClosing: boolean;
}

/**
 * Finds the start tags of an HTML string the way the HTML tokenizer splits them (comments,
 * doctype, raw-text elements skipped; quoted attribute values may hold `>`), calling `visit` for
 * each. Enough for finding custom elements; not a full parser (no foreign-content or script
 * escape states).
 */
function scanStartTags(html: string, visit: (tag: StartTag) => void): void {
  const length = html.length;
  let i = 0;
  while (i < length) {
    const lt = html.indexOf('<', i);
    if (lt < 0) return;
    const next = html[lt + 1] ?? '';
    if (html.startsWith('<!--', lt)) {
      if (html.startsWith('<!-->', lt)) i = lt + 5;
      else if (html.startsWith('<!--->', lt)) i = lt + 6;
      else {
        const close = html.indexOf('-->', lt + 4);
        i = close < 0 ? length : close + 3;
      }
      continue;
    }
    if (next === '!' || next === '?') {
      const close = html.indexOf('>', lt + 2);
      i = close < 0 ? length : close + 1;
      continue;
    }
    const isEnd = next === '/';
    const nameStart = isEnd ? lt + 2 : lt + 1;
    if (!/[A-Za-z]/.test(html[nameStart] ?? '')) {
      i = lt + 1; // a literal "<"
      continue;
    }
    const tag = readTag(html, lt, nameStart);
    if (!tag) return; // EOF inside a tag: the parser drops it, and so does the rest
    i = tag.end;
    if (isEnd) continue;
    visit(tag);
    if (RAW_TEXT_ELEMENTS.has(tag.name)) {
      const closing = new RegExp(`</${tag.name}[\\s/>]`, 'ig');
      closing.lastIndex = tag.end;
      const match = closing.exec(html);
      i = match ? match.index : length;
    } else if (tag.name === 'plaintext') {
      return;
    }
  }
}

function readTag(html: string, lt: number, nameStart: number): StartTag | null {
  const length = html.length;
  let i = nameStart;
  while (i < length && !/[\s/>]/.test(html[i]!)) i++;
  const name = html.slice(nameStart, i).toLowerCase();
  const attributes: Record<string, string> = {};
  let selfClosing = false;
  while (i < length) {
    const c = html[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === '>') return { name, attributes, start: lt, end: i + 1, selfClosing };
    if (c === '/') {
      selfClosing = html[i + 1] === '>';
      i++;
      continue;
    }
    selfClosing = false;
    const attrStart = i;
    i++; // the first character may be "="
    while (i < length && !/[\s/>=]/.test(html[i]!)) i++;
    const attrName = html.slice(attrStart, i).toLowerCase();
    while (i < length && /\s/.test(html[i]!)) i++;
    let value = '';
    if (html[i] === '=') {
      i++;
      while (i < length && /\s/.test(html[i]!)) i++;
      const quote = html[i];
      if (quote === '"' || quote === "'") {
        const close = html.indexOf(quote, i + 1);
        if (close < 0) return null;
        value = html.slice(i + 1, close);
        i = close + 1;
      } else {
        const valueStart = i;
        while (i < length && !/[\s>]/.test(html[i]!)) i++;
        value = html.slice(valueStart, i);
      }
    }
    if (!(attrName in attributes)) attributes[attrName] = decodeEntities(value);
  }
  return null;
}

const NAMED_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/** Numeric references and the common named ones; other named references stay as written. */
function decodeEntities(value: string): string {
  return value.replace(/&(#[0-9]+|#[xX][0-9a-fA-F]+|[a-zA-Z]+);?/g, (whole, ref: string) => {
    if (ref.startsWith('#')) {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : '\ufffd';
    }
    return NAMED_ENTITIES[ref] ?? whole;
  });
}

const escapeAttribute = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

function labelOf(tag: StartTag): string {
  const name = tag.attributes.name;
  return name ? `<${tag.name} name="${name}">` : `<${tag.name}>`;
}

function parseBoolean(tag: StartTag, attribute: 'required' | 'readonly', fallback: boolean): boolean {
  const raw = tag.attributes[attribute];
  if (raw === undefined) return fallback;
  const value = raw.trim().toLowerCase();
  // A bare attribute (`<text-field readonly>`) or one repeating its name is true, as in HTML.
  if (value === '' || value === attribute || value === 'true' || value === '1' || value === 'yes') return true;
  if (value === 'false' || value === '0' || value === 'no') return false;
  throw new AppError('VALIDATION', `${labelOf(tag)}: ${attribute}="${raw}" is not a boolean; use true or false.`, {
    details: { element: labelOf(tag), attribute },
  });
}

function toFieldTag(tag: StartTag): ParsedFieldTag {
  const label = labelOf(tag);
  const type = tag.name.slice(0, -'-field'.length);
  if (!(HTML_FIELD_TYPES as readonly string[]).includes(type)) {
    throw new AppError(
      'VALIDATION',
      `Unknown field tag <${tag.name}>: use one of ${HTML_FIELD_TYPES.map((t) => `<${t}-field>`).join(', ')}.`,
      { details: { element: `<${tag.name}>` } },
    );
  }
  const a = tag.attributes;
  const role = a.role?.trim() || undefined;
  const submitter = a.submitter?.trim() || undefined; // the earlier shape's name for role
  if (role && submitter && role !== submitter) {
    throw new AppError(
      'VALIDATION',
      `${label}: role="${role}" and submitter="${submitter}" disagree; give only role.`,
      {
        details: { element: label, attribute: 'submitter' },
      },
    );
  }
  let options: string[] | undefined;
  if (a.options !== undefined) {
    if (!OPTION_TYPES.has(type)) {
      throw new AppError('VALIDATION', `${label}: options are only for select, radio and multiple fields.`, {
        details: { element: label, attribute: 'options' },
      });
    }
    options = a.options
      .split(',')
      .map((o) => o.trim())
      .filter((o) => o !== '');
  }
  return {
    name: a.name?.trim() ?? '',
    type,
    ...(role || submitter ? { role: role ?? submitter } : {}),
    required: parseBoolean(tag, 'required', true),
    readonly: parseBoolean(tag, 'readonly', false),
    ...(a.default !== undefined ? { defaultValue: a.default } : {}),
    ...(options ? { options } : {}),
    attributes: { ...a },
    label,
  };
}

function markerHtml(href: string): string {
  // Inline !important beats any author rule, so user CSS cannot hide or move the marker.
  const box =
    'position:absolute!important;left:0!important;top:0!important;width:100%!important;height:100%!important;' +
    'display:block!important;visibility:visible!important;opacity:1!important;overflow:visible!important;' +
    'margin:0!important;padding:0!important;border:0!important;transform:none!important';
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" aria-hidden="true" style="${box}">` +
    `<a href="${escapeAttribute(href)}" style="display:inline!important;visibility:visible!important">` +
    '<rect x="0" y="0" width="100%" height="100%" fill="none" stroke="none" ' +
    'style="display:inline!important"/></a></svg>'
  );
}

/**
 * Default styles for field elements, at zero specificity so any author rule wins: an
 * inline-block (custom elements are inline, where width and height do nothing), kept on one
 * page, positioned so the marker can fill it, and a default size per type.
 */
export function fieldTagStyles(): string {
  const all = HTML_FIELD_TYPES.map((t) => `${t}-field`).join(',');
  const sizes = HTML_FIELD_TYPES.map(
    (t) => `:where(${t}-field){width:${DEFAULT_SIZES[t][0]}px;height:${DEFAULT_SIZES[t][1]}px}`,
  ).join('');
  const box =
    'display:inline-block;position:relative;box-sizing:border-box;break-inside:avoid;page-break-inside:avoid;' +
    'vertical-align:baseline';
  return `:where(${all}){${box}}${sizes}`;
}

/**
 * Finds and validates the field tags of `html` and returns it with a marker inside each.
 * `<x-field … />` is closed explicitly (HTML ignores the slash and would nest what follows).
 * @param markerPrefix the URL prefix of this render's markers (with a random nonce).
 * @returns the rewritten HTML and the tags in document order (index = marker number).
 * @throws AppError VALIDATION naming the element: an unknown `<*-field>` type, a required or
 *   readonly value that is not a boolean, options on a type without options, role and submitter
 *   that disagree.
 */
export function markFieldTags(html: string, markerPrefix: string): { html: string; tags: ParsedFieldTag[] } {
  const tags: ParsedFieldTag[] = [];
  const parts: string[] = [];
  let copied = 0;
  scanStartTags(html, (tag) => {
    if (!tag.name.endsWith('-field') || tag.name.length <= '-field'.length) return;
    const index = tags.length;
    tags.push(toFieldTag(tag));
    if (tag.selfClosing) {
      const slash = html.lastIndexOf('/', tag.end - 1);
      parts.push(html.slice(copied, slash), '>', markerHtml(markerPrefix + index), `</${tag.name}>`);
    } else {
      parts.push(html.slice(copied, tag.end), markerHtml(markerPrefix + index));
    }
    copied = tag.end;
  });
  parts.push(html.slice(copied));
  return { html: parts.join(''), tags };
}

/**
 * Throws when `html` (a header or footer) holds field tags: Chromium paints headers and footers
 * outside the document, so their boxes cannot be found, and a field there would repeat per page.
 * @throws AppError VALIDATION naming the first tag and `what` ("html_header").
 */
export function rejectFieldTags(html: string, what: string): void {
  scanStartTags(html, (tag) => {
    if (tag.name.endsWith('-field') && tag.name.length > '-field'.length) {
      throw new AppError(
        'VALIDATION',
        `${what} cannot hold field tags (${labelOf(tag)}); put fields in the body html.`,
        {
          details: { element: labelOf(tag) },
        },
      );
    }
  });
}

/**
 * Removes elements the renderer must not act on before parsing: `<meta http-equiv="refresh">`
 * (a navigation that Content-Security-Policy does not stop). Returns the HTML otherwise as is.
 */
export function stripRefreshMeta(html: string): string {
  const cut: Array<[number, number]> = [];
  scanStartTags(html, (tag) => {
    if (tag.name === 'meta' && (tag.attributes['http-equiv'] ?? '').trim().toLowerCase() === 'refresh') {
      cut.push([tag.start, tag.end]);
    }
  });
  if (cut.length === 0) return html;
  let out = '';
  let at = 0;
  for (const [start, end] of cut) {
    out += html.slice(at, start);
    at = end;
  }
  return out + html.slice(at);
}

/**
 * Reads the marker links out of a rendered PDF, turns each into its field's area, and removes
 * them (the user's own links stay). A field split over pages takes its largest box.
 * @param pdf the PDF Chromium printed from markFieldTags' HTML.
 * @returns the PDF without the markers, and the fields in document order with `area` as
 *   fractions (0..1) of the page's crop box, y from the top, `page` 0-based (DESIGN.md, "area
 *   coordinates").
 * @throws AppError VALIDATION naming the element when a field has no painted box (hidden,
 *   inside a hidden parent or `<template>`, or zero width or height).
 */
export async function readFieldAreas(
  pdf: Uint8Array,
  tags: ParsedFieldTag[],
  markerPrefix: string,
): Promise<{ pdf: Buffer; fields: HtmlFieldTag[] }> {
  // pdf-lib is loaded on first use: ~20 MB an idle service need not hold.
  const lib = await import('pdf-lib');
  const { PDFArray, PDFDict, PDFDocument, PDFName, PDFNumber, PDFRef } = lib;
  const doc = await PDFDocument.load(pdf, { updateMetadata: false });
  const found = new Map<number, { page: number; x: number; y: number; w: number; h: number; size: number }>();
  let removed = 0;
  doc.getPages().forEach((page, pageIndex) => {
    const annots = page.node.lookupMaybe(PDFName.of('Annots'), PDFArray);
    if (!annots) return;
    const box = page.getCropBox();
    const keep: Array<ReturnType<PDFArray['get']>> = [];
    for (let i = 0; i < annots.size(); i++) {
      const entry = annots.get(i);
      const dict =
        entry instanceof PDFRef
          ? doc.context.lookupMaybe(entry, PDFDict)
          : entry instanceof PDFDict
            ? entry
            : undefined;
      const uri = dict ? linkUri(lib, dict) : undefined;
      const index = uri?.startsWith(markerPrefix) ? Number(uri.slice(markerPrefix.length)) : NaN;
      if (!dict || !Number.isInteger(index) || index < 0 || index >= tags.length) {
        keep.push(entry);
        continue;
      }
      const rect = dict.lookupMaybe(PDFName.of('Rect'), PDFArray);
      const n = rect ? [0, 1, 2, 3].map((k) => rect.lookupMaybe(k, PDFNumber)?.asNumber() ?? NaN) : [];
      if (n.length === 4 && n.every(Number.isFinite)) {
        const [x1, y1, x2, y2] = [
          Math.min(n[0]!, n[2]!),
          Math.min(n[1]!, n[3]!),
          Math.max(n[0]!, n[2]!),
          Math.max(n[1]!, n[3]!),
        ];
        const area = {
          page: pageIndex,
          x: (x1 - box.x) / box.width,
          y: (box.y + box.height - y2) / box.height,
          w: (x2 - x1) / box.width,
          h: (y2 - y1) / box.height,
          size: (x2 - x1) * (y2 - y1),
        };
        const previous = found.get(index);
        if (!previous || area.size > previous.size) found.set(index, area);
      }
      const action = dict.get(PDFName.of('A'));
      if (action instanceof PDFRef) doc.context.delete(action);
      if (entry instanceof PDFRef) doc.context.delete(entry);
      removed += 1;
    }
    if (keep.length === annots.size()) return;
    if (keep.length === 0) page.node.delete(PDFName.of('Annots'));
    else page.node.set(PDFName.of('Annots'), doc.context.obj(keep));
  });

  const fields = tags.map((tag, index): HtmlFieldTag => {
    const area = found.get(index);
    if (!area || area.w <= 0 || area.h <= 0) {
      throw new AppError(
        'VALIDATION',
        `${tag.label} has no box on any page: give it a CSS width and height, and do not hide it (display: none, ` +
          `visibility: hidden, <template>).`,
        { details: { element: tag.label } },
      );
    }
    const { label: _label, ...field } = tag;
    return { ...field, area: { page: area.page, x: area.x, y: area.y, w: area.w, h: area.h } };
  });
  const out = removed > 0 ? Buffer.from(await doc.save({ useObjectStreams: false })) : Buffer.from(pdf);
  return { pdf: out, fields };
}

function linkUri(lib: typeof import('pdf-lib'), annot: PDFDict): string | undefined {
  const { PDFDict, PDFHexString, PDFName, PDFString } = lib;
  if (annot.lookupMaybe(PDFName.of('Subtype'), PDFName) !== PDFName.of('Link')) return undefined;
  const action = annot.lookupMaybe(PDFName.of('A'), PDFDict);
  const uri = action?.lookup(PDFName.of('URI'));
  return uri instanceof PDFString || uri instanceof PDFHexString ? uri.decodeText() : undefined;
}
