/**
 * The README's walkthrough ("A first signed PDF") runs as written: its shell commands, taken
 * from the README between the walkthrough markers, run in bash against a real Signet server on
 * loopback, and the signed PDF they download passes poppler's `pdfsig`. The first block only says
 * where Signet is and which key to use (SIGNET, KEY): the test gives its own server and key there.
 * Also: samples/nda.pdf is what scripts/make-sample-pdf.ts makes.
 */
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSamplePdf, SAMPLE_PDF } from '../scripts/make-sample-pdf.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { pdfsigValidPades } from './helpers/pades-verifier.ts';
import { fencedBlocks } from './helpers/markdown.ts';
import { ROOT } from './helpers/processes.ts';

/** The walkthrough's shell blocks, in order. */
function walkthroughBlocks(): string[] {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = /<!-- walkthrough:start -->([\s\S]*?)<!-- walkthrough:end -->/.exec(readme);
  if (!section) throw new Error('README.md has no <!-- walkthrough:start --> … <!-- walkthrough:end --> section');
  return fencedBlocks(section[1]!)
    .filter((block) => block.info === 'sh')
    .map((block) => block.body);
}

let t: TestApp;
let dir: string;

beforeAll(async () => {
  t = await startTestApp();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-walkthrough-'));
  // The commands run in the clone's folder; here a folder of their own with the sample in it.
  fs.symlinkSync(path.join(ROOT, 'samples'), path.join(dir, 'samples'));
});
afterAll(async () => {
  await t?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('README walkthrough', () => {
  it('takes the sample PDF to a signed PDF that pdfsig validates', async () => {
    const [setup, ...steps] = walkthroughBlocks();
    expect(steps.length).toBeGreaterThanOrEqual(3);
    // The first block defines exactly SIGNET and KEY; every later command uses them.
    expect(
      setup!
        .trim()
        .split('\n')
        .map((line) => /^(\w+)=/.exec(line)?.[1]),
    ).toEqual(['SIGNET', 'KEY']);
    expect(setup).toContain('SIGNET=http://localhost:3000');
    const { apiKey } = await t.createAccount({ name: 'Acme', email: 'you@acme.test' });

    const script = ['set -euo pipefail', `SIGNET=${t.url}`, `KEY=${apiKey}`, ...steps].join('\n');
    const output = await new Promise<string>((resolve, reject) => {
      execFile(
        'bash',
        ['-c', script],
        { cwd: dir, timeout: 45_000, env: { ...process.env, PATH: process.env.PATH } },
        (error, stdout, stderr) =>
          error ? reject(new Error(`${error.message}\nstdout:\n${stdout}\nstderr:\n${stderr}`)) : resolve(stdout),
      );
    });

    // What the walkthrough prints: the signer's link, then pdfsig's report.
    expect(output).toMatch(new RegExp(`^${t.url.replace(/[.]/g, '\\.')}/s/\\w+$`, 'm'));
    expect(output).toContain('Signature is Valid.');
    // PAdES B-LT (issue 17): the DSS revision follows the signature (README's comment says so).
    expect(output).toContain('Signature Type: ETSI.CAdES.detached');
    expect(output).toContain('Not total document signed');
    expect(pdfsigValidPades(fs.readFileSync(path.join(dir, 'signed.pdf')))).toBe(true);
    // The signed copy is the sample with its values: the name typed in, the tags gone.
    const text = execFileSync('pdftotext', [path.join(dir, 'signed.pdf'), '-']).toString();
    expect(text).toContain('Non-Disclosure Agreement');
    expect(text).toContain('Ada Lovelace');
    expect(text).toMatch(/\b\d\d\/\d\d\/20\d\d\b/); // the date, {{date}} drawn as the completion day
    expect(text).not.toContain('{{');
  }, 60_000);

  it('uses the sample PDF that scripts/make-sample-pdf.ts makes', async () => {
    expect(Buffer.from(await makeSamplePdf()).equals(fs.readFileSync(SAMPLE_PDF))).toBe(true);
  });
});
