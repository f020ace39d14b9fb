/**
 * Which PostgreSQL the service and the CLI use: DATABASE_URL when set, otherwise the embedded
 * one under DATA_DIR (DESIGN.md "Components").
 */
import type { Config } from '../config.ts';
import { startEmbeddedPostgres } from './embedded-postgres.ts';

export interface DatabaseHandle {
  url: string;
  /** True when the embedded PostgreSQL is in use. */
  embedded: boolean;
  /** Stops the embedded server if this process started it; no-op otherwise. */
  close(): Promise<void>;
}

/**
 * Opens the configured database.
 * @param log receives embedded PostgreSQL's log lines
 */
export async function openDatabase(config: Config, log: (line: string) => void = () => {}): Promise<DatabaseHandle> {
  if (config.databaseUrl) {
    return { url: config.databaseUrl, embedded: false, close: async () => {} };
  }
  const embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPostgresPort, log });
  return { url: embedded.connectionString, embedded: true, close: () => embedded.stop() };
}
