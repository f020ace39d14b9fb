/**
 * Reads a DocuSeal `file` / `default_value` value into bytes. Such a value is either base64
 * (optionally as a `data:<type>;base64,` URL) or an http(s) URL to download
 * (reference/docuseal-behaviour.md §3, "prefill URL download failure"; DESIGN.md, "Security model").
 *
 * Downloads refuse private, loopback and other non-public addresses unless allowed (tests), and
 * connect to exactly the address that was checked: the host is resolved once, every address it
 * has is checked, and the socket is opened to the checked one through a pinned `lookup` (TLS
 * still verifies the certificate against the host name). So a name that answers a public address
 * to the check and a private one to the connection (DNS rebinding) gets nowhere. Each redirect
 * target goes through the same check.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import ipaddr from 'ipaddr.js';
import { AppError } from '../errors.ts';
import { baseFilename } from './file-names.ts';

/** Redirects followed per download (DocuSeal/Faraday's default is also small). */
export const MAX_REDIRECTS = 3;

export interface ResolvedAddress {
  address: string;
  /** 4 or 6. */
  family: number;
}

export interface LoadFileInputOptions {
  /**
   * Names the value in messages. "file in `documents[0]`" gives DocuSeal-style messages such as
   * "file is required in `documents[0]`."; a plain name ("file") gives "file is required.".
   */
  field: string;
  /** Allow URLs whose host resolves to private, loopback or other non-public addresses (tests only). */
  allowPrivate: boolean;
  /** Largest accepted file, in bytes (decoded size for base64). */
  maxBytes: number;
  /** Time allowed for the whole download (resolution, redirects, body), in ms. */
  timeoutMs: number;
  /** Resolves a host name to its addresses; default `dns.lookup(host, { all: true })`. Tests inject fakes. */
  resolve?: (hostname: string) => Promise<ResolvedAddress[]>;
  /**
   * Which resolved addresses may be connected to; default `allowPrivate || isPublicAddress(address)`.
   * Tests use it to treat one loopback server as "public" and check what happens after it.
   */
  isAllowedAddress?: (address: string) => boolean;
}

export interface LoadedFile {
  bytes: Buffer;
  /** From Content-Disposition or the last segment of the (final) URL's path; undefined for base64. */
  filename: string | undefined;
  /** MIME type without parameters, lower case: the data URL's or the response's Content-Type. */
  contentType: string | undefined;
}

/**
 * Turns a `file`/`default_value` value into bytes.
 * - base64: whitespace is ignored; anything but the base64 (or base64url) alphabet and final
 *   padding, an impossible length, or bits the encoding cannot have makes it invalid;
 * - `data:<type>[;params];base64,<data>`: the same, with the type returned;
 * - `http://` / `https://`: downloaded under the rules in the module comment, at most
 *   MAX_REDIRECTS redirects, `timeoutMs` for everything and `maxBytes` enforced while streaming.
 * @throws AppError VALIDATION (422) for every bad value, with a message naming `options.field`:
 *   missing or empty; not base64 / not a supported URL; larger than maxBytes; and for URLs
 *   ``Error loading: <url> (<field>). <reason>.`` where reason is a refused address, a non-2xx
 *   status, a timeout, too many redirects, too large, or a connection failure.
 */
export async function loadFileInput(input: unknown, options: LoadFileInputOptions): Promise<LoadedFile> {
  if (typeof input !== 'string' || input.trim() === '') throw invalid(options.field, 'is required');
  const value = input.trim();

  const dataUrl = /^data:([^,]*),/i.exec(value);
  if (dataUrl) {
    const [mediaType, ...parameters] = dataUrl[1].split(';').map((part) => part.trim());
    if (!parameters.some((parameter) => parameter.toLowerCase() === 'base64')) {
      throw invalid(options.field, 'is a data URL without ";base64"; send base64 data');
    }
    return {
      bytes: decodeBase64(value.slice(dataUrl[0].length), options),
      filename: undefined,
      contentType: mediaType ? mediaType.toLowerCase() : undefined,
    };
  }
  // ':' never occurs in base64, so anything with a scheme is meant as a URL.
  if (/^[a-z][a-z0-9+.-]*:/i.test(value)) return download(value, options);
  return { bytes: decodeBase64(value, options), filename: undefined, contentType: undefined };
}

/**
 * Whether an IP address is public unicast: false for private (RFC 1918), loopback, link-local,
 * unique-local, multicast, broadcast, unspecified, carrier-grade NAT (RFC 6598), documentation and
 * other reserved ranges, NAT64/6to4/Teredo forms that embed an IPv4 address, IPv4-compatible IPv6,
 * and anything that is not an IP address. IPv4-mapped IPv6 (::ffff:a.b.c.d) is judged as IPv4.
 * Ranges as classified by ipaddr.js (IANA special-purpose registries).
 */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  if (!net.isIP(bare.split('%')[0])) return false;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(bare);
  } catch {
    return false;
  }
  // ::a.b.c.d (deprecated IPv4-compatible) has no range of its own in ipaddr.js.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).parts.slice(0, 6).every((part) => part === 0)) return false;
  return parsed.range() === 'unicast';
}

const BASE64_TEXT = /^[A-Za-z0-9+/_-]*={0,2}$/;
const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/**
 * Strict base64 (RFC 4648 section 4, or the URL-safe alphabet of section 5; padding optional,
 * whitespace ignored): one regular-expression scan and one decode, no copy of the text unless it
 * holds whitespace (an upload is megabytes; bench/abuse.ts measures this under load).
 * @throws AppError VALIDATION naming `options.field`: empty, not base64, or over `maxBytes`
 */
function decodeBase64(text: string, options: LoadFileInputOptions): Buffer {
  const plain = BASE64_TEXT.test(text);
  const compact = plain ? text : text.replace(/\s+/g, '');
  if (compact === '') throw invalid(options.field, 'is required');
  const notBase64 = () => invalid(options.field, 'is not valid base64 or an http(s) URL');
  if (!plain && !BASE64_TEXT.test(compact)) throw notBase64();
  const padding = compact.endsWith('==') ? 2 : compact.endsWith('=') ? 1 : 0;
  const length = compact.length - padding;
  if (length === 0 || length % 4 === 1 || (padding > 0 && compact.length % 4 !== 0)) throw notBase64();
  // The last character's spare bits must be zero (RFC 4648 section 3.5): 4 of them after 2
  // characters of a group, 2 after 3. Node would silently drop them.
  const last = BASE64_ALPHABET.indexOf(compact[length - 1].replace('-', '+').replace('_', '/'));
  if ((length % 4 === 2 && (last & 0xf) !== 0) || (length % 4 === 3 && (last & 0x3) !== 0)) throw notBase64();
  if (Math.floor((length * 3) / 4) > options.maxBytes)
    throw invalid(options.field, `is larger than ${formatBytes(options.maxBytes)}`);
  return Buffer.from(compact, 'base64');
}

async function download(value: string, options: LoadFileInputOptions): Promise<LoadedFile> {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid(options.field, 'is not valid base64 or an http(s) URL');
  }
  const shown = displayUrl(value, url);
  const fail = (reason: string, details: Record<string, unknown> = {}) =>
    new AppError('VALIDATION', `Error loading: ${shown} (${options.field}). ${reason}`, {
      details: { field: options.field, url: shown, ...details },
    });

  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs);
  const timedOut = () => fail(`No complete answer within ${formatSeconds(options.timeoutMs)}.`);
  try {
    for (let redirects = 0; ; redirects += 1) {
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw fail('Only http and https URLs are allowed.');
      const address = await abortable(resolveAllowed(url, options, fail), controller.signal, timedOut);
      const response = await request(url, address, controller.signal).catch((error: unknown) => {
        if (controller.signal.aborted) throw timedOut();
        throw fail(connectionFailure(error));
      });
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      if ([301, 302, 303, 307, 308].includes(status) && location) {
        response.destroy();
        if (redirects >= MAX_REDIRECTS) throw fail(`More than ${MAX_REDIRECTS} redirects.`);
        try {
          url = new URL(location, url);
        } catch {
          throw fail('The server redirected to an invalid URL.');
        }
        continue;
      }
      if (status < 200 || status >= 300) {
        response.destroy();
        throw fail(`The server answered HTTP ${status}${response.statusMessage ? ` ${response.statusMessage}` : ''}.`, {
          status,
        });
      }
      const bytes = await readBody(response, options, fail).catch((error: unknown) => {
        if (error instanceof AppError) throw error;
        if (controller.signal.aborted) throw timedOut();
        throw fail(connectionFailure(error));
      });
      return {
        bytes,
        filename: filenameFromDisposition(response.headers['content-disposition']) ?? filenameFromPath(url.pathname),
        contentType: response.headers['content-type']?.split(';')[0].trim().toLowerCase() || undefined,
      };
    }
  } finally {
    clearTimeout(timer);
  }
}

/**
 * One answer for a name that does not resolve and for one that resolves to a private address, so
 * that a caller cannot use document downloads to learn which internal names exist (issue 12 §4,
 * like the webhook refusal in src/webhooks/send-request.ts).
 */
const NOT_PUBLIC = "Can't download from this host: it is not a public address, or its name does not resolve.";

async function resolveAllowed(
  url: URL,
  options: LoadFileInputOptions,
  fail: (reason: string) => AppError,
): Promise<ResolvedAddress> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: ResolvedAddress[];
  if (net.isIP(host)) {
    addresses = [{ address: host, family: net.isIP(host) }];
  } else {
    try {
      addresses = await (options.resolve ?? defaultResolve)(host);
    } catch {
      addresses = [];
    }
    if (addresses.length === 0) throw fail(NOT_PUBLIC);
  }
  const allowed = options.isAllowedAddress ?? ((address: string) => options.allowPrivate || isPublicAddress(address));
  // Every address must pass: which one a client would pick is not ours to guess.
  if (!addresses.every((entry) => allowed(entry.address))) {
    throw fail(NOT_PUBLIC);
  }
  return addresses[0];
}

function defaultResolve(hostname: string): Promise<ResolvedAddress[]> {
  return dns.promises.lookup(hostname, { all: true, verbatim: true });
}

/** One GET to `url`, connecting to `address` whatever the host name resolves to now. */
function request(url: URL, address: ResolvedAddress, signal: AbortSignal): Promise<http.IncomingMessage> {
  const pinnedLookup = ((
    _hostname: string,
    lookupOptions: { all?: boolean },
    callback: (...args: unknown[]) => void,
  ) => {
    if (lookupOptions?.all) callback(null, [{ address: address.address, family: address.family }]);
    else callback(null, address.address, address.family);
  }) as unknown as net.LookupFunction;
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      {
        protocol: url.protocol,
        hostname: url.hostname.replace(/^\[|\]$/g, ''),
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        auth: url.username ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined,
        headers: { 'user-agent': 'Signet', accept: '*/*', 'accept-encoding': 'identity' },
        agent: false,
        lookup: pinnedLookup,
        signal,
      },
      resolve,
    );
    req.on('error', reject);
    req.end();
  });
}

async function readBody(
  response: http.IncomingMessage,
  options: LoadFileInputOptions,
  fail: (reason: string) => AppError,
): Promise<Buffer> {
  const tooLarge = () => fail(`The file is larger than ${formatBytes(options.maxBytes)}.`);
  const encoding = (response.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  const declared = Number(response.headers['content-length']);
  if (encoding === 'identity' && Number.isFinite(declared) && declared > options.maxBytes) {
    response.destroy();
    throw tooLarge();
  }
  // We ask for identity; a server that compresses anyway is decoded, and the limit applies to the result.
  let body: Readable = response;
  if (encoding === 'gzip' || encoding === 'x-gzip') body = response.pipe(zlib.createGunzip());
  else if (encoding === 'deflate') body = response.pipe(zlib.createInflate());
  else if (encoding === 'br') body = response.pipe(zlib.createBrotliDecompress());
  else if (encoding !== 'identity') {
    response.destroy();
    throw fail(`The server sent an unsupported Content-Encoding (${encoding}).`);
  }
  if (body !== response) response.on('error', (error) => body.destroy(error));

  const chunks: Buffer[] = [];
  let received = 0;
  try {
    for await (const chunk of body) {
      received += (chunk as Buffer).length;
      if (received > options.maxBytes) throw tooLarge();
      chunks.push(chunk as Buffer);
    }
  } finally {
    response.destroy();
    if (body !== response) body.destroy();
  }
  if (!response.complete) throw new Error('the connection closed before the whole body arrived');
  return Buffer.concat(chunks, received);
}

/** The name from `filename*` (RFC 8187, preferred) or `filename` of a Content-Disposition header. */
function filenameFromDisposition(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const extended = /filename\*\s*=\s*([\w!#$%&+^\x60{}~-]*)'[^']*'([^;\s]+)/i.exec(header);
  if (extended) {
    const bytes = percentDecode(extended[2]);
    const name = sanitizeFilename(bytes.toString(extended[1].toLowerCase() === 'iso-8859-1' ? 'latin1' : 'utf8'));
    if (name) return name;
  }
  const quoted = /filename\s*=\s*"((?:[^"\\]|\\.)*)"/i.exec(header);
  if (quoted) return sanitizeFilename(quoted[1].replace(/\\(.)/g, '$1'));
  const token = /filename\s*=\s*([^;\s"]+)/i.exec(header);
  return token ? sanitizeFilename(token[1]) : undefined;
}

function filenameFromPath(pathname: string): string | undefined {
  const segment = pathname.split('/').filter(Boolean).at(-1);
  return segment ? sanitizeFilename(percentDecode(segment).toString('utf8')) : undefined;
}

/** Drops directories and control characters; undefined when nothing is left. */
function sanitizeFilename(name: string): string | undefined {
  const base = baseFilename(name);
  return base === '' || base === '.' || base === '..' ? undefined : base;
}

function percentDecode(text: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i += 1) {
    if (text[i] === '%' && /^[0-9a-f]{2}$/i.test(text.slice(i + 1, i + 3))) {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(text[i], 'utf8'));
    }
  }
  return Buffer.from(bytes);
}

function connectionFailure(error: unknown): string {
  const code = (error as NodeJS.ErrnoException)?.code;
  if (code === 'ECONNREFUSED') return 'The connection was refused.';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'The connection was reset.';
  if (code && /^(CERT_|ERR_TLS_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED)/.test(code))
    return `The TLS certificate was not accepted (${code}).`;
  return `The download failed${code ? ` (${code})` : ''}.`;
}

/** `field` + predicate, DocuSeal-style: "file in `documents[0]`" → "file <predicate> in `documents[0]`.". */
function invalid(field: string, predicate: string): AppError {
  const located = /^(\S+) (in `.*`)$/.exec(field);
  const message = located ? `${located[1]} ${predicate} ${located[2]}.` : `${field} ${predicate}.`;
  return new AppError('VALIDATION', message, { details: { field } });
}

/** The URL as the caller sent it, minus any credentials. */
function displayUrl(value: string, url: URL): string {
  if (!url.username && !url.password) return value;
  const copy = new URL(url.href);
  copy.username = '';
  copy.password = '';
  return copy.href;
}

function formatBytes(bytes: number): string {
  const mb = bytes / (1024 * 1024);
  if (mb >= 1) return `${Number(mb.toFixed(1))} MB`;
  if (bytes >= 1024) return `${Number((bytes / 1024).toFixed(1))} KB`;
  return `${bytes} bytes`;
}

function formatSeconds(ms: number): string {
  const seconds = Number((ms / 1000).toFixed(ms < 1000 ? 2 : 1));
  return `${seconds} second${seconds === 1 ? '' : 's'}`;
}

/** Settles with `promise`, or rejects with `onAbort()` as soon as `signal` aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal, onAbort: () => Error): Promise<T> {
  if (signal.aborted) return Promise.reject(onAbort());
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(onAbort());
    signal.addEventListener('abort', abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}
