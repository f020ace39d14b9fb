/**
 * Issue 23's hostile inputs ("Trust, round 2") for `npm run bench:abuse`: each is a `Round2Case`
 * that the attacker process (bench/abuse.ts) sends back to back, alone, during a phase of the read
 * load, so that the read p99 and `/health`'s worst latency of that phase can be set against the
 * quiet phase's (target: within 2×, `/health` under 1 s).
 *
 * The crafted files are those the tests refuse or bound (test/helpers/hostile-inputs.ts): one
 * builder per attack, so the bench and the tests cannot drift apart. Each case says what counts as
 * handled: a refusal (4xx naming the limit), an answer (2xx within the case's limits), or for
 * the cases that measure a delay (another account's webhook, a revoked key's subscription) that
 * delay under its bound.
 *
 * Cases (docs/security.md lists the limits each meets):
 * - PKCS#12 whose MAC iteration count is 1,500,000 (uploadSigningCertificate): refused;
 * - `/tools/verify` with 30 MB and 50 signatures whose /ByteRange ends early, a read-only key: answered;
 * - `/tools/merge` with 50 files × 40 pages sharing one 600 KB stream, and 2 × 1,000 pages: answered;
 * - 3 × 45 MB uploads on one signer's slug: the third refused (the per-signer quota);
 * - account A with the most webhook endpoints, all on a receiver answering one byte per second:
 *   account B's webhook arrives within 500 ms of its event;
 * - 20 bulk sends started at once: at most MAX_ITEMS.activeBulkSends accepted;
 * - an Idempotency-Key reused for another GraphQL operation: 422 with
 *   application/graphql-response+json, 200 with application/json — never 500;
 * - a key revoked while its graphql-ws subscription is open: closed within 1 s.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';
import { MAX_ITEMS } from '../src/limits.ts';
import { hostilePkcs12, sharedContentPdf, signatureFieldsPdf } from '../test/helpers/hostile-inputs.ts';
import { subscribeWs, wsClient } from '../test/helpers/subscriptions.ts';

/** One request's (or one sequence's) outcome: a label for the table and whether it was handled. */
export interface CaseOutcome {
  label: string;
  handled: boolean;
  ms: number;
}

export interface Round2Case {
  name: string;
  /** What handled means, printed under the table. */
  expect: string;
  /**
   * Runs per phase at most (default: back to back until the phase ends): the bulk sends and the
   * webhooks leave real work behind each run (submissions to make, deliveries stuck for the
   * receiver's timeout), which would pile up into the next phases.
   */
  rounds?: number;
  run(): Promise<CaseOutcome>;
}

/** What the cases need of the service under test (made by the bench process, bench/abuse.ts). */
export interface Round2Target {
  url: string;
  /** The bench account's write key (its template is `templateId`). */
  apiKey: string;
  /** A read-only key of the bench account. */
  readOnlyKey: string;
  templateId: number;
  /** Account A: the one with slow webhook receivers. */
  attackerKey: string;
  /** Account B: the one whose webhook must not wait for A's. */
  victimKey: string;
}

type Answer = { status: number; text: string; ms: number };

async function send(
  url: string,
  init: { method: string; headers?: Record<string, string>; body?: string | FormData },
): Promise<Answer> {
  const started = performance.now();
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(60_000) });
    const text = await response.text();
    return { status: response.status, text, ms: performance.now() - started };
  } catch (error) {
    return { status: 0, text: String((error as Error).message ?? error), ms: performance.now() - started };
  }
}

function json(url: string, key: string, method: string, path: string, body?: unknown, headers = {}) {
  return send(`${url}${path}`, {
    method,
    headers: { 'x-auth-token': key, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function graphql(url: string, key: string, query: string, variables?: unknown): Promise<any> {
  const answer = await json(url, key, 'POST', '/graphql', { query, variables });
  if (answer.status !== 200) throw new Error(`POST /graphql: ${answer.status} ${answer.text.slice(0, 300)}`);
  const body = JSON.parse(answer.text);
  if (body.errors) throw new Error(`POST /graphql: ${JSON.stringify(body.errors).slice(0, 300)}`);
  return body.data;
}

/** "422", "200", "no answer", with the error's first words for a refusal. */
function labelOf(answer: Answer): string {
  if (answer.status === 0) return `no answer (${answer.text.slice(0, 60)})`;
  if (answer.status < 400) return String(answer.status);
  let error = '';
  try {
    error = String(JSON.parse(answer.text).error ?? '');
  } catch {
    // not JSON
  }
  return error ? `${answer.status} ${error.slice(0, 48)}` : String(answer.status);
}

/** A receiver on loopback that answers 200, then one byte per second, never ending its answer. */
async function slowReceiver(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('.'), 1000);
      res.write('.');
      res.on('close', () => clearInterval(timer));
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A receiver that answers 200 at once and tells who waits for a path when it arrives (performance.now()). */
async function fastReceiver(): Promise<{
  url: string;
  arrival(path: string): Promise<number>;
  close(): Promise<void>;
}> {
  const waiting = new Map<string, (at: number) => void>();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const at = performance.now();
      res.end('ok');
      waiting.get(req.url ?? '')?.(at);
      waiting.delete(req.url ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrival: (path) =>
      new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(path);
          reject(new Error(`no delivery to ${path} within 30 s`));
        }, 30_000);
        waiting.set(path, (at) => {
          clearTimeout(timer);
          resolve(at);
        });
      }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const TEMPLATE_FIELDS = [{ name: 'Name', role: 'Signer', areas: [{ x: 72, y: 72, w: 200, h: 24, page: 1 }] }];

/**
 * Issue 23's cases against `target`: builds the crafted inputs once (they are sent as they are,
 * serialized once, so that the attacker's own CPU is not what is measured) and sets up what the
 * webhook case needs (a template per account, account A's endpoints on the slow receiver, B's on
 * the fast one).
 * @param pdfBase64 a one-page PDF for the templates, base64
 * @returns the cases, and what stops the receivers
 */
export async function round2Cases(
  target: Round2Target,
  pdfBase64: string,
): Promise<{ cases: Round2Case[]; close(): Promise<void> }> {
  const { url } = target;

  const pkcs12Body = JSON.stringify({
    query: 'mutation ($file: String!) { uploadSigningCertificate(input: {file: $file, password: "secret"}) { id } }',
    variables: { file: hostilePkcs12({ macIterations: 1_500_000 }).toString('base64') },
  });
  const verifyBody = JSON.stringify({
    file: signatureFieldsPdf({ signatures: 50, megabytes: 30 }).toString('base64'),
  });
  const sharedPage = sharedContentPdf({ pages: 40, streamKilobytes: 600 }).toString('base64');
  const mergeBody = JSON.stringify({ files: Array.from({ length: 50 }, () => sharedPage) });
  const thousandPages = sharedContentPdf({ pages: 1_000, streamKilobytes: 600 }).toString('base64');
  const mergeLongBody = JSON.stringify({ files: [thousandPages, thousandPages] });
  const upload = new Uint8Array(randomBytes(45 * 1024 * 1024));

  // The webhook case: A's most endpoints on the slow receiver, B's one on the fast receiver.
  const slow = await slowReceiver();
  const fast = await fastReceiver();
  const templateOf = async (key: string, name: string) => {
    const created = await json(url, key, 'POST', '/api/templates/pdf', {
      name,
      documents: [{ name: 'form', file: pdfBase64 }],
      fields: TEMPLATE_FIELDS,
    });
    if (created.status !== 200) throw new Error(`POST /api/templates/pdf: ${created.status} ${created.text}`);
    return JSON.parse(created.text).id as number;
  };
  const endpoint = (key: string, endpointUrl: string) =>
    graphql(
      url,
      key,
      'mutation ($url: String!) { createWebhookEndpoint(input: {url: $url, events: ["template.updated"]}) { secret } }',
      { url: endpointUrl },
    );
  const attackerTemplate = await templateOf(target.attackerKey, 'A');
  const victimTemplate = await templateOf(target.victimKey, 'B');
  for (let i = 0; i < MAX_ITEMS.webhookEndpoints; i += 1) await endpoint(target.attackerKey, `${slow.url}/a/${i}`);
  await endpoint(target.victimKey, `${fast.url}/b`);
  let renames = 0;
  const rename = (key: string, templateId: number) =>
    json(url, key, 'PUT', `/api/templates/${templateId}`, { name: `renamed ${(renames += 1)}` });

  const newSlug = async () => {
    const created = await json(url, target.apiKey, 'POST', '/api/submissions', {
      template_id: target.templateId,
      send_email: false,
      submitters: [{ role: 'Signer', email: 'uploads@abuse.test' }],
    });
    if (created.status !== 200) throw new Error(`POST /api/submissions: ${created.status} ${created.text}`);
    return new URL(JSON.parse(created.text)[0].embed_src).pathname.split('/').pop()!;
  };
  const uploadOnce = (slug: string) => {
    const form = new FormData();
    form.append('submitter_slug', slug);
    form.append('type', 'file');
    form.append('file', new Blob([upload], { type: 'application/octet-stream' }), 'big.dat');
    return send(`${url}/api/attachments`, { method: 'POST', body: form });
  };

  const preferences =
    'mutation ($combine: Boolean) { updateAccountPreferences(input: {combinePdfResult: $combine}) { id } }';
  let idempotencyKeys = 0;
  const reused = async (accept: string) => {
    const key = `abuse-${process.pid}-${(idempotencyKeys += 1)}`;
    const headers = { 'idempotency-key': key, accept };
    await json(url, target.apiKey, 'POST', '/graphql', { query: preferences, variables: { combine: true } }, headers);
    return json(url, target.apiKey, 'POST', '/graphql', { query: preferences, variables: { combine: false } }, headers);
  };

  const answered = (answer: Answer): CaseOutcome => ({
    label: labelOf(answer),
    handled: answer.status > 0 && answer.status < 500,
    ms: answer.ms,
  });
  const cases: Round2Case[] = [
    {
      name: 'PKCS#12, MAC iterations 1,500,000',
      expect: 'refused (4xx naming the cap) at once',
      async run() {
        const answer = await json(url, target.apiKey, 'POST', '/graphql', pkcs12Body);
        let code: string | undefined;
        try {
          code = JSON.parse(answer.text).errors?.[0]?.extensions?.code;
        } catch {
          // not JSON
        }
        return {
          label: code ? `${answer.status} ${code}` : labelOf(answer),
          handled: code === 'VALIDATION',
          ms: answer.ms,
        };
      },
    },
    {
      name: '/tools/verify, 30 MB, 50 early /ByteRange, read-only key',
      expect: 'answered (or refused naming a limit), never a 5xx',
      run: async () => answered(await json(url, target.readOnlyKey, 'POST', '/api/tools/verify', verifyBody)),
    },
    {
      name: '/tools/merge, 50 × 40 pages sharing 600 KB, read-only key',
      expect: 'answered (200)',
      async run() {
        const answer = await json(url, target.readOnlyKey, 'POST', '/api/tools/merge', mergeBody);
        return { ...answered(answer), handled: answer.status === 200 };
      },
    },
    {
      name: '/tools/merge, 2 × 1,000 pages sharing 600 KB, read-only key',
      expect: 'answered (200) or refused naming a limit (422)',
      run: async () => answered(await json(url, target.readOnlyKey, 'POST', '/api/tools/merge', mergeLongBody)),
    },
    {
      name: 'signer uploads, 3 × 45 MB on one slug',
      expect: '200, 200, then 422 (the per-signer quota)',
      async run() {
        const slug = await newSlug();
        const started = performance.now();
        const answers: Answer[] = [];
        for (let i = 0; i < 3; i += 1) answers.push(await uploadOnce(slug));
        const statuses = answers.map((a) => a.status);
        const handled = statuses[0] === 200 && statuses[1] === 200 && statuses[2] === 422;
        return { label: answers.map(labelOf).join(', '), handled, ms: performance.now() - started };
      },
    },
    {
      name: `webhooks: A's ${MAX_ITEMS.webhookEndpoints} slow endpoints, then B's event`,
      expect: "B's webhook arrives within 500 ms of its event",
      rounds: 3,
      async run() {
        await rename(target.attackerKey, attackerTemplate);
        await rename(target.attackerKey, attackerTemplate);
        const arrival = fast.arrival('/b');
        const raised = performance.now();
        await rename(target.victimKey, victimTemplate);
        const waited = (await arrival) - raised;
        return { label: `B after ${Math.round(waited / 100) / 10} s`, handled: waited < 500, ms: waited };
      },
    },
    {
      name: '20 bulk sends started at once',
      expect: `at most ${MAX_ITEMS.activeBulkSends} accepted, the rest 422`,
      rounds: 1,
      async run() {
        const started = performance.now();
        const rows = Array.from({ length: 20 }, (_, i) => ({ Email: `bulk${i}@abuse.test` }));
        const answers = await Promise.all(
          Array.from({ length: 20 }, () =>
            json(url, target.apiKey, 'POST', `/api/templates/${target.templateId}/submissions/bulk`, {
              send_email: false,
              rows,
            }),
          ),
        );
        const accepted = answers.filter((a) => a.status < 300).length;
        const refused = answers.filter((a) => a.status === 422).length;
        return {
          label: `${accepted} accepted, ${refused} refused`,
          handled: accepted <= MAX_ITEMS.activeBulkSends && accepted + refused === 20,
          ms: performance.now() - started,
        };
      },
    },
    {
      name: 'Idempotency-Key reused for another GraphQL operation',
      expect: '422 with application/graphql-response+json, 200 with application/json',
      async run() {
        const strict = await reused('application/graphql-response+json');
        const legacy = await reused('application/json');
        return {
          label: `${strict.status} / ${legacy.status}`,
          handled: strict.status === 422 && legacy.status === 200,
          ms: Math.max(strict.ms, legacy.ms),
        };
      },
    },
    {
      name: 'a revoked key’s graphql-ws subscription',
      expect: 'closed within 1 s of revokeApiKey',
      async run() {
        const made = await graphql(
          url,
          target.apiKey,
          'mutation { createApiKey(input: {name: "doomed"}) { apiKey { id } token } }',
        );
        const client = wsClient(url, made.createApiKey.token);
        const feed = subscribeWs(client, 'subscription { formEvents { eventType } }');
        // The subscription is live once the server acknowledged it: wait for the connection.
        await new Promise<void>((resolve) => {
          const off = client.on('connected', () => {
            off();
            resolve();
          });
        });
        await new Promise((resolve) => setTimeout(resolve, 100));
        const closed = new Promise<number>((resolve) => {
          const done = () => resolve(performance.now());
          client.on('closed', done);
          feed.next(30_000).then(done, done);
        });
        const revoked = performance.now();
        await graphql(url, target.apiKey, 'mutation ($id: Int!) { revokeApiKey(input: {id: $id}) { apiKey { id } } }', {
          id: made.createApiKey.apiKey.id,
        });
        const waited = (await closed) - revoked;
        feed.close();
        await client.dispose();
        return { label: `closed after ${Math.round(waited)} ms`, handled: waited < 1000, ms: waited };
      },
    },
  ];
  return {
    cases,
    async close() {
      await slow.close();
      await fast.close();
    },
  };
}
