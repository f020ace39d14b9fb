/**
 * What both renderers send to Chromium for an HTML template: the body document (field tags
 * marked, no network, standards mode), the header and footer documents, and the page layout.
 * One place, so that Gotenberg and the local Chromium print the same thing.
 */
import { randomBytes } from 'node:crypto';
import {
  markFieldTags,
  fieldTagStyles,
  rejectFieldTags,
  stripRefreshMeta,
  type ParsedFieldTag,
} from './html-field-tags.ts';
import { PAPER_SIZES, type PaperSize } from './types.ts';

/** Page margins, in inches. */
export interface Margins {
  top: number;
  right: number;
  bottom: number;
  left: number;
}

export interface PreparedHtml {
  /** The complete body document. */
  document: string;
  /** Complete header/footer documents, when given; Chromium repeats them on every page. */
  header: string | undefined;
  footer: string | undefined;
  /** Paper size, in inches. */
  width: number;
  height: number;
  margins: Margins;
  tags: ParsedFieldTag[];
  /** Marker link prefix of this render (random per call). */
  markerPrefix: string;
}

/**
 * Margin on every side, in inches. Half an inch is a whole number of points (36) and CSS px
 * (48): Chromium rounds other margins (0.4 in lays out at 37 px, not 38.4).
 */
export const PAGE_MARGIN_IN = 0.5;
/** Top (bottom) margin when there is a header (footer), in inches: the band the header is painted in. */
export const HEADER_BAND_IN = 1;

/**
 * Blocks every fetch the document could make: images, styles, fonts, frames, objects, media,
 * scripts (inline ones too), form posts and `<base>`. `data:` stays allowed for images and fonts,
 * which is how HTML templates carry them. A `<meta>` policy applies from where it stands, so it
 * goes first.
 */
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; base-uri 'none'; form-action 'none'";

const HEAD = `<meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${CONTENT_SECURITY_POLICY}">`;

/**
 * Prepares an HTML template for printing.
 * - A leading `<!doctype …>` (after optional comments and whitespace) is kept; without one,
 *   `<!doctype html>` is added so the document lays out in standards mode, not quirks mode.
 * - The charset, the Content-Security-Policy and the field-tag default styles go right after it.
 * - Field tags are validated and marked (markFieldTags).
 * @param input.size paper size (PAPER_SIZES, points → inches here).
 * @throws AppError VALIDATION for bad field tags, or field tags in the header or footer.
 */
export function prepareHtml(input: {
  html: string;
  header?: string | undefined;
  footer?: string | undefined;
  size: PaperSize;
}): PreparedHtml {
  const markerPrefix = `https://fields.signet.invalid/${randomBytes(12).toString('hex')}/`;
  const { html, tags } = markFieldTags(stripRefreshMeta(input.html), markerPrefix);
  const doctype = /^(?:\s|<!--[\s\S]*?-->)*<!doctype[^>]*>/i.exec(html);
  const prefix = doctype ? doctype[0] : '<!doctype html>';
  const rest = doctype ? html.slice(doctype[0].length) : html;
  const document = `${prefix}${HEAD}<style>${fieldTagStyles()}</style>${rest}`;

  const header = input.header?.trim() ? input.header : undefined;
  const footer = input.footer?.trim() ? input.footer : undefined;
  if (header) rejectFieldTags(header, 'html_header');
  if (footer) rejectFieldTags(footer, 'html_footer');

  const paper = PAPER_SIZES[input.size];
  return {
    document,
    header: header ? bandDocument(header, 'header') : undefined,
    footer: footer ? bandDocument(footer, 'footer') : undefined,
    width: paper.width / 72,
    height: paper.height / 72,
    margins: {
      top: header ? HEADER_BAND_IN : PAGE_MARGIN_IN,
      right: PAGE_MARGIN_IN,
      bottom: footer ? HEADER_BAND_IN : PAGE_MARGIN_IN,
      left: PAGE_MARGIN_IN,
    },
    tags,
    markerPrefix,
  };
}

/**
 * A header or footer as a complete document. Chromium paints it in the page's top (bottom)
 * margin with no default font size worth having, so it gets 12px and the page's side margins;
 * `<span class="pageNumber">` and `<span class="totalPages">` are filled in by Chromium.
 */
function bandDocument(html: string, band: 'header' | 'footer'): string {
  const padding = band === 'header' ? `0.25in ${PAGE_MARGIN_IN}in 0` : `0 ${PAGE_MARGIN_IN}in 0.25in`;
  return (
    `<!doctype html><html><head>${HEAD}</head><body style="margin:0">` +
    `<div style="box-sizing:border-box;width:100%;padding:${padding}` +
    `;font-size:12px;-webkit-print-color-adjust:exact;print-color-adjust:exact">` +
    `${stripRefreshMeta(html)}</div></body></html>`
  );
}
