/**
 * The signer's web page (docs/signing-form.md "The page"):
 *
 * - `GET /s/:slug` — the HTML shell of the signing form; a friendly 404 page for an unknown slug.
 * - `GET /s-assets/form.js`, `/s-assets/form.css` — the page's script and styles, bundled by esbuild
 *   from src/signing-form/page/ on first request and kept in memory (the same code under tsx and
 *   from dist/main.mjs, since both run from the project folder).
 * - `GET /s-assets/chunks/<name>-<hash>.js` — parts of the page's script it imports only when
 *   needed (esbuild code splitting): the pattern checker with re2js, for forms with a
 *   `validation.pattern`. Named by their content's hash, so cached for good.
 * - `GET /s-assets/pdfjs-<version>/<dir>/<file>` — pdf.js (`pdfjs-dist`): its build and worker and
 *   the data it fetches (standard fonts, CMaps, WASM decoders, ICC profiles).
 * - `GET /s-assets/fonts/<file>` — the script font for typed signatures (`@fontsource/dancing-script`).
 * - `GET /d/:slug` — a shared template's link (docs/embedding.md "Template links"): the same page,
 *   which asks for the signer's email (or takes the embedded form's) and starts the signer's
 *   submission (src/signing-form/start-template-form.ts); the 404 page unless the template is
 *   shared (`shared_link`) and neither it nor its account is archived.
 * - `GET /js/form.js` — the embedded signing form, `<signet-form>` (also `<docuseal-form>`), a
 *   classic script other sites include (DocuSeal's embed script path; src/signing-form/embed/),
 *   bundled by esbuild on first request like the page.
 *
 * Everything the page loads comes from here: no external requests. The HTML carries a
 * Content-Security-Policy allowing only this origin (plus data:/blob: where pdf.js and canvases
 * need them) and, when EMBED_ORIGINS lists origins, `frame-ancestors 'self'` and those: only
 * their pages may embed the form (signingPageCsp). `Referrer-Policy: no-referrer` keeps the slug
 * (a capability) out of other sites' logs.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../db/client.ts';
import { directionOf, type LanguageCode } from '../i18n/languages.ts';
import { pageMessages, translator } from '../i18n/messages.ts';
import { type SignerLanguageRecord, type SignerLanguageRequest, signerLanguage } from '../i18n/signer-language.ts';
import { PROJECT_ROOT } from '../paths.ts';

/** Where the page's client code lives (bundled at run time). */
const PAGE_DIR = path.join(PROJECT_ROOT, 'src', 'signing-form', 'page');

const requireFromHere = createRequire(import.meta.url);
const PDFJS_DIR = path.dirname(requireFromHere.resolve('pdfjs-dist/package.json'));
const PDFJS_VERSION = (requireFromHere('pdfjs-dist/package.json') as { version: string }).version;
const FONT_DIR = path.join(path.dirname(requireFromHere.resolve('@fontsource/dancing-script/package.json')), 'files');

/** URL prefix of pdf.js' files; versioned, so they can be cached for good. */
export const PDFJS_BASE = `/s-assets/pdfjs-${PDFJS_VERSION}`;

/** pdf.js folders the page may load from, and the files in them it may ask for. */
const PDFJS_FILES: Record<string, RegExp> = {
  build: /^pdf(\.worker)?\.min\.mjs$/,
  standard_fonts: /^[\w-]+\.(pfb|ttf)$/,
  cmaps: /^[\w-]+\.bcmap$/,
  wasm: /^[\w-]+\.(wasm|js)$/,
  iccs: /^[\w-]+\.icc$/,
};

const CONTENT_TYPES: Record<string, string> = {
  '.mjs': 'text/javascript; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.ttf': 'font/ttf',
  '.pfb': 'application/octet-stream',
  '.bcmap': 'application/octet-stream',
  '.icc': 'application/vnd.iccprofile',
};

/**
 * The page's policy: this origin only; data:/blob: for canvases, images and pdf.js' worker and
 * fonts; WebAssembly for pdf.js' image decoders. Who may frame it: with EMBED_ORIGINS `*` (the
 * default) no `frame-ancestors`, so any site may, as before; with a list, `frame-ancestors 'self'`
 * and those origins (CSP Level 2; browsers then refuse to show the page in any other site's frame).
 * @param embedOrigins config.embedOrigins: `['*']` or origins as browsers send them
 */
export function signingPageCsp(embedOrigins: readonly string[]): string {
  return [
    "default-src 'self'",
    "script-src 'self' 'wasm-unsafe-eval'",
    "style-src 'self'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self' data: blob:",
    "worker-src 'self' blob:",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    ...(embedOrigins.includes('*') ? [] : [`frame-ancestors 'self' ${embedOrigins.join(' ')}`]),
  ].join('; ');
}

/** Slugs as Signet makes them; anything else cannot be a form (answered with the 404 page). */
const SLUG_PATTERN = /^[A-Za-z0-9_-]{1,100}$/;

interface Bundle {
  js: Buffer;
  css: Buffer;
  etag: string;
  /** The lazily imported chunks by file name (`field-pattern-<hash>.js`). */
  chunks: Map<string, Buffer>;
}

/** Built on first use and kept; a failed build is tried again on the next request. */
function lazily<T>(build: () => Promise<T>): () => Promise<T> {
  let built: Promise<T> | undefined;
  return () => {
    built ??= build().catch((error: unknown) => {
      built = undefined;
      throw error;
    });
    return built;
  };
}

/**
 * Registers the page's routes on the app.
 * @param options.db to tell a known slug (the shell) from an unknown one (404 page)
 * @param options.maxUploadBytes the upload limit of POST /api/attachments, which the page checks
 *   before sending a file (config.maxBodySize)
 * @param options.embedOrigins config.embedOrigins (EMBED_ORIGINS): the pages' `frame-ancestors`,
 *   and where the page posts its events when framed (docs/embedding.md)
 */
export function registerSigningPageRoutes(
  fastify: FastifyInstance,
  options: { db: Db; maxUploadBytes: number; embedOrigins: readonly string[] },
): void {
  const { db } = options;
  const loadBundle = lazily(bundlePage);
  const loadEmbedScript = lazily(bundleEmbedScript);
  const csp = signingPageCsp(options.embedOrigins);
  const pageHeaders = (reply: FastifyReply) =>
    reply
      .header('content-security-policy', csp)
      .header('referrer-policy', 'no-referrer')
      .header('x-content-type-options', 'nosniff')
      .header('x-robots-tag', 'noindex, nofollow')
      .header('cache-control', 'no-store');
  const embedTargets = options.embedOrigins.join(' ');
  const shell = (
    reply: FastifyReply,
    log: FastifyBaseLogger,
    language: LanguageCode,
    data: Record<string, string | number>,
  ) => {
    // Start bundling while the browser parses the shell: its script request finds it ready.
    loadBundle().catch((error: unknown) => log.error({ err: error }, 'signing page: bundling failed'));
    return reply
      .type('text/html; charset=utf-8')
      .send(
        shellPage(language, { ...data, 'max-upload-bytes': options.maxUploadBytes, 'embed-origins': embedTargets }),
      );
  };
  const notFound = (reply: FastifyReply, language: LanguageCode) =>
    reply.code(404).type('text/html; charset=utf-8').send(notFoundPage(language));

  fastify.get<{ Params: { slug: string }; Querystring: { lang?: unknown } }>('/s/:slug', async (request, reply) => {
    const { slug } = request.params;
    const asked = pageRequest(request);
    const submitter = SLUG_PATTERN.test(slug)
      ? await db.submitter.findUnique({
          where: { slug },
          select: {
            language: true,
            metadata: true,
            submission: { select: { language: true } },
            account: { select: { preferences: true } },
          },
        })
      : null;
    pageHeaders(reply);
    if (!submitter) return notFound(reply, signerLanguage(NO_RECORD, asked));
    const record = { submitter, submission: submitter.submission, account: submitter.account };
    const language = signerLanguage(record, asked);
    // The documents are drawn in the party's stored language (no page request: the completion has
    // none); the page shows dates and numbers in it, as the signed PDF prints them.
    return shell(reply, request.log, language, { slug, 'values-language': signerLanguage(record) });
  });

  fastify.get<{ Params: { slug: string }; Querystring: { lang?: unknown } }>('/d/:slug', async (request, reply) => {
    const { slug } = request.params;
    const asked = pageRequest(request);
    // Shared, and neither it nor its account archived: src/signing-form/start-template-form.ts, which
    // judges the start itself again.
    const template = SLUG_PATTERN.test(slug)
      ? await db.template.findFirst({
          where: { slug, sharedLink: true, archivedAt: null, account: { archivedAt: null } },
          select: { name: true, account: { select: { preferences: true } } },
        })
      : null;
    pageHeaders(reply);
    if (!template) return notFound(reply, signerLanguage(NO_RECORD, asked));
    const language = signerLanguage({ ...NO_RECORD, account: template.account }, asked);
    return shell(reply, request.log, language, { 'template-slug': slug, 'template-name': template.name });
  });

  for (const [name, kind] of [
    ['form.js', 'js'],
    ['form.css', 'css'],
  ] as const) {
    fastify.get(`/s-assets/${name}`, async (request, reply) => {
      const built = await loadBundle();
      reply.header('x-content-type-options', 'nosniff').header('cache-control', 'no-cache').header('etag', built.etag);
      if (request.headers['if-none-match'] === built.etag) return reply.code(304).send();
      return reply.type(kind === 'js' ? CONTENT_TYPES['.js']! : CONTENT_TYPES['.css']!).send(built[kind]);
    });
  }

  fastify.get<{ Params: { file: string } }>('/s-assets/chunks/:file', async (request, reply) => {
    const chunk = (await loadBundle()).chunks.get(request.params.file);
    reply.header('x-content-type-options', 'nosniff');
    if (!chunk) return reply.code(404).type('text/plain; charset=utf-8').send('Not found');
    return reply.type(CONTENT_TYPES['.js']!).header('cache-control', 'public, max-age=31536000, immutable').send(chunk);
  });

  // Other sites include it (`<script src>`, or as a module, which needs CORS): public code, no credentials.
  fastify.get('/js/form.js', async (request, reply) => {
    const built = await loadEmbedScript();
    reply
      .header('x-content-type-options', 'nosniff')
      .header('access-control-allow-origin', '*')
      .header('cross-origin-resource-policy', 'cross-origin')
      .header('cache-control', 'no-cache')
      .header('etag', built.etag);
    if (request.headers['if-none-match'] === built.etag) return reply.code(304).send();
    return reply.type(CONTENT_TYPES['.js']!).send(built.js);
  });

  fastify.get<{ Params: { dir: string; file: string } }>(`${PDFJS_BASE}/:dir/:file`, async (request, reply) => {
    const { dir, file } = request.params;
    const allowed = Object.hasOwn(PDFJS_FILES, dir) && PDFJS_FILES[dir]!.test(file);
    return sendPackageFile(reply, allowed ? path.join(PDFJS_DIR, dir, file) : undefined);
  });

  fastify.get<{ Params: { file: string } }>('/s-assets/fonts/:file', async (request, reply) => {
    const { file } = request.params;
    const allowed = /^dancing-script-[\w-]+\.woff2?$/.test(file);
    return sendPackageFile(reply, allowed ? path.join(FONT_DIR, file) : undefined);
  });
}

/** Streams a file of an installed package (immutable: its URL carries the version); 404 otherwise. */
async function sendPackageFile(reply: FastifyReply, file: string | undefined): Promise<FastifyReply> {
  reply.header('x-content-type-options', 'nosniff');
  const info = file ? await stat(file).catch(() => undefined) : undefined;
  if (!file || !info?.isFile()) return reply.code(404).type('text/plain; charset=utf-8').send('Not found');
  return reply
    .type(CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream')
    .header('content-length', info.size)
    .header('cache-control', 'public, max-age=31536000, immutable')
    .send(createReadStream(file));
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * What a page request says of the signer's language: the link's `?lang=` (the embedded form
 * passes its `data-language` so) and Accept-Language (src/i18n/signer-language.ts).
 */
function pageRequest(request: FastifyRequest<{ Querystring: { lang?: unknown } }>): SignerLanguageRequest {
  const lang = request.query.lang;
  return {
    requested: typeof lang === 'string' ? lang : null,
    acceptLanguage: request.headers['accept-language'] ?? null,
  };
}

/** No stored language: an unknown slug's page, a template link before its submission exists. */
const NO_RECORD: SignerLanguageRecord = { submitter: {}, submission: {}, account: {} };

/**
 * The JSON of the page's texts (pageMessages) inside a `<script type="application/json">`: `<`
 * written as `\u003c`, so no text can close the script element (HTML's "script data" state).
 */
function messagesScript(language: LanguageCode): string {
  let script = messageScripts.get(language);
  if (!script) {
    const json = JSON.stringify(pageMessages(language)).replace(/</g, '\\u003c');
    script = `<script type="application/json" id="signet-messages">${json}</script>\n`;
    messageScripts.set(language, script);
  }
  return script;
}

/** messagesScript's answers, once per language (the message files are part of the bundle: fixed). */
const messageScripts = new Map<LanguageCode, string>();

function htmlPage(language: LanguageCode, title: string, head: string, body: string): string {
  return `<!doctype html>
<html lang="${language}" dir="${directionOf(language)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex, nofollow">
<link rel="icon" href="data:,">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/s-assets/form.css">
${head}</head>
<body>
${body}
</body>
</html>
`;
}

/**
 * The page's shell: its script reads the `data-*` attributes of #signing-form (`slug` of a signer's
 * form and `values-language`, the language its documents print dates and numbers in, or
 * `template-slug` and `template-name` of a template link; `max-upload-bytes`;
 * `embed-origins`, EMBED_ORIGINS joined by spaces).
 */
function shellPage(language: LanguageCode, data: Record<string, string | number>): string {
  const t = translator(language, 'form');
  const attributes = Object.entries(data)
    .map(([name, value]) => ` data-${name}="${escapeHtml(String(value))}"`)
    .join('');
  return htmlPage(
    language,
    t('shell.title'),
    `${messagesScript(language)}<script type="module" src="/s-assets/form.js"></script>\n`,
    `<main id="signing-form" class="signing-form"${attributes}>
<p class="loading" role="status">${escapeHtml(t('shell.loading'))}</p>
<noscript><p class="state-message">${escapeHtml(t('shell.noScript'))}</p></noscript>
</main>`,
  );
}

function notFoundPage(language: LanguageCode): string {
  const t = translator(language, 'form');
  return htmlPage(
    language,
    t('notFound.title'),
    '',
    `<main class="signing-form not-found">
<section class="state">
<h1>${escapeHtml(t('notFound.title'))}</h1>
<p>${escapeHtml(t('notFound.text'))}</p>
</section>
</main>`,
  );
}

/** Where the bundle's files would be written (they are kept in memory): chunks are under `chunks/`. */
const PAGE_OUT_DIR = 'signing-page';

/**
 * Bundles the page's script and styles (esbuild, loaded on first use), split: what the page
 * imports with `import()` (the pattern checker) goes into chunks of its own, which the script
 * fetches from `./chunks/` — /s-assets/chunks/, this origin, as the CSP allows.
 */
async function bundlePage(): Promise<Bundle> {
  const { build } = await import('esbuild');
  const result = await build({
    absWorkingDir: PROJECT_ROOT,
    entryPoints: { form: path.join(PAGE_DIR, 'main.ts') },
    outdir: PAGE_OUT_DIR,
    chunkNames: 'chunks/[name]-[hash]',
    write: false,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome109', 'firefox115', 'safari16'],
    minify: true,
    legalComments: 'eof',
    logLevel: 'silent',
    define: { PDFJS_BASE: JSON.stringify(PDFJS_BASE) },
    // Served by the routes above, not bundled: pdf.js (loaded on demand by the page) and fonts.
    external: ['/s-assets/*'],
    plugins: [
      {
        name: 'pdfjs-from-signet',
        setup(pluginBuild) {
          pluginBuild.onResolve({ filter: /^pdfjs-dist$/ }, () => ({
            path: `${PDFJS_BASE}/build/pdf.min.mjs`,
            external: true,
          }));
        },
      },
    ],
  });
  const outDir = path.join(PROJECT_ROOT, PAGE_OUT_DIR);
  const named = (name: string) => result.outputFiles.find((f) => f.path === path.join(outDir, name));
  const js = named('form.js');
  const css = named('form.css');
  if (!js || !css) throw new Error('signing page bundle: esbuild produced no script or no styles');
  const chunks = new Map<string, Buffer>();
  for (const file of result.outputFiles) {
    const relative = path.relative(outDir, file.path);
    if (relative.startsWith(`chunks${path.sep}`) && relative.endsWith('.js'))
      chunks.set(path.basename(relative), Buffer.from(file.contents));
  }
  const hash = createHash('sha256').update(js.contents).update(css.contents).digest('base64url').slice(0, 22);
  return { js: Buffer.from(js.contents), css: Buffer.from(css.contents), etag: `"${hash}"`, chunks };
}

/** Where the embedded form's client code lives (bundled at run time, as the page's). */
const EMBED_DIR = path.join(PROJECT_ROOT, 'src', 'signing-form', 'embed');

/**
 * Bundles the embedded form's script (esbuild, loaded on first use): a classic script (IIFE), as
 * sites include DocuSeal's `<script src=".../js/form.js">`, for the browsers the page supports.
 */
async function bundleEmbedScript(): Promise<{ js: Buffer; etag: string }> {
  const { build } = await import('esbuild');
  const result = await build({
    absWorkingDir: PROJECT_ROOT,
    entryPoints: [path.join(EMBED_DIR, 'form.ts')],
    write: false,
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: ['chrome109', 'firefox115', 'safari16'],
    minify: true,
    legalComments: 'eof',
    logLevel: 'silent',
  });
  const js = result.outputFiles[0];
  if (!js) throw new Error('embedded form bundle: esbuild produced no script');
  const hash = createHash('sha256').update(js.contents).digest('base64url').slice(0, 22);
  return { js: Buffer.from(js.contents), etag: `"${hash}"` };
}
