/**
 * The local renderer: HTML with the Chromium of the machine driven by playwright-core, DOCX with
 * LibreOffice (`soffice --headless --convert-to pdf`). Each engine is looked up when a
 * conversion first needs it, so HTML works without LibreOffice and DOCX without Chromium.
 *
 * User HTML gets no network and no file access: JavaScript is off, the context is offline, every
 * request the page makes is aborted (only the document given to setContent loads), and the
 * document carries a Content-Security-Policy that blocks all fetches (html-document.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { AppError } from '../errors.ts';
import { prepareHtml } from './html-document.ts';
import { officeExtension } from './office-document.ts';
import { readFieldAreas } from './html-field-tags.ts';
import { formatSeconds, withDeadline } from './limits.ts';
import type { DocxToPdfInput, HtmlFieldTag, HtmlToPdfInput, RenderLogger, Renderer } from './types.ts';

/** Flags for a headless Chromium that runs as root in a container and phones nobody. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
  '--disable-dev-shm-usage',
];

const CHROMIUM_NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'];
const SOFFICE_NAMES = ['soffice', 'libreoffice'];

/**
 * LibreOffice's PDF export with form-field export off, so Word content controls stay text in the
 * text layer, where the text-tag scanner looks (as Gotenberg's exportFormFields=false). The JSON
 * filter options need LibreOffice ≥ 7.4.
 */
const SOFFICE_PDF_FILTER = 'pdf:writer_pdf_Export:{"ExportFormFields":{"type":"boolean","value":"false"}}';

interface OpenedPage {
  context: BrowserContext;
  page: Page;
}

export interface LocalRendererOptions {
  /** CHROMIUM_PATH: a path, or a name looked up on PATH; default: chromium, chromium-browser, google-chrome. */
  chromiumPath?: string | undefined;
  /** SOFFICE_PATH: a path or a name; default: soffice, libreoffice on PATH. */
  sofficePath?: string | undefined;
  /**
   * SOFFICE_MAX_MEMORY_MB in bytes: the address space (`ulimit -v`) of each soffice process and
   * its children; undefined: no limit. A second wall behind the archive checks of
   * office-document.ts: a document that still needs more memory fails with a 422.
   */
  sofficeMaxMemory?: number | undefined;
  /** Deadline per conversion, in milliseconds. */
  timeout: number;
  logger: RenderLogger;
}

export class LocalRenderer implements Renderer {
  readonly name = 'local';
  private readonly options: LocalRendererOptions;
  private browser: Promise<Browser> | undefined;
  /**
   * A context and page opened ahead for the next render: a new page costs ~250 ms (a renderer
   * process starts), which this takes off the request. Each render still gets a fresh context.
   */
  private spare: Promise<OpenedPage> | undefined;
  /** LibreOffice profiles not in use; a profile serves one soffice at a time and is reused (a new one costs ~3 s). */
  private readonly idleProfiles: string[] = [];
  private readonly profiles = new Set<string>();
  private readonly children = new Set<ChildProcess>();
  private closed = false;

  constructor(options: LocalRendererOptions) {
    this.options = options;
  }

  /**
   * Prints HTML with Chromium (see Renderer.htmlToPdf). Field areas come from the marker links
   * (html-field-tags.ts).
   * @throws AppError VALIDATION for bad field tags; UNAVAILABLE when Chromium is missing, does not
   *   start, or the conversion takes longer than the deadline.
   */
  async htmlToPdf(input: HtmlToPdfInput): Promise<{ pdf: Buffer; fields: HtmlFieldTag[] }> {
    this.assertOpen();
    const prepared = prepareHtml(input);
    const executable = await this.findChromium();
    let context: BrowserContext | undefined;
    const started = performance.now();
    const result = await withDeadline(
      async (signal) => {
        const browser = await this.launchBrowser(executable);
        if (signal.aborted) throw signal.reason;
        const opened = await this.takePage(browser);
        context = opened.context;
        try {
          if (signal.aborted) throw signal.reason;
          const page = opened.page;
          await page.setContent(prepared.document, { waitUntil: 'load', timeout: this.options.timeout });
          if (signal.aborted) throw signal.reason;
          const bands = prepared.header !== undefined || prepared.footer !== undefined;
          const pdf = await page.pdf({
            width: `${prepared.width}in`,
            height: `${prepared.height}in`,
            printBackground: true,
            preferCSSPageSize: false,
            margin: {
              top: `${prepared.margins.top}in`,
              right: `${prepared.margins.right}in`,
              bottom: `${prepared.margins.bottom}in`,
              left: `${prepared.margins.left}in`,
            },
            displayHeaderFooter: bands,
            // Chromium's default bands print the date, title and URL; an empty span prints nothing.
            ...(bands
              ? {
                  headerTemplate: prepared.header ?? '<span></span>',
                  footerTemplate: prepared.footer ?? '<span></span>',
                }
              : {}),
          });
          if (signal.aborted) throw signal.reason;
          return await readFieldAreas(pdf, prepared.tags, prepared.markerPrefix);
        } finally {
          await opened.context.close().catch(() => {});
          if (!signal.aborted) this.prepareSpare(browser);
        }
      },
      {
        timeoutMs: this.options.timeout,
        message: `Rendering the HTML took longer than ${formatSeconds(this.options.timeout)}.`,
        onTimeout: () => this.abandon(context),
      },
    );
    this.options.logger.debug(
      { ms: Math.round(performance.now() - started), fields: result.fields.length },
      'html rendered',
    );
    return result;
  }

  /**
   * Converts a DOCX (or .doc/.odt/.rtf, by the filename's extension) with LibreOffice; see
   * Renderer.docxToPdf; the bytes were checked by createRenderer (assertOfficeDocument). The
   * soffice process group is killed at the deadline and the temporary files removed either way.
   * @throws AppError VALIDATION when LibreOffice makes no PDF of the bytes (or runs out of the
   *   memory SOFFICE_MAX_MEMORY_MB allows); UNAVAILABLE when LibreOffice is missing or too slow.
   */
  async docxToPdf(input: DocxToPdfInput): Promise<Buffer> {
    this.assertOpen();
    const extension = officeExtension(input.filename);
    const soffice = await this.findSoffice();
    const profile = this.idleProfiles.pop() ?? (await this.newProfile());
    let profileHealthy = false;
    let work: string | undefined;
    const started = performance.now();
    try {
      work = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-docx-'));
      const source = path.join(work, `document.${extension}`);
      const outDir = path.join(work, 'out');
      await fs.writeFile(source, input.docx);
      const run = await this.runSoffice(soffice, [
        `-env:UserInstallation=${pathToFileURL(profile).href}`,
        '--headless',
        '--invisible',
        '--norestore',
        '--nologo',
        '--nodefault',
        '--nolockcheck',
        '--convert-to',
        SOFFICE_PDF_FILTER,
        '--outdir',
        outDir,
        source,
      ]);
      profileHealthy = true;
      const pdf = await fs.readFile(path.join(outDir, 'document.pdf')).catch(() => undefined);
      if (pdf?.subarray(0, 5).toString('latin1') !== '%PDF-') {
        this.options.logger.warn(
          { filename: input.filename, code: run.code, signal: run.signal, stderr: run.stderr },
          'soffice made no PDF',
        );
        const name = input.filename || 'The document';
        const limit = this.options.sofficeMaxMemory;
        if (limit !== undefined && ranOutOfMemory(run)) {
          throw new AppError(
            'VALIDATION',
            `${name} could not be converted to PDF: LibreOffice ran out of memory (limit ` +
              `${Math.round(limit / 1024 / 1024)} MB, SOFFICE_MAX_MEMORY_MB).`,
            { details: { limit: 'SOFFICE_MAX_MEMORY_MB', maxBytes: limit } },
          );
        }
        throw new AppError('VALIDATION', `${name} could not be converted to PDF; is it a valid Word document?`);
      }
      this.options.logger.debug({ ms: Math.round(performance.now() - started), bytes: pdf.length }, 'docx converted');
      return pdf;
    } finally {
      if (profileHealthy && !this.closed) this.idleProfiles.push(profile);
      else void this.dropProfile(profile);
      if (work) await fs.rm(work, { recursive: true, force: true }).catch(() => {});
    }
  }

  /** Closes the browser, kills running soffice processes, removes the LibreOffice profiles. */
  async close(): Promise<void> {
    this.closed = true;
    for (const child of this.children) killGroup(child);
    const spare = this.spare;
    this.spare = undefined;
    await spare?.then((opened) => opened.context.close()).catch(() => {});
    const browser = this.browser;
    this.browser = undefined;
    await browser?.then((b) => b.close()).catch(() => {});
    await Promise.all([...this.profiles].map((p) => this.dropProfile(p)));
  }

  private assertOpen(): void {
    if (this.closed) throw new AppError('UNAVAILABLE', 'The renderer is shut down.');
  }

  private async findChromium(): Promise<string> {
    const configured = this.options.chromiumPath;
    const found = await findExecutable(configured ? [configured] : CHROMIUM_NAMES);
    if (found) return found;
    throw new AppError(
      'UNAVAILABLE',
      'HTML templates need Chromium: install the chromium package or set GOTENBERG_URL' +
        (configured
          ? ` (CHROMIUM_PATH=${configured} is not an executable).`
          : ` (none of ${CHROMIUM_NAMES.join(', ')} is on PATH).`),
      { details: { missing: 'chromium' } },
    );
  }

  private async findSoffice(): Promise<string> {
    const configured = this.options.sofficePath;
    const found = await findExecutable(configured ? [configured] : SOFFICE_NAMES);
    if (found) return found;
    throw new AppError(
      'UNAVAILABLE',
      'DOCX templates need LibreOffice: install the libreoffice-writer-nogui package or set GOTENBERG_URL' +
        (configured
          ? ` (SOFFICE_PATH=${configured} is not an executable).`
          : ` (neither ${SOFFICE_NAMES.join(' nor ')} is on PATH).`),
      { details: { missing: 'libreoffice' } },
    );
  }

  /** One browser per renderer, started on first use and again after a crash. */
  private launchBrowser(executablePath: string): Promise<Browser> {
    if (!this.browser) {
      // playwright-core is loaded on the first HTML render only: it costs ~80 MB of memory, which
      // a service that never renders HTML should not carry (bench/README.md, idle RSS).
      const launching = import('playwright-core')
        .then(({ chromium }) =>
          chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS, timeout: this.options.timeout }),
        )
        .then(
          (browser) => {
            browser.on('disconnected', () => {
              if (this.browser === launching) this.browser = undefined;
            });
            this.options.logger.info({ executablePath, version: browser.version() }, 'chromium started');
            return browser;
          },
          (error: unknown) => {
            if (this.browser === launching) this.browser = undefined;
            const reason = error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error);
            throw new AppError('UNAVAILABLE', `Chromium (${executablePath}) could not start: ${reason}`, {
              cause: error,
            });
          },
        );
      this.browser = launching;
    }
    return this.browser;
  }

  /** A fresh offline, script-less context whose every request is aborted, with one page. */
  private async openPage(browser: Browser): Promise<OpenedPage> {
    const context = await browser.newContext({
      javaScriptEnabled: false,
      offline: true,
      serviceWorkers: 'block',
      acceptDownloads: false,
    });
    try {
      // setContent writes the document into about:blank; nothing it refers to may load.
      await context.route('**/*', (route) => route.abort());
      return { context, page: await context.newPage() };
    } catch (error) {
      await context.close().catch(() => {});
      throw error;
    }
  }

  /** The spare page when it is alive and of this browser, else a new one. */
  private async takePage(browser: Browser): Promise<OpenedPage> {
    const spare = this.spare;
    this.spare = undefined;
    const opened = spare ? await spare.catch(() => undefined) : undefined;
    if (opened && browser.isConnected() && opened.context.browser() === browser && !opened.page.isClosed())
      return opened;
    if (opened) await opened.context.close().catch(() => {});
    return this.openPage(browser);
  }

  /** Opens the next render's page in the background, unless one is waiting already. */
  private prepareSpare(browser: Browser): void {
    if (this.spare || this.closed || !browser.isConnected()) return;
    const spare = this.openPage(browser);
    spare.catch(() => {
      if (this.spare === spare) this.spare = undefined;
    });
    this.spare = spare;
  }

  /**
   * After a timeout: close the render's context; if Chromium does not answer within 5 s, drop the
   * whole browser. Before the context exists there is nothing to close: the render stops at its
   * next step and closes its own context.
   */
  private async abandon(context: BrowserContext | undefined): Promise<void> {
    if (!context) return;
    const closed = await Promise.race([
      context.close().then(
        () => true,
        () => false,
      ),
      sleep(5000).then(() => false),
    ]);
    if (closed || !this.browser) return;
    const browser = this.browser;
    this.browser = undefined;
    this.options.logger.warn('chromium did not answer after a render timeout; restarting it on next use');
    await browser.then((b) => b.close()).catch(() => {});
  }

  private async newProfile(): Promise<string> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-soffice-profile-'));
    this.profiles.add(dir);
    return dir;
  }

  private async dropProfile(dir: string): Promise<void> {
    this.profiles.delete(dir);
    const idle = this.idleProfiles.indexOf(dir);
    if (idle >= 0) this.idleProfiles.splice(idle, 1);
    await fs.rm(dir, { recursive: true, force: true }).catch(() => {});
  }

  /**
   * Runs soffice in its own process group, killed (with its children) at the deadline, under
   * `ulimit -v` when sofficeMaxMemory is set: a shell sets the limit and execs soffice, so the
   * limit holds for soffice and every process it starts (oosplash, soffice.bin).
   */
  private runSoffice(executable: string, args: string[]): Promise<SofficeRun> {
    const timeout = this.options.timeout;
    const limit = this.options.sofficeMaxMemory;
    const [command, commandArgs] =
      limit === undefined
        ? [executable, args]
        : [
            '/bin/sh',
            [
              '-c',
              'ulimit -v "$1" || exit 125; shift; exec "$@"',
              'signet-soffice',
              String(Math.floor(limit / 1024)),
              executable,
              ...args,
            ],
          ];
    return new Promise((resolve, reject) => {
      let child: ChildProcess;
      try {
        child = spawn(command, commandArgs, {
          detached: true,
          stdio: ['ignore', 'ignore', 'pipe'],
          env: { ...process.env, SAL_USE_VCLPLUGIN: 'svp' },
        });
      } catch (error) {
        reject(
          new AppError('UNAVAILABLE', `LibreOffice (${executable}) could not start: ${String(error)}`, {
            cause: error,
          }),
        );
        return;
      }
      this.children.add(child);
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        if (stderr.length < 4000) stderr += chunk.toString('utf8');
      });
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup(child);
      }, timeout);
      child.once('error', (error) => {
        clearTimeout(timer);
        this.children.delete(child);
        reject(
          new AppError('UNAVAILABLE', `LibreOffice (${executable}) could not start: ${error.message}`, {
            cause: error,
          }),
        );
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        this.children.delete(child);
        if (timedOut) {
          reject(
            new AppError('UNAVAILABLE', `Converting the DOCX took longer than ${formatSeconds(timeout)}.`, {
              details: { reason: 'timeout' },
            }),
          );
        } else if (this.closed) {
          reject(new AppError('UNAVAILABLE', 'The renderer is shut down.'));
        } else {
          resolve({ code, signal, stderr: stderr.trim() });
        }
      });
    });
  }
}

interface SofficeRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/**
 * Signs that soffice hit its address-space limit rather than a bad document: an allocation or a
 * library mapping refused (glibc, the dynamic loader, C++'s bad_alloc), or an abort/crash signal.
 * LibreOffice sometimes reports the refusal only as "source file could not be loaded", which a
 * corrupt file gives too; that case keeps the generic message.
 */
function ranOutOfMemory(run: SofficeRun): boolean {
  if (run.signal === 'SIGABRT' || run.signal === 'SIGSEGV' || run.signal === 'SIGBUS') return true;
  return /bad_alloc|out of memory|cannot allocate memory|failed to map segment/i.test(run.stderr);
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL'); // soffice → oosplash → soffice.bin all share the group
  } catch {
    child.kill('SIGKILL');
  }
}

/**
 * The first of `candidates` that is an executable file: a candidate with a slash is a path,
 * others are looked up on PATH. Checked on every call, so installing an engine needs no restart.
 */
export async function findExecutable(candidates: string[]): Promise<string | undefined> {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  for (const candidate of candidates) {
    const paths = candidate.includes('/') ? [path.resolve(candidate)] : dirs.map((dir) => path.join(dir, candidate));
    for (const file of paths) {
      try {
        await fs.access(file, fsConstants.X_OK);
        if ((await fs.stat(file)).isFile()) return file;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
