/**
 * Revocation data for the certificates of a signature (PAdES B-LT, issue 17): CRLs (RFC 5280 §5).
 *
 * - A certificate issued by this deployment's own CA (certificate-authority.ts): the CA signs a
 *   fresh CRL on the spot (the same one /pki/crl/<id>.crl serves), so nothing goes over the network
 *   and the CRL is issued after the signature's timestamp.
 * - Any other issuer (an account's own certificate, SIGNING_P12_PATH, a TSA_URL authority): the
 *   CRL at the certificate's cRLDistributionPoints, downloaded as document URLs are
 *   (src/documents/load-file-input.ts: public addresses only unless DOWNLOAD_ALLOW_PRIVATE, a
 *   timeout, at most CRL_MAX_BYTES), accepted only when it is a CRL signed by the issuer, and kept
 *   in memory until its nextUpdate (at most CRL_CACHE_ENTRIES of them).
 * A CRL that cannot be had is logged and left out: the signature is still made (B-T with the
 * certificates in its DSS), and /tools/verify says that revocation data is missing. OCSP is not
 * used: a CRL serves every certificate of an issuer at once and needs no responder at signing time.
 */
import { createHash } from 'node:crypto';
import * as pkijs from 'pkijs';
import type { Db } from '../db/client.ts';
import { loadFileInput } from '../documents/load-file-input.ts';
import { CRL_MAX_BYTES } from '../limits.ts';
import { issueCrl } from './certificate-authority.ts';
import type { SigningConfig } from './certificates.ts';
import type { RevocationSource } from './long-term-validation.ts';
import { cryptoEngine, crlUrlsOf, derOf, parseAsn1 } from './pki.ts';

/** Downloaded CRLs kept at once (a handful of issuers in practice). */
const CRL_CACHE_ENTRIES = 32;

const fingerprint = (der: Uint8Array) => createHash('sha256').update(der).digest('hex');

/** Whether `crl` is a CRL signed by `issuer` (and names it as its issuer). */
async function isCrlOf(crl: pkijs.CertificateRevocationList, issuer: pkijs.Certificate): Promise<boolean> {
  if (!crl.issuer.isEqual(issuer.subject)) return false;
  try {
    return await crl.verify({ issuerCertificate: issuer }, cryptoEngine());
  } catch {
    return false;
  }
}

/**
 * The deployment's revocation source (see the module comment).
 * @param deps.logger where a CRL that cannot be had is reported
 */
export function createRevocationSource(deps: {
  db: Db;
  config: SigningConfig;
  logger?: Pick<Console, 'warn'>;
}): RevocationSource {
  const downloaded = new Map<string, { der: Buffer; until: number }>();
  /** The deployment's CA rows by certificate fingerprint (read on first use, again when one is not found). */
  let caIds: Map<string, number> | undefined;
  const caIdOf = async (issuer: pkijs.Certificate) => {
    const key = fingerprint(derOf(issuer));
    if (!caIds?.has(key)) {
      const rows = await deps.db.signingCertificate.findMany({
        where: { kind: 'ca', accountId: null, certificate: { not: null } },
        select: { id: true, certificate: true },
      });
      caIds = new Map(rows.map((r) => [fingerprint(r.certificate!), r.id]));
    }
    return caIds.get(key);
  };

  const download = async (url: string, issuer: pkijs.Certificate): Promise<Buffer | null> => {
    const kept = downloaded.get(url);
    if (kept && kept.until > Date.now()) return kept.der;
    try {
      const { bytes } = await loadFileInput(url, {
        field: 'CRL',
        allowPrivate: deps.config.downloadAllowPrivate,
        maxBytes: CRL_MAX_BYTES,
        timeoutMs: deps.config.downloadTimeout,
      });
      const crl = new pkijs.CertificateRevocationList({ schema: parseAsn1(bytes) });
      if (!(await isCrlOf(crl, issuer))) throw new Error('it is not a CRL signed by the certificate issuer');
      const until = crl.nextUpdate?.value.getTime() ?? Date.now() + 3_600_000;
      if (downloaded.size >= CRL_CACHE_ENTRIES) downloaded.clear();
      downloaded.set(url, { der: bytes, until });
      return bytes;
    } catch (error) {
      deps.logger?.warn(`Revocation data: the CRL at ${url} was left out: ${(error as Error).message}`);
      return null;
    }
  };

  return {
    async crlsFor(certificate, issuer) {
      const caId = await caIdOf(issuer);
      if (caId !== undefined) {
        const crl = await issueCrl(deps, caId, new Date());
        return crl ? [crl] : [];
      }
      const urls = crlUrlsOf(certificate);
      if (urls.length === 0) {
        deps.logger?.warn(
          'Revocation data: a certificate of the signature names no CRL (cRLDistributionPoints); none is embedded',
        );
        return [];
      }
      for (const url of urls) {
        const crl = await download(url, issuer);
        if (crl) return [crl];
      }
      return [];
    },
  };
}
