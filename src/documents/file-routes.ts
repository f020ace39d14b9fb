/**
 * `GET`/`HEAD /file/<signed token>/<filename>`: serves stored files behind signed, expiring URLs
 * (reference/docuseal-behaviour.md §10.7; tokens from file-urls.ts).
 *
 * - valid token → the bytes; `?disposition=attachment` asks for a download; single byte ranges
 *   (RFC 9110 §14) give 206, unsatisfiable ones 416;
 * - expired token → 403 `{"error":"Not authorized"}`;
 * - garbled or forged token, or no such file → 404 with an empty body;
 * - a stored filename with a dangerous extension → 422 with an empty body.
 * Successful responses carry `X-Robots-Tag: noindex`, as DocuSeal's, and `Cache-Control: private,
 * max-age=<the URL's remaining lifetime in seconds>, immutable` where DocuSeal sends `public` for a
 * year: every stored file is an account's document (template documents and their previews,
 * signed documents, audit logs, signers' attachments), none is public, so no shared cache may
 * keep one, and no cache may serve it after its URL has expired (issue 12 §4). Cross-origin
 * access (DocuSeal: `Access-Control-Allow-Origin: *`) follows CORS_ORIGINS like the rest of the
 * API (src/http/cors.ts).
 *
 * Beyond DocuSeal's headers, for safety on our own origin: only PDFs and common raster images are
 * served inline (others as attachments), types a browser would run (HTML, SVG, XML, JavaScript)
 * go out as application/octet-stream, and every response has `X-Content-Type-Options: nosniff`
 * (the same lists Rails' ActiveStorage applies to the proxy DocuSeal uses).
 *
 * With S3 storage and FILE_URLS_PRESIGNED, a valid `GET` is answered `307` with `Location:` a
 * presigned URL of the object, valid for what is left of the token's lifetime (at most 7 days,
 * SigV4's limit), carrying the same Content-Type, Content-Disposition and Cache-Control through S3's
 * response overrides; S3 then serves the bytes and the ranges. The checks above (token, expiry, row,
 * extension) stay Signet's; `HEAD` is answered here as before (a presigned GET URL is not valid for
 * HEAD). Proxied (the default) streams the bytes through Signet, ranges included (docs/deploy.md).
 */
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/client.ts';
import { dangerousExtensionOf } from './file-names.ts';
import type { FileUrlSigner } from './file-urls.ts';
import { MissingFileError, type FileStorage } from './storage.ts';

/** Served inline; anything else is an attachment whatever `?disposition` says. */
const INLINE_TYPES = new Set([
  'application/pdf',
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/bmp',
  'image/tiff',
  'image/vnd.microsoft.icon',
  'image/x-icon',
  'image/vnd.adobe.photoshop',
]);

/** Served as application/octet-stream: a browser would interpret them as active content. */
const BINARY_TYPES = new Set([
  'text/html',
  'text/javascript',
  'application/javascript',
  'application/x-javascript',
  'image/svg+xml',
  'application/postscript',
  'application/x-shockwave-flash',
  'text/xml',
  'application/xml',
  'application/xhtml+xml',
  'application/mathml+xml',
  'text/cache-manifest',
]);

/**
 * `Cache-Control` of a served file: private (an account's document), and fresh no longer than
 * its URL is valid (whole seconds left, rounded down).
 * @param expiresAt the URL's expiry, ms since the epoch; now the same unit
 */
export function fileCacheControl(expiresAt: number, now = Date.now()): string {
  return `private, max-age=${Math.max(0, Math.floor((expiresAt - now) / 1000))}, immutable`;
}

/**
 * `Content-Disposition` value per RFC 6266: an ASCII `filename` fallback and the exact name as
 * RFC 8187 `filename*=UTF-8''…`.
 */
export function contentDisposition(type: 'inline' | 'attachment', filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `${type}; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/**
 * Parses a Range header against a representation of `size` bytes (RFC 9110 §14.1.2).
 * @returns `undefined` when the header is absent, malformed or asks for several ranges (the whole
 *   file is then sent, as the RFC allows); `'unsatisfiable'` when no byte of the range exists;
 *   otherwise the inclusive byte positions.
 */
export function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (header === undefined) return undefined;
  const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  if (match[1] === '') {
    // Suffix range: the last N bytes.
    const length = Number(match[2]);
    if (length === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(match[1]);
  const last = match[2] === '' ? Number.MAX_SAFE_INTEGER : Number(match[2]);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(last) || last < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return { start, end: Math.min(last, size - 1) };
}

/**
 * Registers `GET` and `HEAD /file/<token>/<filename>`.
 * @param deps.signer verifies tokens (createFileUrlSigner)
 * @param deps.presigned GET redirects to a presigned URL of the storage (config.fileUrlsPresigned;
 *   the storage must have presignedUrl)
 */
export function registerFileRoutes(
  app: FastifyInstance,
  deps: { db: Db; storage: FileStorage; signer: FileUrlSigner; presigned?: boolean },
): void {
  const presign = deps.presigned ? deps.storage.presignedUrl?.bind(deps.storage) : undefined;
  if (deps.presigned && !presign) throw new Error('FILE_URLS_PRESIGNED needs a storage with presigned URLs (S3)');
  app.route<{ Params: { '*': string }; Querystring: { disposition?: unknown } }>({
    method: ['GET', 'HEAD'],
    // A wildcard, not `:token`: tokens are longer than Fastify's parameter limit (100 characters).
    url: '/file/*',
    exposeHeadRoute: false,
    handler: async (request, reply) => {
      reply.header('x-content-type-options', 'nosniff');
      reply.header('cache-control', 'no-store');
      const rest = request.params['*'];
      const slash = rest.indexOf('/');
      // The filename segment is cosmetic but required, as in DocuSeal's route.
      if (slash <= 0) return reply.code(404).send();
      const verified = deps.signer.verify(rest.slice(0, slash));
      if (!verified.ok) {
        if (verified.reason === 'expired') return reply.code(403).send({ error: 'Not authorized' });
        return reply.code(404).send();
      }
      const file = await deps.db.storedFile.findUnique({
        where: { uuid: verified.uuid },
        select: { filename: true, contentType: true, storageKey: true, sha256: true },
      });
      if (!file) return reply.code(404).send();
      if (dangerousExtensionOf(file.filename)) return reply.code(422).send();

      const mediaType = file.contentType.split(';')[0].trim().toLowerCase();
      const inline = request.query.disposition !== 'attachment' && INLINE_TYPES.has(mediaType);
      const contentType = BINARY_TYPES.has(mediaType) ? 'application/octet-stream' : file.contentType;
      const disposition = contentDisposition(inline ? 'inline' : 'attachment', file.filename);
      if (presign && request.method === 'GET') {
        const location = await presign(file.storageKey, {
          expiresInSeconds: (verified.expiresAt - Date.now()) / 1000,
          contentType,
          contentDisposition: disposition,
          cacheControl: fileCacheControl(verified.expiresAt),
        });
        return reply.code(307).header('location', location).send();
      }

      let size: number;
      try {
        size = await deps.storage.size(file.storageKey);
      } catch (error) {
        if (!(error instanceof MissingFileError)) throw error;
        request.log.error({ uuid: verified.uuid, key: file.storageKey }, 'file row without stored bytes');
        return reply.code(404).send();
      }

      const etag = `"${file.sha256}"`;
      reply.headers({
        'content-type': contentType,
        'content-disposition': disposition,
        'cache-control': fileCacheControl(verified.expiresAt),
        'x-robots-tag': 'noindex',
        'accept-ranges': 'bytes',
        etag,
      });

      // Range applies to GET only (RFC 9110 §14.2), and If-Range lets a client with another
      // version ask for the whole file instead (§13.1.5).
      const ifRange = request.headers['if-range'];
      const rangeHeader =
        request.method === 'GET' && (ifRange === undefined || ifRange === etag) ? request.headers.range : undefined;
      const range = parseRange(rangeHeader, size);
      if (range === 'unsatisfiable') {
        reply.removeHeader('content-disposition');
        return reply.code(416).header('content-range', `bytes */${size}`).header('content-length', '0').send();
      }
      if (range) {
        reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${size}`);
      }
      reply.header('content-length', String(range ? range.end - range.start + 1 : size));
      if (request.method === 'HEAD') return reply.send();
      if (size === 0) return reply.send(Buffer.alloc(0));
      return reply.send(deps.storage.stream(file.storageKey, range));
    },
  });
}
