/**
 * Opening the file storage the configuration names (DESIGN.md "Components": local disk by default,
 * S3-compatible storage at scale). Its own module so that the local storage (./storage.ts) and the
 * S3 one (./s3-storage.ts, which builds on the former's key rules) import each other in one
 * direction only, and the AWS SDK is loaded only when STORAGE_URL asks for it.
 */
import path from 'node:path';
import type { Config } from '../config.ts';
import { createLocalStorage, type FileStorage } from './storage.ts';

/**
 * The file storage the configuration names: S3-compatible storage with STORAGE_URL (its bucket
 * checked first: openS3Storage throws an Error naming the bucket when it is missing or refuses
 * the credentials, so the service does not start), else local disk under `<DATA_DIR>/files`. The
 * S3 client is loaded only then, so a service on local disk never loads the AWS SDK.
 */
export async function openFileStorage(config: Pick<Config, 'dataDir' | 'storage'>): Promise<FileStorage> {
  if (!config.storage) return createLocalStorage(path.join(config.dataDir, 'files'));
  const { openS3Storage } = await import('./s3-storage.ts');
  return openS3Storage(config.storage);
}
