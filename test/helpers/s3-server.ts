/**
 * A real S3 protocol server on loopback for the object-storage tests: `@20minutes/s3rver` (the
 * maintained fork of s3rver: pure JavaScript, no binary, no install script), keeping objects in a
 * temporary directory. It checks SigV4 signatures (headers and presigned query strings, expiry
 * included), serves ranges and S3's response-header overrides, and answers NoSuchBucket / NoSuchKey
 * as S3 does. It does not honour conditional writes (`If-None-Match: *` on PUT): see
 * src/documents/s3-storage.ts. Its one known protocol bug: it builds SigV4's canonical query with
 * encodeURIComponent, which leaves `!'()*` as they are where SigV4 (and so the AWS SDK, AWS S3 and
 * MinIO) percent-encodes them, so it refuses a presigned URL whose parameters hold one — as every
 * `response-content-disposition` with an RFC 8187 `filename*=UTF-8''…` does. `acceptAnySignature`
 * lets such URLs through (expiry is still checked) for the tests of the service's presigned mode.
 *
 * stop() takes it down (connections dropped: requests then fail as against a storage that is down)
 * and start() brings it back on the same port with the same objects.
 */
import fs from 'node:fs/promises';
import type { Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
// @ts-expect-error the package ships no type declarations
import S3rver from '@20minutes/s3rver';
import { findFreePort } from '../../src/util/free-port.ts';

/** s3rver's fixed credentials. */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface TestS3Server {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  /** Where the objects are kept: `<directory>/<bucket>/<key>._S3rver_object`. */
  directory: string;
  /** The variables that point Signet at `s3://<bucket>/<prefix>` on this server. */
  env(options?: { bucket?: string; prefix?: string }): Record<string, string>;
  /** The keys of the objects in `bucket`, sorted. */
  objectKeys(bucket?: string): Promise<string[]>;
  /** Takes the server down: open connections are cut, new ones refused. */
  stop(): Promise<void>;
  /** Brings it back on the same port with the same objects. */
  start(): Promise<void>;
  /** stop() and remove the objects. */
  close(): Promise<void>;
}

/** The bucket the server is started with. */
export const TEST_BUCKET = 'signet-test';

/**
 * Starts s3rver on 127.0.0.1 on a free port with the buckets given (default: TEST_BUCKET).
 */
export async function startS3Server(
  options: { buckets?: string[]; acceptAnySignature?: boolean } = {},
): Promise<TestS3Server> {
  const directory = await fs.mkdtemp(path.join(os.tmpdir(), 'signet-s3-'));
  const port = await findFreePort();
  const buckets = options.buckets ?? [TEST_BUCKET];
  let server: { run(): Promise<unknown>; close(): Promise<void>; httpServer: Server } | undefined;

  const start = async () => {
    server = new S3rver({
      address: '127.0.0.1',
      port,
      silent: true,
      directory,
      // Path-style only: bucket names as sub-domains of 127.0.0.1 mean nothing.
      vhostBuckets: false,
      allowMismatchedSignatures: options.acceptAnySignature ?? false,
      configureBuckets: buckets.map((name) => ({ name })),
    });
    await server!.run();
  };
  const stop = async () => {
    if (!server) return;
    const running = server;
    server = undefined;
    const closed = running.close();
    running.httpServer.closeAllConnections();
    await closed;
  };
  await start();

  return {
    endpoint: `http://127.0.0.1:${port}`,
    directory,
    env({ bucket = TEST_BUCKET, prefix = 'files' } = {}) {
      return {
        STORAGE_URL: `s3://${bucket}/${prefix}`,
        AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
        // Short, so that a storage that is down fails a request in seconds, not half a minute.
        STORAGE_TIMEOUT_SECONDS: '5',
      };
    },
    async objectKeys(bucket = TEST_BUCKET) {
      const root = path.join(directory, bucket);
      const entries = await fs.readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
      return entries
        .filter((e) => e.isFile() && e.name.endsWith('._S3rver_object'))
        .map((e) => path.relative(root, path.join(e.parentPath, e.name)).replace(/\._S3rver_object$/, ''))
        .sort();
    },
    stop,
    start,
    async close() {
      await stop();
      await fs.rm(directory, { recursive: true, force: true });
    },
  };
}
