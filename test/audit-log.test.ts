/** The audit log PDF, read back with poppler's pdftotext, pdfinfo and pdfimages. */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type AuditLogParty, buildAuditLog, type BuildAuditLogInput } from '../src/signing/audit-log.ts';
import { listAuditLogValues } from '../src/signing/audit-log-values.ts';
import { parseChainHead } from '../src/signing/audit-chain.ts';
import { firstPageTextHere } from '../src/documents/pdf.ts';
import type { Field } from '../src/templates/fields.ts';
import { generateSelfSignedPkcs12 } from '../src/signing/certificates.ts';
import { signPdf } from '../src/signing/sign-pdf.ts';
import { strokeJpeg, strokePng } from './helpers/images.ts';
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
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 ' +
  'Edg/131.0.2903.86';
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
  it(
    'shows the title, submission id, document hashes, ' + 'every party field and every event with its UTC time',
    async () => {
      const log = input();
      const pdf = await buildAuditLog(log);
      const text = textOf(pdf);

      expect(text).toMatch(/^Signet Audit Log Submission ID 4217 Account Acme Λtd Generated at 2026-11-21T10:15:30Z /);
      expect(text).not.toContain('Testing Log');
      for (const document of log.documents) {
        expect(text).toContain(
          `${document.name} Original SHA-256 ${document.originalSha256} Final SHA-256 ${document.finalSha256}`,
        );
      }
      expect(text).toContain(
        `First Party Name Ελένη Παπαδοπούλου Email eleni@example.test Phone +306912345678 IP 203.0.113.7 User agent ` +
          `${CHROME} Completed at 2026-11-21T10:05:00Z`,
      );
      expect(text).toContain(
        `Second Party Name Иван Петрович Сидоров Email ivan@example.test Phone — IP 2001:db8::42 User agent ` +
          `${FIREFOX} Completed at 2026-11-21T10:12:13Z`,
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
      for (let page = 1; page <= pages; page++)
        expect(text).toContain(`Audit Log · Submission 4217 Page ${page} of ${pages}`);
      expect(info).toMatch(/Title:\s+Audit Log - Submission 4217/);
      expect(info).toMatch(/Page size:\s+595\.28 x 841\.89 pts \(A4\)/);
    },
  );

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
    expect(athens).toContain(
      'Generated at 2026-11-21T10:15:30Z (2026-11-21 12:15:30 GMT+02:00) Time zone Europe/Athens Documents',
    );

    const newYork = await buildAuditLog(input({ timeZone: 'America/New_York' }));
    expect(textOf(newYork)).toContain('2026-11-21T09:00:00Z (2026-11-21 04:00:00 GMT-05:00) Email sent (send_email)');
    expect(pdfinfo(newYork)).toMatch(/Page size:\s+612 x 792 pts \(letter\)/);

    for (const timeZone of ['Mars/Olympus_Mons', 'UTC', 'Etc/UTC']) {
      const text = textOf(await buildAuditLog(input({ timeZone })));
      expect(text).toContain('Generated at 2026-11-21T10:15:30Z Documents');
    }
  });
});

/** pdfimages -list of a PDF: its image rows (not soft masks) with page, width and height. */
async function listImages(
  pdf: Uint8Array,
): Promise<{ page: number; type: string; width: number; height: number; object: number }[]> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-audit-images-'));
  try {
    await fs.writeFile(path.join(dir, 'log.pdf'), pdf);
    const lines = execFileSync('pdfimages', ['-list', path.join(dir, 'log.pdf')])
      .toString()
      .trim()
      .split('\n')
      .slice(2);
    return lines.map((line) => {
      const cells = line.trim().split(/\s+/);
      return {
        page: Number(cells[0]),
        type: cells[2]!,
        width: Number(cells[3]),
        height: Number(cells[4]),
        object: Number(cells[10]),
      };
    });
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

describe('buildAuditLog: what happened to each email and SMS', () => {
  const at = (minute: number) => new Date(Date.UTC(2026, 10, 21, 9, minute));
  const party = (events: AuditLogParty['events']): AuditLogParty => ({
    role: 'Signer',
    name: 'Ann',
    email: 'ann@example.test',
    events,
  });

  it(
    'says "kept, not sent" for the outbox, names the provider that sent, ' +
      'and prints failures with their error and whether they are retried',
    async () => {
      const events: AuditLogParty['events'] = [
        {
          type: 'send_email',
          at: at(0),
          data: { email_message_id: 1, provider: 'outbox', attempt: 1, to: 'ann@example.test' },
        },
        {
          type: 'send_sms',
          at: at(1),
          data: { sms_message_id: 2, provider: 'outbox', attempt: 1, to: '+15551234567' },
        },
        {
          type: 'fail_email',
          at: at(2),
          data: {
            email_message_id: 3,
            provider: 'smtp',
            attempt: 1,
            max_attempts: 10,
            retrying: true,
            error: 'Message failed: 451 Try again later',
            to: 'ann@example.test',
          },
        },
        {
          type: 'send_email',
          at: at(3),
          data: { email_message_id: 3, provider: 'smtp', attempt: 2, to: 'ann@example.test' },
        },
        {
          type: 'send_email',
          at: at(4),
          data: { email_message_id: 4, provider: 'sendgrid', attempt: 1, to: 'ann@example.test' },
        },
        {
          type: 'fail_email',
          at: at(5),
          data: {
            email_message_id: 5,
            provider: 'sendgrid',
            attempt: 1,
            max_attempts: 10,
            retrying: false,
            error: 'The to address is invalid',
            to: 'ann@example.test',
          },
        },
        {
          type: 'fail_sms',
          at: at(6),
          data: {
            sms_message_id: 6,
            provider: 'twilio',
            attempt: 10,
            max_attempts: 10,
            retrying: false,
            error: 'HTTP 503',
            to: '+15551234567',
          },
        },
        {
          type: 'send_sms',
          at: at(7),
          data: { sms_message_id: 7, provider: 'twilio', attempt: 1, to: '+15551234567' },
        },
        // Recorded before delivery events carried their outcome: DocuSeal's sentence.
        { type: 'send_email', at: at(8), data: { email_message_id: 8 } },
        { type: 'fail_completion', at: at(9), data: { reason: 'field "Stamp": the image cannot be read' } },
        {
          type: 'fail_email',
          at: at(10),
          data: {
            email_message_id: 9,
            provider: 'smtp',
            attempt: 1,
            max_attempts: 10,
            retrying: false,
            error: '421 Busy',
            reason: 'the party had completed or declined the form',
            to: 'ann@example.test',
          },
        },
      ];

      const text = textOf(await buildAuditLog(input({ parties: [party(events)] })));

      expect(text).toContain(
        'Events ' +
          '2026-11-21T09:00:00Z Email to ann@example.test kept, not sent: no email provider configured (send_email) ' +
          '2026-11-21T09:01:00Z SMS to +15551234567 kept, not sent: no SMS provider configured (send_sms) ' +
          '2026-11-21T09:02:00Z Email to ann@example.test via SMTP failed (attempt 1 of 10): Message failed: 451 Try ' +
          'again later; will be retried (fail_email) ' +
          '2026-11-21T09:03:00Z Email sent to ann@example.test via SMTP on attempt 2 (send_email) ' +
          '2026-11-21T09:04:00Z Email sent to ann@example.test via SendGrid (send_email) ' +
          '2026-11-21T09:05:00Z Email to ann@example.test via SendGrid failed (attempt 1 of 10): The to address is ' +
          'invalid; refused, not retried (fail_email) ' +
          '2026-11-21T09:06:00Z SMS to +15551234567 via Twilio failed (attempt 10 of 10): HTTP 503; given up ' +
          '(fail_sms) ' +
          '2026-11-21T09:07:00Z SMS sent to +15551234567 via Twilio (send_sms) ' +
          '2026-11-21T09:08:00Z Email sent (send_email) ' +
          '2026-11-21T09:09:00Z Completion failed: field "Stamp": the image cannot be read (fail_completion) ' +
          '2026-11-21T09:10:00Z Email to ann@example.test via SMTP failed (attempt 1 of 10): 421 Busy; not retried: ' +
          'the party had completed or declined the form (fail_email)',
      );
      expect(text).not.toMatch(/Email sent[^(]*\(send_email\) 2026-11-21T09:01/);
    },
  );
});

describe('listAuditLogValues', () => {
  const role = 'role-a';
  const other = 'role-b';
  const field = (uuid: string, type: string, extra: Partial<Field> = {}): Field => ({
    uuid,
    submitter_uuid: role,
    name: uuid,
    type,
    required: false,
    preferences: {},
    areas: [],
    ...extra,
  });

  it(
    'lists the party’s fields with a value in template order, formatted as on the documents, ' +
      'as DocuSeal’s audit log',
    () => {
      const fields: Field[] = [
        field('Other', 'text', { submitter_uuid: other }),
        field('Name', 'text', { title: 'Full name' }),
        field('Heading', 'heading'),
        field('Born', 'date', { preferences: { format: 'DD MMMM YYYY' } }),
        field('Amount', 'number', { preferences: { format: 'usd' } }),
        field('Agree', 'checkbox'),
        field('Unticked', 'checkbox'),
        field('Empty', 'text'),
        field('Colours', 'multiple'),
        field('Card', 'text', { preferences: { mask: 4 } }),
        field('', 'signature'),
        field('Sign again', 'signature'),
        field('Initials', 'initials'),
        field('Typed', 'signature', { submitter_uuid: role }),
        field('Upload', 'file'),
        field('Notes', 'text'),
      ];
      const signature = new Uint8Array([1, 2, 3]);
      const files = new Map([
        ['sig-1', { filename: 'signature.png', contentType: 'image/png', bytes: signature }],
        ['ini-1', { filename: 'initials.png', contentType: 'image/png', bytes: signature }],
        ['typed-1', { filename: 'signature.png', contentType: 'image/png', bytes: signature, typedText: 'Eleni P' }],
        ['doc-1', { filename: 'passport.pdf', contentType: 'application/pdf' }],
      ]);
      const values = {
        Other: 'not this party',
        Name: 'Ελένη Παπαδοπούλου',
        Heading: 'x',
        Born: '1990-04-07',
        Amount: 1234.5,
        Agree: true,
        Unticked: false,
        Empty: '   ',
        Colours: ['Red', 'Blue'],
        Card: '4111 1111 1111 1111',
        '': 'sig-1',
        'Sign again': 'sig-1',
        Initials: 'ini-1',
        Typed: 'typed-1',
        Upload: ['doc-1'],
        Notes: 'first line\nsecond line',
      };

      const list = listAuditLogValues(fields, role, values, files, { timeZone: 'Europe/Athens' });

      expect(list).toEqual([
        { name: 'Full name', type: 'text', text: 'Ελένη Παπαδοπούλου' },
        { name: 'Born', type: 'date', text: '07 April 1990' },
        { name: 'Amount', type: 'number', text: '$1,234.50' },
        { name: 'Agree', type: 'checkbox', text: 'True' },
        { name: 'Colours', type: 'multiple', text: 'Red, Blue' },
        { name: 'Card', type: 'text', text: '4111 XXXX XXXX XXXX' },
        // Two signature fields holding one image: one entry, named
        // after both (the first has no name: "Signature Field 1").
        {
          name: 'Signature Field 1, Sign again',
          type: 'signature',
          image: { uuid: 'sig-1', file: { bytes: signature, contentType: 'image/png' } },
        },
        {
          name: 'Initials',
          type: 'initials',
          image: { uuid: 'ini-1', file: { bytes: signature, contentType: 'image/png' } },
        },
        // A typed signature: its image, and the text it was rendered from.
        {
          name: 'Typed',
          type: 'signature',
          image: { uuid: 'typed-1', file: { bytes: signature, contentType: 'image/png' } },
          typed: 'Eleni P',
        },
        { name: 'Upload', type: 'file', text: 'passport.pdf' },
        { name: 'Notes', type: 'text', text: 'first line\nsecond line' },
      ]);
    },
  );

  it('leaves out a field whose conditions on the party’s values are not met (field conditions)', () => {
    const fields: Field[] = [
      field('Plan', 'select', { options: [{ value: 'Pro', uuid: 'pro' }] }),
      field('Seats', 'number', { conditions: [{ field_uuid: 'Plan', value: 'pro', action: 'equal' }] }),
    ];
    const listed = (plan: string) =>
      listAuditLogValues(fields, role, { Plan: plan, Seats: 12 }, new Map()).map((v) => v.name);
    expect(listed('Basic')).toEqual(['Plan']);
    expect(listed('Pro')).toEqual(['Plan', 'Seats']);
  });
});

describe('buildAuditLog: each party’s values, signatures and initials', () => {
  it(
    'prints every value under its field name and shows the signature and initials as images, ' +
      'each stored image embedded once',
    async () => {
      const signature = await strokePng(300, 100);
      const initials = await strokePng(120, 60);
      const photo = await strokeJpeg(200, 150);
      const sig = {
        uuid: '11111111-1111-4111-8111-111111111111',
        file: { bytes: signature, contentType: 'image/png' },
      };
      const parties: AuditLogParty[] = [
        {
          role: 'First Party',
          name: 'Ελένη Παπαδοπούλου',
          email: 'eleni@example.test',
          events: [],
          values: [
            { name: 'Full name', type: 'text', text: 'Ελένη Παπαδοπούλου' },
            { name: 'Signature, Second signature', type: 'signature', image: sig },
            {
              name: 'Initials',
              type: 'initials',
              image: {
                uuid: '22222222-2222-4222-8222-222222222222',
                file: { bytes: initials, contentType: 'image/png' },
              },
            },
            {
              name: 'Photo',
              type: 'image',
              image: {
                uuid: '33333333-3333-4333-8333-333333333333',
                file: { bytes: photo, contentType: 'image/jpeg' },
              },
            },
          ],
        },
        {
          role: 'Second Party',
          name: 'Иван',
          email: 'ivan@example.test',
          events: [],
          values: [
            {
              name: 'Typed signature',
              type: 'signature',
              image: {
                uuid: '66666666-6666-4666-8666-666666666666',
                file: { bytes: await strokePng(240, 60), contentType: 'image/png' },
              },
              typed: 'Иван Петров',
            },
            // The same stored file again (a copied value): still one image object.
            { name: 'Witness', type: 'signature', image: sig },
            {
              name: 'Broken',
              type: 'image',
              image: {
                uuid: '44444444-4444-4444-8444-444444444444',
                file: { bytes: new Uint8Array([1, 2, 3]), contentType: 'image/png' },
              },
            },
          ],
        },
      ];

      const pdf = await buildAuditLog(input({ parties }));
      const text = textOf(pdf);

      expect(text).toContain('First Party Name Ελένη Παπαδοπούλου Email eleni@example.test');
      expect(text).toContain('Values FULL NAME Ελένη Παπαδοπούλου SIGNATURE, SECOND SIGNATURE INITIALS PHOTO ');
      expect(text).toContain('Values TYPED SIGNATURE Typed: Иван Петров WITNESS BROKEN Image not readable Events None');
      const images = (await listImages(pdf)).filter((image) => image.type === 'image');
      // Each stored image once: the signature shown twice is one object drawn twice.
      expect(images.map((image) => `${image.width}x${image.height}`).sort()).toEqual([
        '120x60',
        '200x150',
        '240x60',
        '300x100',
        '300x100',
      ]);
      expect(new Set(images.map((image) => image.object)).size).toBe(4);
      // The signature keeps its transparency (a soft mask), as DocuSeal's PNGs do.
      expect((await listImages(pdf)).some((image) => image.type === 'smask' && image.width === 300)).toBe(true);
    },
  );

  it(
    'breaks a value of several KB over pages, keeping every word in order and its line breaks, ' +
      'and stays validly signed',
    async () => {
      const words = Array.from({ length: 1500 }, (_, i) => `word${i}`);
      const paragraphs = [words.slice(0, 700).join(' '), '', words.slice(700).join(' ')].join('\n');
      expect(paragraphs.length).toBeGreaterThan(10_000);
      const parties: AuditLogParty[] = [
        {
          role: 'Signer',
          name: 'Long Answer',
          events: [{ type: 'complete_form', at: new Date('2026-11-21T10:00:00Z') }],
          values: [
            { name: 'Statement', type: 'text', text: paragraphs },
            {
              name: 'Signature',
              type: 'signature',
              image: {
                uuid: '55555555-5555-4555-8555-555555555555',
                file: { bytes: await strokePng(600, 200), contentType: 'image/png' },
              },
            },
          ],
        },
      ];
      const { p12 } = await generateSelfSignedPkcs12('pw', new Date());
      const signed = await signPdf(await buildAuditLog(input({ parties })), { p12, password: 'pw' }, { name: 'Acme' });
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-audit-long-'));
      try {
        const file = path.join(dir, 'audit.pdf');
        await fs.writeFile(file, signed);
        const pages = Number(/Pages:\s+(\d+)/.exec(pdfinfo(signed))![1]);
        expect(pages).toBeGreaterThanOrEqual(3);
        const text = textOf(signed);
        // Every word, in order, across the page breaks (footers in between).
        const positions = words.map((word) => text.indexOf(` ${word} `));
        expect(positions.every((p) => p > 0)).toBe(true);
        expect(positions).toEqual([...positions].sort((a, b) => a - b));
        // Nothing drawn off the page: every word's box lies inside the page (pdftotext -bbox).
        const boxes = execFileSync('pdftotext', ['-bbox', file, '-']).toString();
        const page = /<page width="([\d.]+)" height="([\d.]+)">/.exec(boxes)!;
        for (const [, xMin, yMin, xMax, yMax] of boxes.matchAll(
          /<word xMin="([\d.-]+)" yMin="([\d.-]+)" xMax="([\d.-]+)" yMax="([\d.-]+)">/g,
        )) {
          expect(Number(xMin)).toBeGreaterThanOrEqual(0);
          expect(Number(yMin)).toBeGreaterThanOrEqual(0);
          expect(Number(xMax)).toBeLessThanOrEqual(Number(page[1]));
          expect(Number(yMax)).toBeLessThanOrEqual(Number(page[2]));
        }
        // The line break is kept: the second paragraph starts a line of its own.
        expect(execFileSync('pdftotext', [file, '-']).toString()).toMatch(/\nword700 word701/);
        expect(
          (await listImages(signed))
            .filter((image) => image.type === 'image')
            .map((image) => `${image.width}x${image.height}`),
        ).toEqual(['600x200']);
        const report = execFileSync('pdfsig', [file]).toString();
        expect(report).toContain('Signature is Valid.');
        expect(report).toContain('Total document signed');
      } finally {
        await fs.rm(dir, { recursive: true, force: true });
      }
    },
  );
});

describe('buildAuditLog in the signer’s language (issue 24)', () => {
  /** pdftotext -bbox: each word of the first page with its left and right edges (points). */
  function wordsOf(pdf: Uint8Array): { word: string; xMin: number; xMax: number }[] {
    const html = execFileSync('pdftotext', ['-bbox', '-f', '1', '-l', '1', '-', '-'], { input: pdf }).toString();
    return [...html.matchAll(/<word xMin="([\d.]+)" yMin="[\d.]+" xMax="([\d.]+)" yMax="[\d.]+">([^<]*)<\/word>/g)].map(
      (m) => ({ word: m[3]!, xMin: Number(m[1]), xMax: Number(m[2]) }),
    );
  }

  it('prints German fixed texts, event sentences and times as German writes them', async () => {
    const text = textOf(await buildAuditLog(input({ language: 'de', timeZone: 'Europe/Berlin' })));
    expect(text).toMatch(/^Signet Prüfprotokoll Vorgangs-ID 4217 Konto Acme Λtd Erstellt am /);
    expect(text).toContain('Erstellt am 2026-11-21T10:15:30Z (21. November 2026 um 11:15:30 MEZ) Zeitzone');
    expect(text).toContain('Beteiligte First Party Name Ελένη Παπαδοπούλου E-Mail eleni@example.test');
    expect(text).toContain('(21. November 2026 um 11:01:02 MEZ) Formular angesehen (view_form) IP 203.0.113.7');
    expect(text).toContain('Prüfprotokoll · Vorgang 4217 Seite 1 von');
    // An event type without a sentence prints as it is, as in English.
    expect(text).toContain('MEZ) custom_thing');
  });

  it('a Hebrew or Arabic log is laid out from the right; its machine text reads back in order', async () => {
    for (const language of ['he', 'ar'] as const) {
      const pdf = await buildAuditLog(input({ language, auditChain: { events: 9, head: 'f'.repeat(64) } }));
      const words = wordsOf(pdf);
      const right = 595.28 - 50;
      // Lines end at the right margin; the values' column ends the label column's width (110 pt) left of it.
      expect(words.find((w) => w.word === 'Signet')!.xMax, language).toBeCloseTo(right, 0);
      expect(words.find((w) => w.word === '4217')!.xMax, language).toBeCloseTo(right - 110, 0);
      // The chain head as /tools/verify reads it back (mupdf's text of the first page).
      expect(parseChainHead(await firstPageTextHere(pdf)), language).toEqual({ events: 9, head: 'f'.repeat(64) });
      // Latin text inside keeps its order.
      const text = textOf(pdf).replace(/[\u202a-\u202e]/g, '');
      expect(text).toContain('eleni@example.test');
      expect(text).toContain('(view_form)');
    }
  });

  it('Japanese, Chinese and Korean logs are printed in their language (the CJK face), as a subset', async () => {
    const english = await buildAuditLog(input());
    for (const [language, title, generated] of [
      ['ja', '監査ログ', '作成日時'],
      ['zh', '审计日志', '生成时间'],
      ['ko', '감사 로그', '생성 시각'],
    ] as const) {
      const pdf = await buildAuditLog(input({ language }));
      const text = textOf(pdf);
      expect(text, language).toMatch(new RegExp(`^Signet ${title} `));
      expect(text, language).toContain(`${generated} 2026-11-21T10:15:30Z`);
      expect(text, language).not.toContain('Audit Log');
      console.log(`audit log: en ${english.length} bytes, ${language} ${pdf.length} bytes`);
      // A subset of the 5 MB face: its ~150 glyphs used add ~15 KB (measured: en 34 KB, ja/zh/ko
      // 48–50 KB); the whole face, or a subset of thousands of glyphs, would be far over 40 KB.
      expect(pdf.length, language).toBeLessThan(english.length + 40_000);
    }
    // An English log embeds no CJK face.
    expect(Buffer.from(english).toString('latin1')).not.toContain('WenQuanYi');
  });
});
