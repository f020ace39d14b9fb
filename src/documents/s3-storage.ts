/**
 * FileStorage on S3-compatible object storage (AWS S3, MinIO, Cloudflare R2, Ceph RGW, …) with
 * `STORAGE_URL=s3://bucket/prefix`, through the AWS SDK's own client (`@aws-sdk/client-s3`, and
 * `@aws-sdk/s3-request-presigner` for presigned URLs): the reference implementation of the protocol
 * (SigV4 signing, retries, path-style and virtual-hosted addresses, the credential chain), which no
 * code of ours should redo. Objects are stored under `<prefix><key>` with the keys of the local
 * storage (storage.ts), so `signet storage migrate` copies files between the two unchanged.
 *
 * Failures (docs/deploy.md "Object storage"):
 * - an unknown key (404 NoSuchKey / NotFound) is MissingFileError, as on disk;
 * - anything else — the endpoint unreachable or timing out, 5xx, throttling, refused credentials —
 *   is AppError UNAVAILABLE with `details.retryAfterSeconds`, which every adapter answers with 503
 *   and `Retry-After` (as a database outage, src/db/unavailable.ts) and job handlers retry. Writes
 *   go to storage before the rows that point at them are written (store-file.ts), so a failed
 *   upload leaves no row.
 *
 * putNamed keeps "first write wins" with a conditional PUT (`If-None-Match: *`, RFC 9110 §13.1.2),
 * which AWS S3 (since August 2024), MinIO, Cloudflare R2 and Ceph RGW honour: a second writer gets
 * 412 and takes the file that is there. A server that ignores the header (s3rver, which the tests
 * run against, and older MinIO) lets a second *concurrent* writer replace the file; Signet never has
 * two at once for one name — the completion runs of a submission wait for each other on a
 * PostgreSQL advisory lock (src/db/queries/completion.ts) and the outputs made on request are
 * recorded under a per-submission lock — and a sequential second writer finds the first file before
 * it writes, on every server.
 *
 * The SDK's default CRC32 checksums on uploads (since 3.729) are turned off (WHEN_REQUIRED): many
 * S3-compatible servers refuse or mishandle them, and the SigV4 signature already covers each body's
 * SHA-256 (the key of a content-addressed file is that hash too).
 */
import { createHash } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ServiceException,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { S3StorageConfig } from '../config.ts';
import { AppError } from '../errors.ts';
import {
  type FileStorage,
  isStorageKey,
  isStorageName,
  MissingFileError,
  type PresignedUrlOptions,
  type PutResult,
  storageKeyFor,
} from './storage.ts';

/** Seconds a client is asked to wait (`Retry-After`) when the storage does not answer. */
export const STORAGE_RETRY_AFTER_SECONDS = 5;

/** SigV4's longest presigned URL lifetime: 7 days (AWS S3 "Sharing objects with presigned URLs"). */
export const MAX_PRESIGNED_SECONDS = 7 * 24 * 3600;

/** The storage did not answer or refused: AppError UNAVAILABLE (503 + Retry-After), the cause kept for the log. */
export function storageUnavailableError(operation: string, cause: unknown): AppError {
  return new AppError('UNAVAILABLE', 'Service unavailable, please try again later', {
    cause: new Error(`file storage: ${operation} failed: ${describeError(cause)}`, { cause }),
    details: { retryAfterSeconds: STORAGE_RETRY_AFTER_SECONDS },
  });
}

/** An S3 storage: FileStorage with presigned URLs, and its client closed by close(). */
export interface S3Storage extends FileStorage {
  presignedUrl(key: string, options: PresignedUrlOptions): Promise<string>;
  close(): void;
}

/**
 * Opens the storage after checking the bucket: a GET of a key that does not exist must answer
 * NoSuchKey (or AccessDenied, which S3 answers instead without the ListBucket permission).
 * @throws Error naming the bucket (and endpoint) when it does not exist, the credentials are
 *   refused, or the endpoint does not answer: the service refuses to start (main.ts)
 */
export async function openS3Storage(config: S3StorageConfig): Promise<S3Storage> {
  const storage = createS3Storage(config);
  const where = `S3 bucket "${config.bucket}" at ${config.endpoint ?? `AWS S3 (${config.region})`}`;
  try {
    await storage.client.send(
      new GetObjectCommand({ Bucket: config.bucket, Key: `${config.prefix}.signet-bucket-check` }),
    );
  } catch (error) {
    const name = errorName(error);
    if (name !== 'NoSuchKey' && name !== 'NotFound' && name !== 'AccessDenied') {
      storage.close();
      if (name === 'NoSuchBucket')
        throw new Error(`${where} does not exist (STORAGE_URL): create it, or correct the name`);
      throw new Error(`${where} cannot be used (STORAGE_URL, AWS_* variables): ${describeError(error)}`);
    }
  }
  return storage;
}

/**
 * The storage without the start-up check (openS3Storage checks the bucket first).
 * @returns the storage and its S3 client (for the check and for tests)
 */
export function createS3Storage(config: S3StorageConfig): S3Storage & { client: S3Client } {
  const clientOptions = (endpoint: string | undefined) =>
    new S3Client({
      region: config.region,
      ...(endpoint ? { endpoint } : {}),
      forcePathStyle: config.forcePathStyle,
      ...(config.credentials ? { credentials: config.credentials } : {}),
      maxAttempts: 3,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: { connectionTimeout: Math.min(config.timeout, 5000), requestTimeout: config.timeout },
    });
  const client = clientOptions(config.endpoint);
  // Presigned URLs carry the host clients reach (e.g. localhost:9000 where Signet reaches minio:9000).
  const presigner =
    config.publicEndpoint && config.publicEndpoint !== config.endpoint ? clientOptions(config.publicEndpoint) : client;
  const Bucket = config.bucket;

  /** The object key of a storage key; refuses keys this storage does not make. */
  const objectKey = (key: string): string => {
    if (!isStorageKey(key)) throw new MissingFileError(key);
    return `${config.prefix}${key}`;
  };

  /** MissingFileError for a 404, UNAVAILABLE for anything else. */
  const failure = (operation: string, key: string, error: unknown): Error => {
    if (error instanceof MissingFileError || error instanceof AppError) return error;
    if (isNotFound(error)) return new MissingFileError(key);
    return storageUnavailableError(`${operation} ${key}`, error);
  };

  const getBytes = async (key: string): Promise<Buffer | null> => {
    try {
      const object = await client.send(new GetObjectCommand({ Bucket, Key: objectKey(key) }));
      return Buffer.from(await object.Body!.transformToByteArray());
    } catch (error) {
      const failed = failure('read', key, error);
      if (failed instanceof MissingFileError) return null;
      throw failed;
    }
  };

  const head = async (key: string): Promise<number | null> => {
    try {
      const object = await client.send(new HeadObjectCommand({ Bucket, Key: objectKey(key) }));
      return object.ContentLength ?? 0;
    } catch (error) {
      const failed = failure('head', key, error);
      if (failed instanceof MissingFileError) return null;
      throw failed;
    }
  };

  const upload = async (key: string, bytes: Uint8Array, ifNoneMatch: boolean) => {
    try {
      await client.send(
        new PutObjectCommand({
          Bucket,
          Key: objectKey(key),
          Body: bytes,
          ContentLength: bytes.byteLength,
          ContentType: 'application/octet-stream',
          ...(ifNoneMatch ? { IfNoneMatch: '*' } : {}),
        }),
      );
      return true;
    } catch (error) {
      // 412: another writer's file is there; 409 ConditionalRequestConflict: it is being written.
      const status = (error as S3ServiceException).$metadata?.httpStatusCode;
      if (ifNoneMatch && (status === 412 || status === 409)) return false;
      throw failure('write', key, error);
    }
  };

  const describe = (key: string, bytes: Uint8Array): PutResult => ({
    key,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    byteSize: bytes.byteLength,
  });

  return {
    client,

    async put(bytes) {
      const result = describe(storageKeyFor(createHash('sha256').update(bytes).digest('hex')), bytes);
      // Same key means same bytes; another size can only be damage from outside, so rewrite.
      if ((await head(result.key)) === bytes.byteLength) return result;
      await upload(result.key, bytes, false);
      return result;
    },

    async putNamed(name, make) {
      const key = `named/${name}`;
      if (!isStorageName(name)) throw new Error(`Not a name putNamed takes: ${JSON.stringify(name)}`);
      const existing = await getBytes(key);
      if (existing) return describe(key, existing);
      const bytes = await make();
      if (await upload(key, bytes, true)) return describe(key, bytes);
      // Lost the race: describe the winner's file. A 409 means it is still being written: wait a little.
      for (let attempt = 0; attempt < 10; attempt += 1) {
        const winner = await getBytes(key);
        if (winner) return describe(key, winner);
        await new Promise((resolve) => setTimeout(resolve, 100 * (attempt + 1)));
      }
      throw storageUnavailableError(`write ${key}`, new Error('a concurrent conditional write did not complete'));
    },

    async read(key) {
      const bytes = await getBytes(key);
      if (!bytes) throw new MissingFileError(key);
      return bytes;
    },

    stream(key, range) {
      const out = new PassThrough();
      (async () => {
        const object = await client.send(
          new GetObjectCommand({
            Bucket,
            Key: objectKey(key),
            ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
          }),
        );
        const body = object.Body as Readable;
        body.once('error', (error) => out.destroy(failure('read', key, error)));
        // A client gone mid-download: stop reading from the storage too.
        out.once('close', () => body.destroy());
        body.pipe(out);
      })().catch((error) => out.destroy(failure('read', key, error)));
      return out;
    },

    async size(key) {
      const size = await head(key);
      if (size === null) throw new MissingFileError(key);
      return size;
    },

    async exists(key) {
      if (!isStorageKey(key)) return false;
      return (await head(key)) !== null;
    },

    async delete(key) {
      try {
        // S3 answers 204 for a key with no object too, so a repeated delete does nothing.
        await client.send(new DeleteObjectCommand({ Bucket, Key: objectKey(key) }));
      } catch (error) {
        throw failure('delete', key, error);
      }
    },

    async presignedUrl(key, options) {
      const expiresIn = Math.max(1, Math.min(MAX_PRESIGNED_SECONDS, Math.floor(options.expiresInSeconds)));
      return getSignedUrl(
        presigner,
        new GetObjectCommand({
          Bucket,
          Key: objectKey(key),
          ResponseContentType: options.contentType,
          ResponseContentDisposition: options.contentDisposition,
          ResponseCacheControl: options.cacheControl,
        }),
        { expiresIn },
      );
    },

    close() {
      client.destroy();
      if (presigner !== client) presigner.destroy();
    },
  };
}

function errorName(error: unknown): string | undefined {
  return error && typeof error === 'object' ? (error as { name?: string }).name : undefined;
}

function isNotFound(error: unknown): boolean {
  const name = errorName(error);
  if (name === 'NoSuchKey' || name === 'NotFound') return true;
  // HEAD answers carry no body, so no error code: only the status.
  return (error as S3ServiceException)?.$metadata?.httpStatusCode === 404 && name !== 'NoSuchBucket';
}

/** For logs and start-up errors: the S3 error code and status, or the network error's code and message. */
function describeError(error: unknown): string {
  if (!error || typeof error !== 'object') return String(error);
  const { name, message, code, $metadata } = error as {
    name?: string;
    message?: string;
    code?: string;
    $metadata?: { httpStatusCode?: number };
  };
  const status = $metadata?.httpStatusCode ? ` (HTTP ${$metadata.httpStatusCode})` : '';
  return `${code ?? name ?? 'Error'}${status}: ${message ?? ''}`.trim();
}
