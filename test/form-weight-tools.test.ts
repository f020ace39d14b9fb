/**
 * The signing form's measuring tools cannot silently break (issue 24 §5, §6):
 * - bench/signing-form-weight.ts: every route of the page is classified as page-routes.ts serves
 *   it, pdf.js and the PDF stay out of the first load, and a figure over a budget is reported over
 *   (which makes the bench exit 1);
 * - scripts/form-screenshots.ts: state names are unique file names, every state the docs show has a
 *   PNG in docs/signing-form/ for both viewports, and docs/signing-form.md links exactly the PNGs
 *   that exist.
 * No service, no browser: the bench and the script themselves are run by hand (bench/README.md,
 * docs/signing-form.md "How it looks").
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BUDGETS,
  bytesByKind,
  checkBudgets,
  FIRST_LOAD_KINDS,
  type Kind,
  kindOf,
} from '../bench/signing-form-weight.ts';
import { MissingUi, STATES } from '../scripts/form-screenshots.ts';

const base = 'http://127.0.0.1:3000';

describe('the weight bench', () => {
  it('classifies the page’s requests by route', () => {
    const cases: [string, Kind][] = [
      ['/s/AbC123_-x', 'html shell'],
      ['/s-assets/form.js', 'form js'],
      ['/s-assets/chunk-ABCD.js', 'form js'],
      ['/s-assets/form.css', 'form css'],
      ['/s-assets/fonts/dancing-script-latin-400-normal.woff2', 'fonts'],
      ['/s-assets/pdfjs-5.6.205/build/pdf.min.mjs', 'pdf.js'],
      ['/s-assets/pdfjs-5.6.205/build/pdf.worker.min.mjs', 'pdf.js worker'],
      ['/s-assets/pdfjs-5.6.205/cmaps/UniJIS-UCS2-H.bcmap', 'pdf.js data'],
      ['/s-assets/pdfjs-5.6.205/standard_fonts/FoxitSans.pfb', 'pdf.js data'],
      ['/graphql', 'api (graphql)'],
      ['/file/eyJpZCI6IjEifQ--sig/Sample.pdf', 'pdf (document)'],
    ];
    for (const [route, kind] of cases) expect(kindOf(`${base}${route}`, 'AbC123_-x'), route).toBe(kind);
    expect(FIRST_LOAD_KINDS).toEqual(['html shell', 'form js', 'form css', 'fonts']);
  });

  it('judges gzip sizes and the slower viewport against the budgets; one byte over is over', () => {
    const body = (bytes: number) => Buffer.from(Array.from({ length: bytes }, (_, i) => (i * 7919) % 251));
    const responses = [
      { kind: 'form js' as const, body: body(2000), wire: 2100, encoding: '', source: 'cdp' as const },
      { kind: 'pdf.js worker' as const, body: body(300_000), wire: 0, encoding: '', source: 'playwright' as const },
    ];
    const bytes = bytesByKind(responses);
    const js = bytes.get('form js')!;
    expect(js.raw).toBe(2000);
    expect(js.gzip).toBeGreaterThan(0);
    expect(js.gzip).toBeLessThan(js.raw + 100);
    expect(bytes.get('pdf.js worker')!.fromPlaywright).toBe(1);

    const within = checkBudgets(bytes, [100, 200]);
    expect(within.every((check) => !check.over)).toBe(true);
    // pdf.js' 300 KB are not part of the first load.
    expect(within.find((c) => c.name === 'firstLoadGzipBytes')!.value).toBe(js.gzip);
    expect(within.find((c) => c.name === 'firstTypeableMs')!.value).toBe(200);

    const slow = checkBudgets(bytes, [100, BUDGETS.firstTypeableMs + 1]);
    expect(slow.filter((c) => c.over).map((c) => c.name)).toEqual(['firstTypeableMs']);
    const heavy = new Map(bytes);
    heavy.set('form js', { ...js, gzip: BUDGETS.formJsGzipBytes + 1 });
    expect(
      checkBudgets(heavy, [100])
        .filter((c) => c.over)
        .map((c) => c.name),
    ).toEqual(['formJsGzipBytes']);
    // No measurement is not a pass.
    expect(checkBudgets(bytes, [Number.NaN]).find((c) => c.name === 'firstTypeableMs')!.over).toBe(true);
  });
});

describe('the screenshots script', () => {
  const docs = fs.readFileSync(path.join(import.meta.dirname, '..', 'docs', 'signing-form.md'), 'utf8');
  const linked = [...docs.matchAll(/\]\(signing-form\/([\w-]+\.png)\)/g)].map((m) => m[1]!);
  const dir = path.join(import.meta.dirname, '..', 'docs', 'signing-form');

  it('has unique state names usable as file names', () => {
    const names = STATES.map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^[a-z][a-z0-9-]*$/);
    expect(names).toEqual(expect.arrayContaining(['open', 'validation-errors', 'completed', 'not-found', 'arabic']));
    expect(new MissingUi('x')).toBeInstanceOf(Error);
  });

  it('docs/signing-form.md shows, for each viewport of a state, PNGs that exist and states the script makes', () => {
    expect(linked.length).toBeGreaterThan(0);
    for (const file of linked) expect(fs.existsSync(path.join(dir, file)), file).toBe(true);
    const stateOf = (file: string) => file.replace(/(-phone)?\.png$/, '');
    for (const file of linked)
      expect(
        STATES.map((s) => s.name),
        file,
      ).toContain(stateOf(file));
    // Each state at each viewport the script renders it at (both unless the state says otherwise).
    for (const state of new Set(linked.map(stateOf))) {
      const viewports = STATES.find((s) => s.name === state)?.viewports ?? ['desktop', 'phone'];
      for (const viewport of viewports)
        expect(linked, state).toContain(viewport === 'phone' ? `${state}-phone.png` : `${state}.png`);
    }
    // Every PNG in the folder is shown (none left behind by a renamed state).
    expect(
      fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.png'))
        .sort(),
    ).toEqual([...linked].sort());
  });
});
