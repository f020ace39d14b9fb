/**
 * What every signature of the service is made with beyond its key (issue 17; docs/signatures.md):
 * - TSA_URL set: its authority timestamps each signature (B-T) and adds a document timestamp after
 *   the DSS (B-LTA);
 * - TSA_URL unset: Signet's own timestamp authority timestamps each signature (B-T), no document
 *   timestamp (the rule: B-LTA needs an authority other than the service);
 * - either way a DSS with the chains and CRLs (B-LT; revocation.ts).
 * One set per database client and TSA_URL, so the downloaded CRLs and the loaded TSA key are shared
 * by every completion of the process.
 */
import type { Db } from '../db/client.ts';
import { PKI_LIMITS } from '../limits.ts';
import { ownTimestampAuthority } from './certificate-authority.ts';
import type { SigningConfig } from './certificates.ts';
import { createRevocationSource } from './revocation.ts';
import type { PadesServices } from './sign-pdf.ts';
import { createOwnTimestamper, createRemoteTimestamper } from './timestamps.ts';

const made = new WeakMap<Db, Map<string, PadesServices>>();

/** The timestamps and revocation data of the service's signatures (see the module comment). */
export function padesServices(deps: { db: Db; config: SigningConfig; logger?: Pick<Console, 'warn'> }): PadesServices {
  let byUrl = made.get(deps.db);
  if (!byUrl) {
    byUrl = new Map();
    made.set(deps.db, byUrl);
  }
  const key = deps.config.tsaUrl ?? '';
  let services = byUrl.get(key);
  if (!services) {
    const remote = deps.config.tsaUrl
      ? createRemoteTimestamper({
          url: deps.config.tsaUrl,
          timeoutMs: deps.config.tsaTimeout,
          maxBytes: PKI_LIMITS.timestampResponseBytes,
          maxTokenBytes: PKI_LIMITS.timestampTokenBytes,
        })
      : undefined;
    services = {
      signatureTimestamps: remote ?? createOwnTimestamper(() => ownTimestampAuthority(deps)),
      revocation: createRevocationSource(deps),
      ...(remote ? { documentTimestamps: remote } : {}),
    };
    byUrl.set(key, services);
  }
  return services;
}
