/**
 * A real SMTP server in the test process (smtp-server on 127.0.0.1, a free port), keeping every
 * message it accepts with its envelope and the message parsed by mailparser.
 */
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerAddress } from 'smtp-server';

export interface ReceivedMail {
  /** MAIL FROM and RCPT TO as the client sent them (RCPT TO includes Bcc recipients). */
  envelope: { mailFrom: string | undefined; rcptTo: string[] };
  /** The authenticated user, when the client logged in. */
  user: string | undefined;
  parsed: ParsedMail;
  raw: Buffer;
  /** When its DATA ended (Date.now()): when the message arrived. */
  receivedAt: number;
}

export interface TestSmtpServer {
  /** smtp://[user:pass@]127.0.0.1:<port> for SMTP_URL. */
  url: string;
  port: number;
  messages: ReceivedMail[];
  /** Resolves once `count` messages have arrived; rejects after `timeoutMs`. */
  waitForMessages(count: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  /** The next message's DATA is answered with this SMTP reply instead of 250 (e.g. 451 or 550). */
  rejectNext(responseCode: number, message?: string): void;
  /**
   * The next message's DATA is never answered (nor kept): the sender waits in the middle of the
   * send, e.g. to be killed there. Resolves once that message's DATA has arrived.
   */
  holdNext(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts the server. Plain text only (STARTTLS is not offered).
 * @param options.auth credentials to require (then put in `url`); without it, AUTH is optional
 */
export async function startSmtpServer(
  options: { auth?: { user: string; pass: string } } = {},
): Promise<TestSmtpServer> {
  const messages: ReceivedMail[] = [];
  const waiters: Array<() => void> = [];
  const rejections: Array<{ responseCode: number; message: string }> = [];
  const holds: Array<() => void> = [];
  const auth = options.auth;

  const server = new SMTPServer({
    secure: false,
    disabledCommands: auth ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
    authOptional: !auth,
    allowInsecureAuth: true,
    logger: false,
    onAuth(credentials, _session, callback) {
      if (auth && credentials.username === auth.user && credentials.password === auth.pass) {
        callback(null, { user: credentials.username });
      } else {
        callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
      }
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', callback);
      stream.on('end', () => {
        const receivedAt = Date.now();
        const hold = holds.shift();
        if (hold) {
          hold();
          return;
        }
        const rejection = rejections.shift();
        if (rejection) {
          callback(Object.assign(new Error(rejection.message), { responseCode: rejection.responseCode }));
          return;
        }
        const raw = Buffer.concat(chunks);
        simpleParser(raw)
          .then((parsed) => {
            const mailFrom = session.envelope.mailFrom;
            messages.push({
              envelope: {
                mailFrom: mailFrom ? mailFrom.address : undefined,
                rcptTo: session.envelope.rcptTo.map((a: SMTPServerAddress) => a.address),
              },
              user: typeof session.user === 'string' ? session.user : undefined,
              parsed,
              raw,
              receivedAt,
            });
            for (const wake of waiters.splice(0)) wake();
            callback();
          })
          .catch(callback);
      });
    },
  });
  server.on('error', () => undefined);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  const credentials = auth ? `${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.pass)}@` : '';

  return {
    url: `smtp://${credentials}127.0.0.1:${port}`,
    port,
    messages,
    async waitForMessages(count, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`SMTP server: ${messages.length} of ${count} messages after ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return messages.slice(0, count);
    },
    rejectNext(responseCode, message = responseCode >= 500 ? 'Rejected' : 'Try again later') {
      rejections.push({ responseCode, message });
    },
    holdNext() {
      return new Promise<void>((resolve) => holds.push(resolve));
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
