/**
 * pdf-lib reads uploads on a worker thread (src/documents/pdf-lib-worker.ts): the outcome of each
 * read in order, a failure that leaves the worker serving, and the event loop free meanwhile.
 */
import { PDFDocument, ParseSpeeds } from 'pdf-lib';
import { describe, expect, it } from 'vitest';
import { readWithPdfLib } from '../src/documents/pdf-lib-worker.ts';
import { fixturePdf } from './helpers/pdfs.ts';

describe('readWithPdfLib', () => {
  it('answers each read in order, a broken file with its error, and keeps serving after one', async () => {
    const readings = await Promise.all([
      readWithPdfLib(fixturePdf('pdfjs-tracemonkey.pdf')),
      readWithPdfLib(Buffer.from('%PDF-1.7\nnothing here')),
      readWithPdfLib(fixturePdf('pdfjs-hello_world_rotated.pdf')),
    ]);
    expect(readings[0]).toEqual({ pageCount: 14 });
    expect(readings[1]).toMatchObject({ error: expect.any(String) });
    expect(readings[2]).toEqual({ pageCount: 5 });
  });

  it('leaves the caller its bytes (the worker reads a copy)', async () => {
    const bytes = fixturePdf('docuseal-sample-document.pdf');
    const length = bytes.length;
    await readWithPdfLib(bytes);
    expect(bytes.length).toBe(length);
    expect(bytes.subarray(0, 5).toString()).toBe('%PDF-');
  });

  it('keeps the event loop free while it parses: timers fire on time during the read of a 4 MB file', async () => {
    // Four copies of the 14-page paper in one file (built here with pdf-lib, before the clock runs).
    const source = await PDFDocument.load(fixturePdf('pdfjs-tracemonkey.pdf'));
    const big = await PDFDocument.create();
    for (let i = 0; i < 4; i += 1)
      for (const page of await big.copyPages(source, source.getPageIndices())) big.addPage(page);
    const bytes = await big.save({ useObjectStreams: false });
    const onThread = performance.now();
    await PDFDocument.load(bytes, { updateMetadata: false, parseSpeed: ParseSpeeds.Fastest });
    const onThreadMs = performance.now() - onThread;
    await readWithPdfLib(fixturePdf('pdfjs-hello_world_rotated.pdf')); // the worker and pdf-lib loaded

    let late = 0;
    let last = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      late = Math.max(late, now - last - 5);
      last = now;
    }, 5);
    const reading = await readWithPdfLib(bytes);
    clearInterval(ticker);
    expect(reading).toEqual({ pageCount: 56 });
    // On the calling thread the same read holds the loop the whole time (onThreadMs, ~100+ ms); on
    // the worker no timer waits for it. The margin is for a loaded machine's scheduling.
    expect(onThreadMs).toBeGreaterThan(60);
    expect(late).toBeLessThan(onThreadMs / 2);
  });
});
