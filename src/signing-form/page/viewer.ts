/**
 * The documents, page by page: each page is a box with the page's aspect ratio (known from the
 * form before any PDF is read), so fields can be laid over it at once; pdf.js draws the page onto
 * a canvas in the box when it comes near the viewport, and again when the box gets wider.
 */
import type * as PdfJs from 'pdfjs-dist';
import { sameOriginUrl } from './api.ts';
import { h } from './dom.ts';
import { t } from './i18n.ts';
import type { SigningFormDocument } from './types.ts';

/** Where Signet serves pdf.js (page-routes.ts, set at bundling). */
declare const PDFJS_BASE: string;

let pdfjsModule: Promise<typeof PdfJs> | undefined;
function loadPdfJs(): Promise<typeof PdfJs> {
  pdfjsModule ??= (import('pdfjs-dist') as Promise<typeof PdfJs>).then((pdfjs) => {
    pdfjs.GlobalWorkerOptions.workerSrc = `${PDFJS_BASE}/build/pdf.worker.min.mjs`;
    return pdfjs;
  });
  return pdfjsModule;
}

/** One displayed page: its box (fields are placed inside it) and where it comes from. */
export interface PageView {
  element: HTMLElement;
  document: SigningFormDocument;
  /** 0-based. */
  index: number;
}

/**
 * Builds a section per document with a box per page, and starts drawing pages as they scroll into
 * view. Returns the boxes by document uuid and page index.
 */
export function renderDocuments(container: HTMLElement, documents: SigningFormDocument[]): Map<string, PageView[]> {
  const views = new Map<string, PageView[]>();
  const loaders = new Map<string, Promise<PdfJs.PDFDocumentProxy>>();
  const loadDocument = (document: SigningFormDocument) => {
    let loading = loaders.get(document.uuid);
    if (!loading) {
      loading = loadPdfJs().then(
        (pdfjs) =>
          pdfjs.getDocument({
            url: sameOriginUrl(document.url),
            isEvalSupported: false,
            enableXfa: false,
            cMapUrl: `${PDFJS_BASE}/cmaps/`,
            cMapPacked: true,
            standardFontDataUrl: `${PDFJS_BASE}/standard_fonts/`,
            wasmUrl: `${PDFJS_BASE}/wasm/`,
            iccUrl: `${PDFJS_BASE}/iccs/`,
          }).promise,
      );
      loaders.set(document.uuid, loading);
    }
    return loading;
  };

  const drawn = new WeakMap<HTMLElement, number>();
  const drawing = new WeakSet<HTMLElement>();
  const draw = async (view: PageView) => {
    const box = view.element;
    const width = box.clientWidth;
    const wanted = Math.round(width * window.devicePixelRatio);
    if (width === 0 || drawing.has(box) || (drawn.get(box) ?? 0) >= wanted) return;
    drawing.add(box);
    try {
      const pdf = await loadDocument(view.document);
      const page = await pdf.getPage(view.index + 1);
      const base = page.getViewport({ scale: 1 });
      const viewport = page.getViewport({ scale: wanted / base.width });
      const canvas = h('canvas', { className: 'page-canvas' });
      canvas.setAttribute('aria-hidden', 'true');
      canvas.width = Math.floor(viewport.width);
      canvas.height = Math.floor(viewport.height);
      await page.render({ canvas, viewport }).promise;
      box.querySelector('canvas.page-canvas')?.remove();
      box.prepend(canvas);
      drawn.set(box, wanted);
      box.dataset.rendered = 'true';
    } catch (error) {
      box.dataset.rendered = 'error';
      box.querySelector('.page-error')?.remove();
      box.prepend(h('p', { className: 'page-error' }, t('viewer.pageError')));
      console.error('signing form: page rendering failed', error);
    } finally {
      drawing.delete(box);
    }
  };

  const visible = new Set<PageView>();
  const byElement = new Map<Element, PageView>();
  const observer = new IntersectionObserver(
    (entries) => {
      for (const entry of entries) {
        const view = byElement.get(entry.target)!;
        if (entry.isIntersecting) {
          visible.add(view);
          void draw(view);
        } else {
          visible.delete(view);
        }
      }
    },
    { rootMargin: '100% 0px' },
  );
  let resizeTimer: number | undefined;
  window.addEventListener('resize', () => {
    window.clearTimeout(resizeTimer);
    resizeTimer = window.setTimeout(() => visible.forEach((view) => void draw(view)), 200);
  });

  for (const document of documents) {
    const pages: PageView[] = [];
    const section = h('section', { className: 'document' });
    section.setAttribute('aria-label', document.name);
    section.append(h('h2', { className: 'document-name' }, document.name));
    document.pages.forEach((size, index) => {
      const element = h('div', { className: 'page' });
      element.dataset.documentUuid = document.uuid;
      element.dataset.page = String(index);
      element.style.aspectRatio = `${size.width} / ${size.height}`;
      // Field text sizes are given in cqw of the page box (points / page width).
      element.style.setProperty('--page-width-pt', String(size.width));
      element.setAttribute('role', 'group');
      element.setAttribute(
        'aria-label',
        t('viewer.page', { document: document.name, page: index + 1, pages: document.pages.length }),
      );
      const view: PageView = { element, document, index };
      pages.push(view);
      byElement.set(element, view);
      section.append(element);
      observer.observe(element);
    });
    views.set(document.uuid, pages);
    container.append(section);
  }
  return views;
}
