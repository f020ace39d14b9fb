/**
 * The health check's statement (src/http/health.ts).
 */
import type { Db } from '../client.ts';

/** `SELECT 1` through the Prisma client: resolves when the database answers, rejects otherwise. */
export async function pingDatabase(db: Db): Promise<void> {
  await db.$queryRaw`SELECT 1`;
}
