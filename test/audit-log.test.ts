/** The audit log PDF, read back with poppler's pdftotext and pdfinfo. */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type AuditLogParty, buildAuditLog, type BuildAuditLogInput } from '../src/signing/audit-log.ts';
import { generateSelfSignedPkcs12 } from '../src/signing/certificates.ts';
import { signPdf } from '../src/signing/sign-pdf.ts';
import { fixturePdf } from './helpers/pdfs.ts';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** pdftotext's text with every run of whitespace (line breaks included) as one space. */
function textOf(pdf: Uint8Array): string {
  return execFileSync('pdftotext', ['-', '-'], { input: pdf }).toString().replace(/\s+/g, ' ');
}

function pdfinfo(pdf: Uint8Array): string {
  return execFileSync('pdfinfo', ['-'], { input: pdf }).toString();
}

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86';
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';

function input(overrides: Partial<BuildAuditLogInput> = {}): BuildAuditLogInput {
  const original = fixturePdf('docuseal-sample-document.pdf');
  const second = fixturePdf('pdfjs-form_two_pages.pdf');
  return {
    submissionId: 4217,
    accountName: 'Acme Λtd',
    generatedAt: new Date('2026-11-21T10:15:30.250Z'),
    documents: [
      { name: 'Sample Agreement', originalSha256: sha256(original), finalSha256: sha256(Buffer.from('final 1')) },
      { name: 'Form — two pages', originalSha256: sha256(second), finalSha256: sha256(Buffer.from('final 2')) },
    ],
    parties: [
      {
        role: 'First Party',
        name: 'Ελένη Παπαδοπούλου',
        email: 'eleni@example.test',
        phone: '+306912345678',
        ip: '203.0.113.7',
        userAgent: CHROME,
        completedAt: new Date('2026-11-21T10:05:00Z'),
        events: [
          // Out of order on purpose: the log prints them by time.
          { type: 'complete_form', at: new Date('2026-11-21T10:05:00.900Z'), ip: '203.0.113.7', userAgent: CHROME },
          { type: 'send_email', at: new Date('2026-11-21T09:00:00Z') },
          { type: 'view_form', at: new Date('2026-11-21T10:01:02Z'), ip: '203.0.113.7', userAgent: CHROME },
          { type: 'start_form', at: new Date('2026-11-21T10:02:03Z'), ip: '203.0.113.7', userAgent: CHROME },
        ],
      },
      {
        role: 'Second Party',
        name: 'Иван Петрович Сидоров',
        email: 'ivan@example.test',
        phone: null,
        ip: '2001:db8::42',
        userAgent: FIREFOX,
        completedAt: new Date('2026-11-21T10:12:13Z'),
        events: [
          { type: 'send_email', at: new Date('2026-11-21T10:05:01Z') },
          { type: 'click_email', at: new Date('2026-11-21T10:10:00Z'), ip: '2001:db8::42', userAgent: FIREFOX },
          { type: 'custom_thing', at: new Date('2026-11-21T10:11:00Z') },
          { type: 'complete_form', at: new Date('2026-11-21T10:12:13Z'), ip: '2001:db8::42', userAgent: FIREFOX },
        ],
      },
    ],
    ...overrides,
  };
}

describe('buildAuditLog', () => {
  it('shows the title, submission id, document hashes, every party field and every event with its UTC time', async () => {
    const log = input();
    const pdf = await buildAuditLog(log);
    const text = textOf(pdf);

    expect(text).toMatch(/^Signet Audit Log Submission ID 4217 Account Acme Λtd Generated at 2026-11-21T10:15:30Z /);
    expect(text).not.toContain('Testing Log');
    for (const document of log.documents) {
      expect(text).toContain(`${document.name} Original SHA-256 ${document.originalSha256} Final SHA-256 ${document.finalSha256}`);
    }
    expect(text).toContain(
      `First Party Name Ελένη Παπαδοπούλου Email eleni@example.test Phone +306912345678 IP 203.0.113.7 User agent ${CHROME} Completed at 2026-11-21T10:05:00Z`,
    );
    expect(text).toContain(
      `Second Party Name Иван Петрович Сидоров Email ivan@example.test Phone — IP 2001:db8::42 User agent ${FIREFOX} Completed at 2026-11-21T10:12:13Z`,
    );
    expect(text).toContain(
      'Events ' +
        '2026-11-21T09:00:00Z Email sent (send_email) ' +
        `2026-11-21T10:01:02Z Form viewed (view_form) IP 203.0.113.7 · User agent ${CHROME} ` +
        `2026-11-21T10:02:03Z Submission started (start_form) IP 203.0.113.7 · User agent ${CHROME} ` +
        `2026-11-21T10:05:00Z Submission completed (complete_form) IP 203.0.113.7 · User agent ${CHROME}`,
    );
    expect(text).toContain('2026-11-21T10:10:00Z Email link clicked (click_email) IP 2001:db8::42');
    expect(text).toContain('2026-11-21T10:11:00Z custom_thing');
    const info = pdfinfo(pdf);
    const pages = Number(/Pages:\s+(\d+)/.exec(info)![1]);
    for (let page = 1; page <= pages; page++) expect(text).toContain(`Audit Log · Submission 4217 Page ${page} of ${pages}`);
    expect(info).toMatch(/Title:\s+Audit Log - Submission 4217/);
    expect(info).toMatch(/Page size:\s+595\.28 x 841\.89 pts \(A4\)/);
  });

  it('titles a testing account\'s log "Testing Log - Not for Production Use"', async () => {
    const text = textOf(await buildAuditLog(input({ testing: true })));

    expect(text).toMatch(/^Signet Testing Log - Not for Production Use Submission ID 4217 /);
    expect(text).not.toContain('Audit Log');
  });

  it('embeds the glyphs of Greek and Cyrillic names (the font has them; nothing drawn as .notdef)', async () => {
    const pdf = await buildAuditLog(input());
    const fonts = execFileSync('pdffonts', ['-'], { input: pdf }).toString();

    // Embedded, subset, with a ToUnicode map.
    expect(fonts).toMatch(/^[A-Z]{6}\+DejaVuSans +CID TrueType +Identity-H +yes yes yes/m);
    expect(fonts).toMatch(/^[A-Z]{6}\+DejaVuSans-Bold +CID TrueType +Identity-H +yes yes yes/m);
    expect(textOf(pdf)).toContain('Ελένη Παπαδοπούλου');
    expect(textOf(pdf)).toContain('Иван Петрович Сидоров');
  });

  it('spreads a long event list over several pages with numbered footers, losing no event', async () => {
    const start = Date.parse('2026-01-01T00:00:00Z');
    const events = Array.from({ length: 150 }, (_, i) => ({
      type: i % 2 ? 'view_form' : 'send_reminder_email',
      at: new Date(start + i * 61_000),
      ip: '198.51.100.1',
      userAgent: FIREFOX,
    }));
    const party: AuditLogParty = { role: 'Signer', name: 'Long Log', email: 'long@example.test', events };

    const pdf = await buildAuditLog(input({ parties: [party] }));
    const pages = Number(/Pages:\s+(\d+)/.exec(pdfinfo(pdf))![1]);
    const text = textOf(pdf);

    expect(pages).toBeGreaterThanOrEqual(5);
    expect(text).toContain(`Page 1 of ${pages}`);
    expect(text).toContain(`Page ${pages} of ${pages}`);
    for (const event of events) expect(text).toContain(`${event.at.toISOString().slice(0, 19)}Z`);
    // In time order across the page breaks.
    const positions = events.map((event) => text.indexOf(`${event.at.toISOString().slice(0, 19)}Z`));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
  });

  it('signs validly (the pipeline signs the audit log like the documents)', async () => {
    const { p12 } = await generateSelfSignedPkcs12('pw', new Date());
    const signed = await signPdf(await buildAuditLog(input()), { p12, password: 'pw' }, { name: 'Acme Λtd' });
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-audit-'));
    try {
      await fs.writeFile(path.join(dir, 'audit.pdf'), signed);
      const report = execFileSync('pdfsig', [path.join(dir, 'audit.pdf')]).toString();
      expect(report).toContain('Total document signed');
      expect(report).toContain('Signature is Valid.');
      expect(textOf(signed)).toContain('Ελένη Παπαδοπούλου');
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('gives the same bytes for the same input', async () => {
    const [a, b] = await Promise.all([buildAuditLog(input()), buildAuditLog(input())]);
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
  });

  it('wraps values longer than a line without dropping characters', async () => {
    const longName = 'Maximilian Alexander Konstantin Friedrich von und zu Hohenzollern-Sigmaringen '.repeat(3).trim();
    const unbroken = 'x'.repeat(300);
    const party: AuditLogParty = { role: 'Signer', name: longName, userAgent: unbroken, events: [] };

    const text = textOf(await buildAuditLog(input({ parties: [party] })));

    expect(text).toContain(`Name ${longName} Email — Phone — IP — User agent`);
    // A value without spaces is cut inside, so pdftotext shows it in pieces.
    expect(text.replace(/(?<=x) (?=x)/g, '')).toContain(unbroken);
    expect(text).toContain('Completed at Not completed Events None');
  });

  it('adds the local time in the account zone, and uses Letter pages for a US zone', async () => {
    const athens = textOf(await buildAuditLog(input({ timeZone: 'Europe/Athens' })));
    expect(athens).toContain('Generated at 2026-11-21T10:15:30Z (2026-11-21 12:15:30 GMT+02:00) Time zone Europe/Athens Documents');

    const newYork = await buildAuditLog(input({ timeZone: 'America/New_York' }));
    expect(textOf(newYork)).toContain('2026-11-21T09:00:00Z (2026-11-21 04:00:00 GMT-05:00) Email sent (send_email)');
    expect(pdfinfo(newYork)).toMatch(/Page size:\s+612 x 792 pts \(letter\)/);

    for (const timeZone of ['Mars/Olympus_Mons', 'UTC', 'Etc/UTC']) {
      const text = textOf(await buildAuditLog(input({ timeZone })));
      expect(text).toContain('Generated at 2026-11-21T10:15:30Z Documents');
    }
  });
});
