/**
 * Per-request DataLoaders: values several parents need, fetched in one query per batch.
 */
import DataLoader from 'dataloader';
import type { Db } from '../db/client.ts';
import { VALUE_FILE_SELECT } from '../submissions/status.ts';
import { folderFullNames } from '../templates/folders.ts';

export interface Loaders {
  /** Folder id → full name ("Parent / Child"). */
  folderName: DataLoader<number, string>;
  /** Stored file uuid → signed-URL material (uuid, filename) and metadata (a typed signature's text), or null. */
  storedFileByUuid: DataLoader<string, { uuid: string; filename: string; metadata: unknown } | null>;
  /** Stored file id → signed-URL material of its page-0 preview image, or null. */
  previewImage: DataLoader<number, { uuid: string; filename: string } | null>;
}

export function createLoaders(db: Db): Loaders {
  return {
    folderName: new DataLoader(async (ids) => {
      const names = await folderFullNames(db, [...ids]);
      return ids.map((id) => names.get(id) ?? '');
    }),
    storedFileByUuid: new DataLoader(async (uuids) => {
      const valid = uuids.filter((u) => /^[0-9a-f-]{36}$/i.test(u));
      const rows = valid.length
        ? await db.storedFile.findMany({ where: { uuid: { in: [...valid] } }, select: VALUE_FILE_SELECT })
        : [];
      const byUuid = new Map(rows.map((r) => [r.uuid, r]));
      return uuids.map((u) => byUuid.get(u) ?? null);
    }),
    previewImage: new DataLoader(async (fileIds) => {
      const previews = await db.documentPreview.findMany({
        where: { fileId: { in: [...fileIds] }, page: 0 },
        select: { fileId: true, imageFile: { select: { uuid: true, filename: true } } },
      });
      const byFile = new Map(previews.map((p) => [p.fileId, p.imageFile]));
      return fileIds.map((id) => byFile.get(id) ?? null);
    }),
  };
}
