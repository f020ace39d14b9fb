/**
 * A webhook receiver on loopback (node:http): records every request with its arrival time and
 * answers as the test's `respond` says (status, body, headers, or never).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  /** Date.now() when the whole body had arrived. */
  at: number;
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The body parsed, or undefined when it is not JSON. */
  json: any;
}

export interface Answer {
  status?: number;
  body?: string;
  headers?: Record<string, string>;
  /** Never answer (the connection stays open until the client gives up or close()). */
  hang?: boolean;
}

export interface Receiver {
  /** Base URL, e.g. http://127.0.0.1:40123 (no trailing slash). */
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** Replaces how requests are answered; `index` counts requests from 0, across paths. */
  respond(answer: (request: ReceivedRequest, index: number) => Answer): void;
  /** Resolves with the requests once `predicate` holds for the list (polls every 20 ms). */
  waitFor(predicate: (requests: ReceivedRequest[]) => boolean, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/** Starts a receiver answering 200 `ok` until told otherwise. */
export async function startReceiver(host = '127.0.0.1'): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  let answer: (request: ReceivedRequest, index: number) => Answer = () => ({ status: 200, body: 'ok' });
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const received: ReceivedRequest = {
        at: Date.now(),
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        json,
      };
      const index = requests.length;
      requests.push(received);
      const reply = answer(received, index);
      if (reply.hang) return;
      res.writeHead(reply.status ?? 200, { 'content-type': 'text/plain', ...reply.headers });
      res.end(reply.body ?? '');
    });
  });
  const sockets = new Set<import('node:net').Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    port,
    requests,
    respond(next) {
      answer = next;
    },
    async waitFor(predicate, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(requests)) {
        if (Date.now() > deadline) {
          throw new Error(
            `receiver: condition not met within ${timeoutMs} ms; got ${requests.length} request(s): ` +
              `${requests.map((r) => `${r.path} ${r.json?.event_type ?? ''}`).join(', ')}`,
          );
        }
        await new Promise((r) => setTimeout(r, 20));
      }
      return requests;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Checks an X-Docuseal-Signature header against a secret the way a receiver following
 * docs/webhooks.md does — written here independently of src/webhooks/signature.ts: one of the
 * space-separated `<ts>.<hex>` must equal HMAC-SHA256(secret, "<ts>.<body>") in hex.
 */
export function signatureMatches(header: string | string[] | undefined, secret: string, body: string): boolean {
  if (typeof header !== 'string') return false;
  return header.split(' ').some((part) => {
    const dot = part.indexOf('.');
    if (dot < 0) return false;
    const timestamp = part.slice(0, dot);
    const given = Buffer.from(part.slice(dot + 1), 'hex');
    const expected = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest();
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

/**
 * The `destination` option of createWebhookEndpoint for a test's loopback receiver: every address
 * allowed, as WEBHOOK_ALLOW_PRIVATE=true allows it (src/webhooks/endpoints.ts refuses, as it is
 * added, a URL delivery would refuse).
 */
export const ANY_DESTINATION = { policy: { allowPrivate: true, allowedHosts: [] as string[] }, timeoutMs: 2000 };

/**
 * Gives an account a webhook endpoint subscribed to every event type, so that each event it
 * raises is a persisted `dispatch-event` job (the service enqueues none for an event nobody
 * subscribes to: src/events/events.ts). The URL is a closed loopback port that the default
 * configuration refuses (private address), so deliveries fail at once and wait for a retry; it is
 * added as WEBHOOK_ALLOW_PRIVATE would let it be (ANY_DESTINATION).
 */
export async function subscribeToEveryEvent(db: import('../../src/db/client.ts').Db, accountId: number): Promise<void> {
  const { createWebhookEndpoint } = await import('../../src/webhooks/endpoints.ts');
  const { EVENT_TYPES } = await import('../../src/events/events.ts');
  await createWebhookEndpoint(db, {
    accountId,
    url: 'http://127.0.0.1:9/every-event',
    events: [...EVENT_TYPES],
    destination: ANY_DESTINATION,
  });
}
