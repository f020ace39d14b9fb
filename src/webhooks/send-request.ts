/**
 * One webhook HTTP request (reference/docuseal-behaviour.md §9 "Request", ../shared/DESIGN.md
 * "Security model"):
 * - POST with the given headers and body; redirects are not followed (a 3xx is an answer, and
 *   its Location is never fetched); status < 400 is success;
 * - connect timeout (name resolution + TCP connect) and response timeout (from the connection to
 *   the end of the answer) apart;
 * - destinations that resolve to private, loopback or other non-public addresses are refused
 *   unless allowed (WEBHOOK_ALLOW_PRIVATE, WEBHOOK_ALLOWED_HOSTS). The host is resolved once per
 *   request, every address is checked, and the socket is opened to the checked address (pinned
 *   lookup), so a name that changes its answer between check and connection (DNS rebinding) gets
 *   nowhere. checkWebhookDestination runs the same resolution and check when a URL is added or
 *   changed (src/webhooks/endpoints.ts), so that a URL every delivery would refuse is refused then;
 * - connections are kept alive and reused per destination: one http/https Agent per (protocol,
 *   checked addresses, port, TLS server name), at most AGENT_MAX_SOCKETS sockets each, idle ones
 *   closed after AGENT_IDLE_MS (or sooner when the receiver's `Keep-Alive: timeout` says so). A
 *   request reuses only a socket of the agent of the addresses it has just resolved and checked,
 *   so a refused or changed resolution never reaches an old socket. The connect timeout applies
 *   when a socket is opened (a reused one is connected already); the response timeout applies to
 *   every request. A request whose reused socket turns out closed by the receiver (reset before
 *   any answer: the keep-alive race) is sent once more on a new connection.
 * It never throws: every outcome is a WebhookResponse to record as an attempt.
 *
 * What the account is told (the attempt's `error`, shown by the API and sendTestWebhook) never
 * says how the network answered: a destination that is refused, does not resolve, refuses the
 * connection, times out or fails TLS is one and the same WEBHOOK_REQUEST_FAILED, so that a
 * webhook URL cannot be used to learn which internal names resolve, to what, or which ports
 * answer (issue 12 §4). The reason is in `detail`, for the server log only. An HTTP answer is the
 * receiver's own and is reported (`HTTP 500 Internal Server Error`).
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { isPublicAddress } from '../documents/load-file-input.ts';

/** The account's view of every failure without an HTTP answer (see the module comment). */
export const WEBHOOK_REQUEST_FAILED = 'Webhook request failed';

/** Bytes of the response body kept on the attempt ("first bytes of the response"). */
export const RESPONSE_BODY_KEPT_BYTES = 1024;
/** Bytes read from a response at most; the rest is not waited for. */
const RESPONSE_READ_LIMIT = 64 * 1024;
/**
 * Sockets per destination at most (open at once): above what an instance sends at once
 * (WEBHOOK_CONCURRENCY, at most 200), so that no request waits for a socket. Many accounts' endpoints
 * may share a destination (one automation service's host): a request of one waiting for a socket that
 * another account's slow request holds would undo fair delivery (src/webhooks/deliver-webhook.ts).
 */
export const AGENT_MAX_SOCKETS = 256;
/** Idle kept-alive sockets kept per destination at most (the rest are closed as their requests end). */
const AGENT_MAX_FREE_SOCKETS = 40;
/**
 * Milliseconds an idle kept-alive socket stays open (below common server keep-alive timeouts:
 * Node 5 s, nginx 75 s).
 */
export const AGENT_IDLE_MS = 4000;
/** Destinations whose agents are kept; past this, agents without sockets are dropped first. */
const MAX_AGENTS = 256;

export interface DestinationPolicy {
  /** Any address is allowed (tests). */
  allowPrivate: boolean;
  /** Lower-case host names, IP addresses and CIDR ranges allowed even when not public. */
  allowedHosts: string[];
}

export interface SendWebhookRequestOptions {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Milliseconds for resolution and TCP connect. */
  connectTimeoutMs: number;
  /** Milliseconds from connection to the end of the answer. */
  responseTimeoutMs: number;
  policy: DestinationPolicy;
  /** Resolves a host name; default dns.lookup(all). Tests inject fakes. */
  resolve?: (hostname: string) => Promise<{ address: string; family: number }[]>;
}

export interface WebhookResponse {
  /** status < 400. */
  ok: boolean;
  /** HTTP status, or null when there was no answer. */
  statusCode: number | null;
  /** Milliseconds from the start (resolution included) to the end or the failure. */
  durationMs: number;
  /**
   * Why it failed as the account may see it: `HTTP 500 …` for an answer, WEBHOOK_REQUEST_FAILED
   * for anything else (refused destination, resolution, connection, timeout, TLS); null on success.
   */
  error: string | null;
  /**
   * The reason behind WEBHOOK_REQUEST_FAILED (`Refused: <host> resolves to <address>…`, `Connect
   * timeout…`, `Connection refused`…), for the server log only: never stored on the attempt nor
   * shown to the account. Absent otherwise.
   */
  detail?: string;
  /** The first RESPONSE_BODY_KEPT_BYTES of the body as text, or null when there was none. */
  responseBody: string | null;
}

/** Sends one webhook request. See the module comment; never throws. */
export async function sendWebhookRequest(options: SendWebhookRequestOptions): Promise<WebhookResponse> {
  const started = performance.now();
  const done = (result: Omit<WebhookResponse, 'durationMs'>): WebhookResponse => ({
    ...result,
    durationMs: Math.round(performance.now() - started),
  });
  const failed = (error: string, statusCode: number | null = null, responseBody: string | null = null) =>
    done({ ok: false, statusCode, error, responseBody });
  /** No answer: the account sees WEBHOOK_REQUEST_FAILED, the log gets why. */
  const unreached = (detail: string) => ({ ...failed(WEBHOOK_REQUEST_FAILED), detail });

  let url: URL;
  try {
    url = new URL(options.url);
  } catch {
    return failed('Invalid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return failed('Only http and https URLs are allowed');

  const controller = new AbortController();
  let phase: 'connect' | 'response' = 'connect';
  let timer = setTimeout(() => controller.abort(), options.connectTimeoutMs);
  try {
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    const resolved = await resolveHost(host, options.resolve, controller.signal);
    if (typeof resolved === 'string')
      return unreached(controller.signal.aborted ? connectTimeoutMessage(options.connectTimeoutMs) : resolved);
    const refused = resolved.find((entry) => !isAllowed(host, entry.address, options.policy));
    if (refused) return unreached(refusedDetail(host, refused.address));
    const response = await post(url, resolved, options, controller.signal, () => {
      // Connected: the response timeout starts now.
      phase = 'response';
      clearTimeout(timer);
      timer = setTimeout(() => controller.abort(), options.responseTimeoutMs);
    });
    const status = response.message.statusCode ?? 0;
    const body = await readBody(response.message, controller.signal).catch((error: unknown) => {
      if (controller.signal.aborted) throw error;
      // A body cut short after a complete status line still counts as the receiver's answer.
      return null;
    });
    const text = body === null ? null : bodyText(body);
    if (status >= 400)
      return failed(
        `HTTP ${status}${response.message.statusMessage ? ` ${response.message.statusMessage}` : ''}`,
        status,
        text,
      );
    return done({ ok: true, statusCode: status, error: null, responseBody: text });
  } catch (error) {
    if (controller.signal.aborted) {
      return unreached(
        phase === 'connect'
          ? connectTimeoutMessage(options.connectTimeoutMs)
          : `Response timeout: no complete answer within ${seconds(options.responseTimeoutMs)} of connecting`,
      );
    }
    return unreached(connectionFailure(error));
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What the account is told when a webhook URL is refused as it is added or changed (src/webhooks/
 * endpoints.ts): delivery's own words (WEBHOOK_REQUEST_FAILED) with the one reason that covers both
 * a non-public address and a name that does not resolve, so that adding URLs cannot be used to
 * learn which internal names resolve either (issue 12 §4).
 */
export const WEBHOOK_DESTINATION_REFUSED =
  `${WEBHOOK_REQUEST_FAILED}: the URL's host is not a public address, or its name does not resolve, so every ` +
  'delivery to it would be refused (an operator may allow it with WEBHOOK_ALLOWED_HOSTS)';

export interface CheckWebhookDestinationOptions {
  policy: DestinationPolicy;
  /** Milliseconds allowed for resolving the host (the connect timeout of a delivery). */
  timeoutMs: number;
  /** Resolves a host name; default dns.lookup(all). Tests inject fakes. */
  resolve?: SendWebhookRequestOptions['resolve'];
}

/**
 * Whether a delivery to `url` would pass the destination check of sendWebhookRequest: the host
 * resolves (within `timeoutMs`) and every address it resolves to is allowed (isAllowed). Sends
 * nothing. A name's answer may change later: delivery checks again every time.
 * @param url an http(s) URL (validated by the caller)
 * @returns null when allowed; otherwise why not, for the server log only (the account is told
 *   WEBHOOK_DESTINATION_REFUSED)
 */
export async function checkWebhookDestination(
  url: string,
  options: CheckWebhookDestinationOptions,
): Promise<string | null> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'Invalid URL';
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs);
  try {
    const resolved = await resolveHost(host, options.resolve, controller.signal);
    if (typeof resolved === 'string')
      return controller.signal.aborted
        ? `The host name ${host} did not resolve within ${seconds(options.timeoutMs)}`
        : resolved;
    const refused = resolved.find((entry) => !isAllowed(host, entry.address, options.policy));
    return refused ? refusedDetail(host, refused.address) : null;
  } finally {
    clearTimeout(timer);
  }
}

function refusedDetail(host: string, address: string): string {
  return (
    `Refused: ${host} resolves to ${address}, a private, loopback or otherwise non-public address ` +
    '(allow it with WEBHOOK_ALLOWED_HOSTS, or WEBHOOK_ALLOW_PRIVATE for tests)'
  );
}

/**
 * Whether a destination address may be reached: always with allowPrivate; when the host name or
 * the address is on the allowlist (an entry may be a CIDR range); otherwise only public unicast
 * addresses (isPublicAddress).
 */
export function isAllowed(host: string, address: string, policy: DestinationPolicy): boolean {
  if (policy.allowPrivate || isPublicAddress(address)) return true;
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  let parsed: ipaddr.IPv4 | ipaddr.IPv6 | undefined;
  try {
    parsed = ipaddr.process(address.split('%')[0]!);
  } catch {
    parsed = undefined;
  }
  return policy.allowedHosts.some((entry) => {
    if (entry === bare) return true;
    if (!parsed) return false;
    try {
      if (entry.includes('/')) {
        const [range, bits] = ipaddr.parseCIDR(entry);
        return range.kind() === parsed.kind() && parsed.match([range, bits] as never);
      }
      return ipaddr.isValid(entry) && ipaddr.process(entry).toString() === parsed.toString();
    } catch {
      return false;
    }
  });
}

async function resolveHost(
  host: string,
  resolve: SendWebhookRequestOptions['resolve'],
  signal: AbortSignal,
): Promise<{ address: string; family: number }[] | string> {
  if (net.isIP(host)) return [{ address: host, family: net.isIP(host) }];
  const lookup = resolve ?? ((name: string) => dns.promises.lookup(name, { all: true, verbatim: true }));
  const addresses = await Promise.race([
    lookup(host).catch(() => []),
    new Promise<never[]>((resolveAbort) => signal.addEventListener('abort', () => resolveAbort([]), { once: true })),
  ]);
  return addresses.length > 0 ? addresses : `The host name ${host} does not resolve`;
}

/** An agent of one destination (protocol, checked addresses, port, server name) and its pinned lookup. */
const agents = new Map<string, http.Agent>();

/**
 * The keep-alive agent for requests to `url` going to exactly `addresses` (all checked): its
 * sockets connect only to those addresses (pinned lookup: all of them when Node tries several,
 * autoSelectFamily; else the first).
 */
function agentFor(url: URL, addresses: { address: string; family: number }[]): http.Agent {
  const https_ = url.protocol === 'https:';
  const port = url.port || (https_ ? '443' : '80');
  const servername = https_ ? url.hostname.replace(/^\[|\]$/g, '') : '';
  const key = `${url.protocol}|${addresses.map((a) => a.address).join(',')}|${port}|${servername}`;
  let agent = agents.get(key);
  if (agent) {
    // Most recently used last (Map order), for the eviction below.
    agents.delete(key);
    agents.set(key, agent);
    return agent;
  }
  const options = {
    keepAlive: true,
    maxSockets: AGENT_MAX_SOCKETS,
    maxFreeSockets: AGENT_MAX_FREE_SOCKETS,
    timeout: AGENT_IDLE_MS,
    lookup: pinnedLookup(addresses),
  };
  agent = https_ ? new https.Agent(options) : new http.Agent(options);
  if (agents.size >= MAX_AGENTS) evictAgents();
  agents.set(key, agent);
  return agent;
}

/** A lookup answering only `addresses`: all of them when Node tries several (autoSelectFamily), else the first. */
function pinnedLookup(addresses: { address: string; family: number }[]): net.LookupFunction {
  const pinned = addresses.map((a) => ({ address: a.address, family: a.family }));
  return ((_hostname: string, lookupOptions: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (lookupOptions?.all) callback(null, pinned);
    else callback(null, pinned[0]!.address, pinned[0]!.family);
  }) as unknown as net.LookupFunction;
}

/**
 * Drops agents with no socket and no waiting request, least recently used first; then the oldest
 * idle ones' sockets.
 */
function evictAgents(): void {
  const busy = (agent: http.Agent) => Object.keys(agent.sockets).length > 0 || Object.keys(agent.requests).length > 0;
  for (const [key, agent] of agents) {
    if (agents.size < MAX_AGENTS) return;
    if (busy(agent)) continue;
    agents.delete(key);
    agent.destroy();
  }
}

/** Closes every kept-alive webhook connection (the service's shutdown; tests). In-flight requests fail. */
export function closeWebhookConnections(): void {
  for (const agent of agents.values()) agent.destroy();
  agents.clear();
}

function post(
  url: URL,
  addresses: { address: string; family: number }[],
  options: SendWebhookRequestOptions,
  signal: AbortSignal,
  onConnect: () => void,
): Promise<{ message: http.IncomingMessage }> {
  const body = Buffer.from(options.body, 'utf8');
  return postOnce(url, agentFor(url, addresses), options, body, signal, onConnect).catch((error: unknown) => {
    // The receiver closed a kept-alive socket as it was reused, before any answer: once more on a new connection.
    if (!(error instanceof StaleSocketError) || signal.aborted)
      throw error instanceof StaleSocketError ? error.cause : error;
    // A one-request agent: a new connection to the same checked addresses, closed after the answer.
    const lookup = pinnedLookup(addresses);
    const fresh =
      url.protocol === 'https:'
        ? new https.Agent({ keepAlive: false, lookup })
        : new http.Agent({ keepAlive: false, lookup });
    return postOnce(url, fresh, options, body, signal, onConnect);
  });
}

/** A reused socket failed before the answer (reset, broken pipe or closed): the receiver had closed it. */
class StaleSocketError extends Error {
  constructor(readonly cause: unknown) {
    super('stale kept-alive socket');
  }
}

function postOnce(
  url: URL,
  agent: http.Agent,
  options: SendWebhookRequestOptions,
  body: Buffer,
  signal: AbortSignal,
  onConnect: () => void,
): Promise<{ message: http.IncomingMessage }> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request(
      {
        protocol: url.protocol,
        hostname: url.hostname.replace(/^\[|\]$/g, ''),
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        auth: url.username ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined,
        headers: { ...options.headers, 'content-length': String(body.length) },
        agent,
        signal,
      },
      (message) => resolve({ message }),
    );
    request.once('socket', (socket) => {
      // A reused socket is connected already: only a new one waits for (and is timed on) its connect.
      if (!socket.connecting) onConnect();
      else socket.once('connect', onConnect);
    });
    request.on('error', (error: NodeJS.ErrnoException) => {
      const stale =
        request.reusedSocket &&
        !signal.aborted &&
        (error.code === 'ECONNRESET' || error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED');
      reject(stale ? new StaleSocketError(error) : error);
    });
    request.end(body);
  });
}

async function readBody(message: http.IncomingMessage, signal: AbortSignal): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let received = 0;
  try {
    for await (const chunk of message) {
      chunks.push(chunk as Buffer);
      received += (chunk as Buffer).length;
      if (received >= RESPONSE_READ_LIMIT) break;
    }
  } finally {
    message.destroy();
  }
  if (signal.aborted) throw new Error('aborted');
  return Buffer.concat(chunks, received);
}

/** The kept part of a body as text (PostgreSQL text cannot hold NUL). */
function bodyText(body: Buffer): string | null {
  if (body.length === 0) return null;
  return body.subarray(0, RESPONSE_BODY_KEPT_BYTES).toString('utf8').replaceAll('\0', '');
}

function connectionFailure(error: unknown): string {
  const code = (error as NodeJS.ErrnoException)?.code;
  if (code === 'ECONNREFUSED') return 'Connection refused';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'Connection reset';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'Host unreachable';
  if (code && /^(CERT_|ERR_TLS_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED)/.test(code))
    return `TLS certificate not accepted (${code})`;
  const message = error instanceof Error ? error.message : String(error);
  return `Request failed${code ? ` (${code})` : ''}: ${message}`;
}

function connectTimeoutMessage(ms: number): string {
  return `Connect timeout: no connection within ${seconds(ms)}`;
}

function seconds(ms: number): string {
  const value = Number((ms / 1000).toFixed(ms < 1000 ? 2 : 1));
  return `${value} s`;
}
