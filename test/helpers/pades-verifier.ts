/**
 * Signing in tests: a SigningConfig, poppler's `pdfsig`, OpenSSL, and the second, independent
 * verifier (test/helpers/PadesVerifier.java: Apache PDFBox + Bouncy Castle from Debian's packages,
 * run as a single-file Java program) on the PDFs Signet signs.
 */
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { SigningConfig } from '../../src/signing/certificates.ts';

const run = promisify(execFile);

/** A signing configuration with the service's defaults (no SIGNING_P12_PATH, no TSA_URL). */
export function signingConfig(overrides: Partial<SigningConfig> = {}): SigningConfig {
  return {
    signingP12Path: undefined,
    signingP12Password: '',
    appUrl: 'http://127.0.0.1:3000',
    secretKeyBase: 'test-secret-key-base-'.padEnd(64, 'x'),
    dataDir: os.tmpdir(),
    tsaUrl: undefined,
    tsaTimeout: 5000,
    signingCertificateWarningDays: 30,
    downloadAllowPrivate: true,
    downloadTimeout: 5000,
    ...overrides,
  };
}

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'signet-pades-'));
process.on('exit', () => fs.rmSync(scratch, { recursive: true, force: true }));

/** Writes bytes to a scratch file and returns its path. */
export function scratchFile(bytes: Uint8Array, extension = 'pdf'): string {
  const file = path.join(scratch, `${randomBytes(6).toString('hex')}.${extension}`);
  fs.writeFileSync(file, bytes);
  return file;
}

/** pdfsig's report on these bytes (poppler 22: "Signature is Valid.", "Total document signed"). */
export function pdfsig(bytes: Uint8Array): string {
  const result = spawnSync('pdfsig', [scratchFile(bytes)], { encoding: 'utf8' });
  return result.stdout + result.stderr;
}

/** Each signature's block of a pdfsig report ("Signature #1: ..."), in order. */
export function pdfsigSignatures(report: string): string[] {
  return report.split(/^Signature #\d+:$/m).slice(1);
}

/** OpenSSL, with its exit code and output (never throws). */
export function openssl(args: string[], input?: Uint8Array): { code: number; output: string } {
  const result = spawnSync('openssl', args, { input, encoding: 'utf8' });
  return { code: result.status ?? -1, output: `${result.stdout}${result.stderr}` };
}

/** Debian's jars (.ci/run installs them: libpdfbox2-java, libbcprov-java, libbcpkix-java, libbcutil-java). */
const JARS = ['pdfbox2', 'fontbox2', 'commons-logging', 'bcprov', 'bcpkix', 'bcutil'].map(
  (name) => `/usr/share/java/${name}.jar`,
);
const VERIFIER = path.join(import.meta.dirname, 'PadesVerifier.java');

/** What PadesVerifier.java reports of one file (see its source). */
export interface IndependentReport {
  file: string;
  error?: string;
  dss: { certs: number; crls: number; ocsps: number; vri: number; crlsValid: boolean; certsValid: boolean } | null;
  signatures: {
    name: string;
    subFilter: string;
    coversToEnd: boolean;
    vri: boolean;
    cmsValid?: boolean;
    cmsError?: string;
    signer?: string;
    signingCertificateV2?: boolean;
    signingTimeAttribute?: boolean;
    timestamp: {
      valid: boolean;
      error?: string;
      imprintMatches: boolean;
      genTime: string;
      tsa: string | null;
      chain?: { valid: boolean; error?: string };
    } | null;
    chain?: { valid: boolean; length?: number; error?: string };
  }[];
}

/**
 * Runs the independent verifier on PDFs, trusting only `anchors` (DER certificates), with no
 * network: the certificate paths are built and their revocation checked with the documents' DSS.
 * @returns one report per PDF, in order
 */
export async function verifyIndependently(pdfs: Uint8Array[], anchors: Uint8Array[]): Promise<IndependentReport[]> {
  const missing = JARS.filter((jar) => !fs.existsSync(jar));
  if (missing.length > 0) throw new Error(`the independent verifier needs ${missing.join(', ')} (see .ci/run)`);
  const args = ['-cp', JARS.join(':'), VERIFIER];
  for (const anchor of anchors) args.push('--anchor', scratchFile(anchor, 'der'));
  for (const pdf of pdfs) args.push(scratchFile(pdf));
  const { stdout } = await run('java', args, { maxBuffer: 16 * 1024 * 1024, timeout: 120_000 });
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as IndependentReport);
}

/**
 * The file as its first signature signed it: up to the end of that signature's /ByteRange. A PAdES
 * B-LT document appends its DSS (and B-LTA its document timestamp) after the signature, so pdfsig
 * reports the whole file as "Not total document signed"; on this revision it reports "Total
 * document signed" when the signature covered all of it.
 */
export function signedRevision(bytes: Uint8Array): Buffer {
  const match = /\/ByteRange\s*\[\s*0\s+\d+\s+(\d+)\s+(\d+)\s*\]/.exec(Buffer.from(bytes).toString('latin1'));
  if (!match) throw new Error('no signature');
  return Buffer.from(bytes.subarray(0, Number(match[1]) + Number(match[2])));
}

/**
 * pdfsig finds the first signature valid and PAdES (ETSI.CAdES.detached) in the whole file, and
 * covering the whole of the revision it signed (signedRevision).
 */
export function pdfsigValidPades(bytes: Uint8Array): boolean {
  const report = pdfsig(bytes);
  const first = pdfsigSignatures(report)[0] ?? '';
  return (
    first.includes('Signature is Valid.') &&
    first.includes('Signature Type: ETSI.CAdES.detached') &&
    pdfsig(signedRevision(bytes)).includes('Total document signed')
  );
}
