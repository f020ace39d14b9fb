/**
 * Mail and SMS providers against real local servers: an SMTP server (smtp-server + mailparser),
 * and HTTP servers that check each request as SendGrid's v3 Mail Send API and Twilio's Messages
 * API document it.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  DeliveryError,
  MailDeliveryError,
  SmsDeliveryError,
  type NotificationLogger,
} from '../src/notifications/delivery-error.ts';
import { createMailer, type OutgoingEmail } from '../src/notifications/mailer.ts';
import { createSmsSender } from '../src/notifications/sms.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';

const NO_MAIL = { sendgridApiKey: undefined, sendgridApiUrl: 'https://api.sendgrid.com', smtpUrl: undefined };

function recordingLogger() {
  const lines: Array<{ level: string; obj: object; msg?: string }> = [];
  const at = (level: string) => (obj: object, msg?: string) => void lines.push({ level, obj, msg });
  const logger: NotificationLogger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  return { logger, lines };
}

interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A local HTTP server: records each request and answers with `handler` (or never, for timeouts). */
async function startHttpFake(handler: (req: SeenRequest, res: http.ServerResponse) => void) {
  const requests: SeenRequest[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      requests.push(seen);
      handler(seen, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function caught(promise: Promise<unknown>): Promise<DeliveryError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(DeliveryError);
    return error as DeliveryError;
  }
  throw new Error('expected a DeliveryError');
}

const MESSAGE: OutgoingEmail = {
  from: 'Signet <no-reply@signet.test>',
  to: ['Ann Lee <ann@example.test>'],
  cc: ['carl@example.test'],
  bcc: ['audit@example.test'],
  replyTo: 'Owner <owner@example.test>',
  subject: 'You are invited to sign a document',
  text: 'Hi there,\n\nReview and Sign: http://localhost:3000/s/abc',
  html: '<p>Hi there,</p><p><a href="http://localhost:3000/s/abc">Review and Sign</a></p>',
};

describe('SMTP mailer', () => {
  let smtp: TestSmtpServer;
  beforeAll(async () => {
    smtp = await startSmtpServer();
  });
  afterAll(async () => {
    await smtp.close();
  });
  afterEach(() => {
    smtp.messages.length = 0;
  });

  it(
    'is chosen by SMTP_URL and delivers from, to, cc, reply-to, subject, text and html; ' + 'bcc only in the envelope',
    async () => {
      const mailer = createMailer({ ...NO_MAIL, smtpUrl: smtp.url }, recordingLogger().logger);
      expect(mailer.name).toBe('smtp');
      const result = await mailer.send(MESSAGE);
      const [mail] = await smtp.waitForMessages(1);

      expect(mail.envelope.mailFrom).toBe('no-reply@signet.test');
      expect(mail.envelope.rcptTo.sort()).toEqual(['ann@example.test', 'audit@example.test', 'carl@example.test']);
      const parsed = mail.parsed;
      expect(parsed.from?.value).toEqual([{ name: 'Signet', address: 'no-reply@signet.test' }]);
      expect(parsed.to && !Array.isArray(parsed.to) ? parsed.to.value : null).toEqual([
        { name: 'Ann Lee', address: 'ann@example.test' },
      ]);
      expect(parsed.cc && !Array.isArray(parsed.cc) ? parsed.cc.value : null).toEqual([
        { name: '', address: 'carl@example.test' },
      ]);
      expect(parsed.replyTo?.value).toEqual([{ name: 'Owner', address: 'owner@example.test' }]);
      expect(parsed.bcc).toBeUndefined();
      expect(mail.raw.toString('utf8')).not.toMatch(/audit@example\.test/);
      expect(parsed.subject).toBe(MESSAGE.subject);
      expect(parsed.text?.trim()).toBe(MESSAGE.text);
      expect(parsed.html).toContain('<a href="http://localhost:3000/s/abc">Review and Sign</a>');
      expect(result.providerMessageId).toBe(parsed.messageId);
    },
  );

  it('sends each recipient once when to, cc and bcc repeat an address', async () => {
    const mailer = createMailer({ ...NO_MAIL, smtpUrl: smtp.url }, recordingLogger().logger);
    await mailer.send({
      ...MESSAGE,
      cc: ['ANN@example.test', 'carl@example.test'],
      bcc: ['carl@example.test', 'audit@example.test'],
    });
    const [mail] = await smtp.waitForMessages(1);
    expect(mail.envelope.rcptTo.sort()).toEqual(['ann@example.test', 'audit@example.test', 'carl@example.test']);
  });

  it('a 4xx reply is retryable, a 5xx reply permanent', async () => {
    const mailer = createMailer({ ...NO_MAIL, smtpUrl: smtp.url }, recordingLogger().logger);
    smtp.rejectNext(451, 'Try again later');
    const transient = await caught(mailer.send(MESSAGE));
    expect(transient).toBeInstanceOf(MailDeliveryError);
    expect(transient).toMatchObject({ retryable: true, provider: 'smtp', status: 451 });

    smtp.rejectNext(550, 'Mailbox unavailable');
    const refused = await caught(mailer.send(MESSAGE));
    expect(refused).toMatchObject({ retryable: false, provider: 'smtp', status: 550 });
    expect(refused.message).toContain('Mailbox unavailable');
    expect(smtp.messages).toHaveLength(0);
  });

  it('logs in with the credentials of the URL; a wrong password is retryable (configuration)', async () => {
    const secured = await startSmtpServer({ auth: { user: 'mailer', pass: 's3cret' } });
    try {
      await createMailer({ ...NO_MAIL, smtpUrl: secured.url }, recordingLogger().logger).send(MESSAGE);
      const [mail] = await secured.waitForMessages(1);
      expect(mail.user).toBe('mailer');

      const wrong = secured.url.replace('s3cret', 'wrong');
      const error = await caught(createMailer({ ...NO_MAIL, smtpUrl: wrong }, recordingLogger().logger).send(MESSAGE));
      expect(error).toMatchObject({ retryable: true, status: 535 });
    } finally {
      await secured.close();
    }
  });

  it('a refused connection and a silent server are retryable, the latter after the greeting timeout', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const refused = await caught(
      createMailer({ ...NO_MAIL, smtpUrl: `smtp://127.0.0.1:${closedPort}` }, recordingLogger().logger).send(MESSAGE),
    );
    expect(refused).toMatchObject({ retryable: true, provider: 'smtp' });

    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const mailer = createMailer(
        { ...NO_MAIL, smtpUrl: `smtp://127.0.0.1:${(silent.address() as AddressInfo).port}` },
        recordingLogger().logger,
        { timeouts: { connection: 300, greeting: 300, socket: 300 } },
      );
      const started = Date.now();
      const timedOut = await caught(mailer.send(MESSAGE));
      expect(timedOut).toMatchObject({ retryable: true, code: 'ETIMEDOUT' });
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});

describe('SendGrid mailer', () => {
  it('is chosen by SENDGRID_API_KEY (before SMTP_URL) and POSTs /v3/mail/send as SendGrid documents it', async () => {
    const fake = await startHttpFake((_req, res) => {
      res.writeHead(202, { 'X-Message-Id': 'sg-msg-1' });
      res.end();
    });
    try {
      const mailer = createMailer(
        { sendgridApiKey: 'SG.test-key', sendgridApiUrl: fake.url, smtpUrl: 'smtp://127.0.0.1:1' },
        recordingLogger().logger,
      );
      expect(mailer.name).toBe('sendgrid');
      const result = await mailer.send({ ...MESSAGE, from: '"Signet, Inc." <no-reply@signet.test>' });
      expect(result).toEqual({ providerMessageId: 'sg-msg-1' });

      expect(fake.requests).toHaveLength(1);
      const [request] = fake.requests;
      expect(request.method).toBe('POST');
      expect(request.url).toBe('/v3/mail/send');
      expect(request.headers.authorization).toBe('Bearer SG.test-key');
      expect(request.headers['content-type']).toMatch(/^application\/json/);
      expect(JSON.parse(request.body)).toEqual({
        personalizations: [
          {
            to: [{ email: 'ann@example.test', name: 'Ann Lee' }],
            cc: [{ email: 'carl@example.test' }],
            bcc: [{ email: 'audit@example.test' }],
          },
        ],
        from: { email: 'no-reply@signet.test', name: 'Signet, Inc.' },
        reply_to: { email: 'owner@example.test', name: 'Owner' },
        subject: MESSAGE.subject,
        content: [
          { type: 'text/plain', value: MESSAGE.text },
          { type: 'text/html', value: MESSAGE.html },
        ],
      });
    } finally {
      await fake.close();
    }
  });

  it('leaves out cc, bcc, reply_to and html when the message has none', async () => {
    const fake = await startHttpFake((_req, res) => {
      res.writeHead(202);
      res.end();
    });
    try {
      const mailer = createMailer(
        { ...NO_MAIL, sendgridApiKey: 'SG.k', sendgridApiUrl: fake.url },
        recordingLogger().logger,
      );
      const result = await mailer.send({
        from: 'no-reply@signet.test',
        to: ['ann@example.test'],
        subject: 'S',
        text: 'T',
      });
      expect(result.providerMessageId).toBeUndefined();
      expect(JSON.parse(fake.requests[0].body)).toEqual({
        personalizations: [{ to: [{ email: 'ann@example.test' }] }],
        from: { email: 'no-reply@signet.test' },
        subject: 'S',
        content: [{ type: 'text/plain', value: 'T' }],
      });
    } finally {
      await fake.close();
    }
  });

  it('a 500 is retryable; a 400 is permanent and carries SendGrid’s error message', async () => {
    let status = 500;
    const fake = await startHttpFake((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(
        status === 400
          ? JSON.stringify({
              errors: [
                { message: 'Does not contain a valid address.', field: 'personalizations.0.to.0.email', help: null },
              ],
            })
          : JSON.stringify({ errors: [{ message: 'Internal error' }] }),
      );
    });
    try {
      const mailer = createMailer(
        { ...NO_MAIL, sendgridApiKey: 'SG.k', sendgridApiUrl: fake.url },
        recordingLogger().logger,
      );
      const outage = await caught(mailer.send(MESSAGE));
      expect(outage).toBeInstanceOf(MailDeliveryError);
      expect(outage).toMatchObject({ retryable: true, provider: 'sendgrid', status: 500 });

      status = 400;
      const refused = await caught(mailer.send(MESSAGE));
      expect(refused).toMatchObject({ retryable: false, provider: 'sendgrid', status: 400 });
      expect(refused.message).toContain('Does not contain a valid address.');
    } finally {
      await fake.close();
    }
  });

  it('no answer within the timeout is retryable', async () => {
    const fake = await startHttpFake(() => undefined);
    try {
      const mailer = createMailer(
        { ...NO_MAIL, sendgridApiKey: 'SG.k', sendgridApiUrl: fake.url },
        recordingLogger().logger,
        {
          timeouts: { socket: 300 },
        },
      );
      const error = await caught(mailer.send(MESSAGE));
      expect(error).toMatchObject({ retryable: true, provider: 'sendgrid' });
    } finally {
      await fake.close();
    }
  });
});

describe('outbox mailer', () => {
  it('is the default: logs recipients and subject at info and sends nothing', async () => {
    const { logger, lines } = recordingLogger();
    const mailer = createMailer(NO_MAIL, logger);
    expect(mailer.name).toBe('outbox');
    expect(await mailer.send(MESSAGE)).toEqual({});
    expect(lines).toHaveLength(1);
    expect(lines[0].level).toBe('info');
    expect(lines[0].obj).toMatchObject({
      to: MESSAGE.to,
      cc: MESSAGE.cc,
      bcc: MESSAGE.bcc,
      subject: MESSAGE.subject,
    });
  });
});

describe('Twilio SMS sender', () => {
  const TWILIO = { accountSid: 'AC0123456789abcdef0123456789abcdef', authToken: 'tw-token', from: '+15005550006' };

  it('POSTs form-encoded To, From and Body to Messages.json with Basic auth, as Twilio documents it', async () => {
    const fake = await startHttpFake((_req, res) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ sid: 'SM0123456789abcdef0123456789abcdef', status: 'queued' }));
    });
    try {
      const sender = createSmsSender({ twilio: TWILIO, twilioApiUrl: fake.url }, recordingLogger().logger);
      expect(sender.name).toBe('twilio');
      const result = await sender.send({
        to: '+14155550100',
        body: 'Acme has invited you to sign a document: http://x.test/s/abc',
      });
      expect(result).toEqual({ providerMessageId: 'SM0123456789abcdef0123456789abcdef' });

      const [request] = fake.requests;
      expect(request.method).toBe('POST');
      expect(request.url).toBe(`/2010-04-01/Accounts/${TWILIO.accountSid}/Messages.json`);
      expect(request.headers.authorization).toBe(
        `Basic ${Buffer.from(`${TWILIO.accountSid}:${TWILIO.authToken}`).toString('base64')}`,
      );
      expect(request.headers['content-type']).toBe('application/x-www-form-urlencoded');
      expect(Object.fromEntries(new URLSearchParams(request.body))).toEqual({
        To: '+14155550100',
        From: TWILIO.from,
        Body: 'Acme has invited you to sign a document: http://x.test/s/abc',
      });

      await sender.send({ to: '+14155550100', from: '+15005550001', body: 'x' });
      expect(new URLSearchParams(fake.requests[1].body).get('From')).toBe('+15005550001');
    } finally {
      await fake.close();
    }
  });

  it('a 400 is permanent with Twilio’s code and message; 503 and 401 are retryable', async () => {
    let status = 400;
    const fake = await startHttpFake((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(
          status === 400
            ? {
                code: 21211,
                message: "The 'To' number +1555 is not a valid phone number.",
                more_info: 'https://www.twilio.com/docs/errors/21211',
                status: 400,
              }
            : { code: 20003, message: 'Authenticate', status },
        ),
      );
    });
    try {
      const sender = createSmsSender({ twilio: TWILIO, twilioApiUrl: fake.url }, recordingLogger().logger);
      const refused = await caught(sender.send({ to: '+1555', body: 'x' }));
      expect(refused).toBeInstanceOf(SmsDeliveryError);
      expect(refused).toMatchObject({ retryable: false, provider: 'twilio', status: 400, code: '21211' });
      expect(refused.message).toContain('not a valid phone number');

      status = 503;
      expect(await caught(sender.send({ to: '+14155550100', body: 'x' }))).toMatchObject({
        retryable: true,
        status: 503,
      });
      status = 401;
      expect(await caught(sender.send({ to: '+14155550100', body: 'x' }))).toMatchObject({
        retryable: true,
        status: 401,
      });
    } finally {
      await fake.close();
    }
  });

  it('no answer within the timeout, or no server, is retryable', async () => {
    const fake = await startHttpFake(() => undefined);
    try {
      const sender = createSmsSender({ twilio: TWILIO, twilioApiUrl: fake.url }, recordingLogger().logger, {
        timeout: 300,
      });
      expect(await caught(sender.send({ to: '+14155550100', body: 'x' }))).toMatchObject({
        retryable: true,
        code: 'ETIMEDOUT',
      });
    } finally {
      await fake.close();
    }
    const sender = createSmsSender({ twilio: TWILIO, twilioApiUrl: fake.url }, recordingLogger().logger);
    expect(await caught(sender.send({ to: '+14155550100', body: 'x' }))).toMatchObject({
      retryable: true,
      code: 'ECONNREFUSED',
    });
  });

  it('without TWILIO_* the outbox logs the SMS at info and sends nothing', async () => {
    const { logger, lines } = recordingLogger();
    const sender = createSmsSender({ twilio: undefined, twilioApiUrl: 'https://api.twilio.com' }, logger);
    expect(sender.name).toBe('outbox');
    expect(await sender.send({ to: '+14155550100', body: 'hello' })).toEqual({});
    expect(lines).toEqual([
      expect.objectContaining({ level: 'info', obj: expect.objectContaining({ to: '+14155550100' }) }),
    ]);
  });
});
