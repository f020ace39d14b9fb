/**
 * Files of the completion steps, shared by the completion (complete-submission.ts) and the
 * documents as filled so far (submission-outputs.ts): the storage name of a step's output, and the
 * image files a party's values name.
 */
import type { Db } from '../db/client.ts';
import type { FileStorage } from '../documents/storage.ts';
import type { ImageFile } from './draw-values.ts';

/**
 * The storage name of one output file of a step (FileStorage.putNamed): under the submission's
 * slug, random and unique, so that neither another submission nor a submission of another database
 * on the same DATA_DIR can have it. `file`: `documents-<submitterId>-<position>` or `audit-log`.
 */
export function stepFileName(submissionSlug: string, file: string): string {
  return `completions/${submissionSlug}/${file}.pdf`;
}

/**
 * The image files of a party's attachment values (uuids of stored files), by uuid (also read for the
 * documents as filled so far, src/signing/submission-outputs.ts).
 */
export async function loadImages(
  db: Db,
  storage: FileStorage,
  values: Record<string, unknown>,
): Promise<Map<string, ImageFile>> {
  const uuids = Object.values(values)
    .flatMap((v) => (Array.isArray(v) ? v : [v]))
    .filter((v): v is string => typeof v === 'string' && /^[0-9a-f-]{36}$/i.test(v));
  const images = new Map<string, ImageFile>();
  if (uuids.length === 0) return images;
  const files = await db.storedFile.findMany({ where: { uuid: { in: uuids } } });
  for (const file of files)
    images.set(file.uuid, { bytes: await storage.read(file.storageKey), contentType: file.contentType });
  return images;
}
