/**
 * HTML and DOCX → PDF behind one interface (DESIGN.md, "Components"): Gotenberg 8 when
 * GOTENBERG_URL is set, otherwise the local Chromium (HTML) and LibreOffice (DOCX). Every
 * conversion runs under a concurrency limit (RENDER_CONCURRENCY) and a deadline
 * (RENDER_TIMEOUT_SECONDS). docs/rendering.md explains the choices.
 */
import type { Config } from '../config.ts';
import { GotenbergRenderer } from './gotenberg-renderer.ts';
import { createLimiter } from './limits.ts';
import { LocalRenderer } from './local-renderer.ts';
import { assertOfficeDocument } from './office-document.ts';
import type { RenderLogger, Renderer } from './types.ts';

export * from './types.ts';

/**
 * The renderer the configuration asks for: Gotenberg 8 at `config.gotenbergUrl` when set,
 * otherwise the local Chromium and LibreOffice (found lazily, per method: HTML works without
 * LibreOffice and DOCX without Chromium). Both run at most `config.renderConcurrency`
 * conversions at once (the others wait) and give each `config.renderTimeout` ms. A DOCX is checked
 * before it waits for its turn (`assertOfficeDocument`: an office document, within
 * `config.docxLimits`), so neither engine ever sees a zip bomb; the local LibreOffice also runs
 * under `config.sofficeMaxMemory`.
 */
export function createRenderer(
  config: Pick<
    Config,
    | 'gotenbergUrl'
    | 'chromiumPath'
    | 'sofficePath'
    | 'renderTimeout'
    | 'renderConcurrency'
    | 'docxLimits'
    | 'sofficeMaxMemory'
  >,
  logger: RenderLogger,
): Renderer {
  const inner: Renderer = config.gotenbergUrl
    ? new GotenbergRenderer({ url: config.gotenbergUrl, timeout: config.renderTimeout, logger })
    : new LocalRenderer({
        chromiumPath: config.chromiumPath,
        sofficePath: config.sofficePath,
        sofficeMaxMemory: config.sofficeMaxMemory,
        timeout: config.renderTimeout,
        logger,
      });
  const limiter = createLimiter(config.renderConcurrency);
  return {
    name: inner.name,
    htmlToPdf: (input) => limiter.run(() => inner.htmlToPdf(input)),
    docxToPdf: async (input) => {
      await assertOfficeDocument(input.docx, input.filename, config.docxLimits, input.owner ?? 'system');
      return limiter.run(() => inner.docxToPdf(input));
    },
    close: () => inner.close(),
  };
}
