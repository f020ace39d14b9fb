/**
 * The Gotenberg 8 renderer: HTML through the Chromium module
 * (`POST {url}/forms/chromium/convert/html`), DOCX through the LibreOffice module
 * (`POST {url}/forms/libreoffice/convert`), both multipart/form-data with the files under the
 * `files` field (gotenberg.dev/docs, "Convert with Chromium" / "Convert with LibreOffice").
 *
 * A small client on Node's fetch and FormData instead of gotenberg-js-client, which targets
 * Gotenberg 6's routes (/convert/html, /convert/office), cannot pass Gotenberg 8's fields without
 * casts, has no timeout, and reports errors as bare strings (docs/rendering.md).
 */
import { AppError } from '../errors.ts';
import { prepareHtml, type Margins } from './html-document.ts';
import { readFieldAreas } from './html-field-tags.ts';
import { formatSeconds } from './limits.ts';
import { officeExtension } from './office-document.ts';
import type { DocxToPdfInput, HtmlFieldTag, HtmlToPdfInput, RenderLogger, Renderer } from './types.ts';

export interface GotenbergRendererOptions {
  /** Base URL, e.g. http://gotenberg:3000 (no trailing slash needed). */
  url: string;
  /** Deadline per request, in milliseconds. */
  timeout: number;
  logger: RenderLogger;
}

/** Gotenberg's numbers are inches; four decimals is finer than a device pixel. */
const inches = (value: number) => String(Number(value.toFixed(4)));

export class GotenbergRenderer implements Renderer {
  readonly name = 'gotenberg';
  private readonly options: GotenbergRendererOptions;
  private readonly baseUrl: string;

  constructor(options: GotenbergRendererOptions) {
    this.options = options;
    this.baseUrl = options.url.replace(/\/+$/, '');
  }

  /**
   * Prints HTML with Gotenberg's Chromium. The form: files index.html (and header.html,
   * footer.html when given); paperWidth, paperHeight, marginTop/Bottom/Left/Right in inches;
   * printBackground=true, preferCssPageSize=false, skipNetworkIdleEvent=true (the document loads
   * nothing). Field areas come from the marker links, as locally.
   * @throws AppError VALIDATION for bad field tags or a 4xx answer; UNAVAILABLE when Gotenberg is
   *   unreachable, answers 5xx or not a PDF, or takes longer than the deadline.
   */
  async htmlToPdf(input: HtmlToPdfInput): Promise<{ pdf: Buffer; fields: HtmlFieldTag[] }> {
    const prepared = prepareHtml(input);
    const form = new FormData();
    form.append('files', new Blob([prepared.document], { type: 'text/html' }), 'index.html');
    if (prepared.header !== undefined)
      form.append('files', new Blob([prepared.header], { type: 'text/html' }), 'header.html');
    if (prepared.footer !== undefined)
      form.append('files', new Blob([prepared.footer], { type: 'text/html' }), 'footer.html');
    appendLayout(form, prepared.width, prepared.height, prepared.margins);
    form.append('printBackground', 'true');
    form.append('preferCssPageSize', 'false');
    form.append('skipNetworkIdleEvent', 'true');
    const pdf = await this.post('/forms/chromium/convert/html', form, 'HTML');
    return readFieldAreas(pdf, prepared.tags, prepared.markerPrefix);
  }

  /**
   * Converts a DOCX with Gotenberg's LibreOffice: file `document.docx` (or .doc/.odt/.rtf by the
   * filename's extension) and exportFormFields=false, so content controls stay text. The bytes
   * were checked by createRenderer (assertOfficeDocument: no zip bomb reaches Gotenberg).
   * @throws AppError VALIDATION for a 4xx answer; UNAVAILABLE as for htmlToPdf.
   */
  async docxToPdf(input: DocxToPdfInput): Promise<Buffer> {
    const form = new FormData();
    form.append('files', new Blob([new Uint8Array(input.docx)]), `document.${officeExtension(input.filename)}`);
    form.append('exportFormFields', 'false');
    return this.post('/forms/libreoffice/convert', form, 'DOCX');
  }

  async close(): Promise<void> {
    // Stateless: fetch's connections close on their own.
  }

  /** POSTs a form and returns the PDF, mapping every failure to an AppError. */
  private async post(route: string, form: FormData, what: 'HTML' | 'DOCX'): Promise<Buffer> {
    const url = this.baseUrl + route;
    const started = performance.now();
    let response: Response;
    let body: Buffer;
    try {
      // One signal for the whole exchange, so a server that stalls mid-body times out too.
      const signal = AbortSignal.timeout(this.options.timeout);
      response = await fetch(url, { method: 'POST', body: form, signal });
      body = Buffer.from(await response.arrayBuffer());
    } catch (error) {
      const name = error instanceof Error ? error.name : '';
      if (name === 'TimeoutError' || name === 'AbortError') {
        throw new AppError(
          'UNAVAILABLE',
          `Gotenberg did not convert the ${what} within ${formatSeconds(this.options.timeout)} (${url}).`,
          {
            details: { reason: 'timeout' },
            cause: error,
          },
        );
      }
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
      throw new AppError('UNAVAILABLE', `Gotenberg at ${this.baseUrl} is unreachable: ${cause}.`, { cause: error });
    }
    const ms = Math.round(performance.now() - started);
    if (response.status >= 200 && response.status < 300) {
      if (body.subarray(0, 5).toString('latin1') !== '%PDF-') {
        this.options.logger.warn(
          { url, status: response.status, contentType: response.headers.get('content-type') },
          'gotenberg answered without a PDF',
        );
        throw new AppError('UNAVAILABLE', `Gotenberg answered ${route} without a PDF.`);
      }
      this.options.logger.debug({ url, ms, bytes: body.length }, 'gotenberg converted');
      return body;
    }
    // Gotenberg's error bodies are short plain text ("Chromium does not handle …").
    const message = body.toString('utf8', 0, Math.min(body.length, 300)).trim();
    this.options.logger.warn({ url, status: response.status, ms, message }, 'gotenberg refused a conversion');
    if (response.status >= 400 && response.status < 500) {
      throw new AppError(
        'VALIDATION',
        `The ${what} could not be converted to PDF: ${message || `Gotenberg answered ${response.status}`}.`,
        {
          details: { gotenbergStatus: response.status },
        },
      );
    }
    throw new AppError(
      'UNAVAILABLE',
      `Gotenberg failed to convert the ${what} (${response.status}${message ? `: ${message}` : ''}).`,
      {
        details: { gotenbergStatus: response.status },
      },
    );
  }
}

function appendLayout(form: FormData, width: number, height: number, margins: Margins): void {
  form.append('paperWidth', inches(width));
  form.append('paperHeight', inches(height));
  form.append('marginTop', inches(margins.top));
  form.append('marginBottom', inches(margins.bottom));
  form.append('marginLeft', inches(margins.left));
  form.append('marginRight', inches(margins.right));
}
