/**
 * `GET /pki/crl/<ca id>.crl` (issue 17): the certificate revocation list of the deployment's own CA
 * (certificate-authority.ts), at the URL its certificates name (cRLDistributionPoints), so that a
 * verifier that does not rely on the CRL embedded in a document (its DSS) can fetch a current one.
 * Public (CRLs are public by design, RFC 5280 §5) and cacheable: DER, `application/pkix-crl`
 * (RFC 2585 §4.2), made at most every CRL_REISSUE_MS per CA and process (a request costs no
 * signature while it is fresh: the route cannot be used to make the service sign in a loop), with
 * `Cache-Control: public, max-age` of what is left of that. 404 for an id that is not a CA.
 */
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/client.ts';
import type { AuthorityConfig } from './certificate-authority.ts';

/** How long one CRL is served before a new one is signed, in ms. */
export const CRL_REISSUE_MS = 5 * 60_000;

/** Registers the route. */
export function registerPkiRoutes(app: FastifyInstance, deps: { db: Db; config: AuthorityConfig }): void {
  const issued = new Map<number, { der: Buffer; at: number }>();
  app.get<{ Params: { file: string } }>('/pki/crl/:file', async (request, reply) => {
    const match = /^([1-9]\d{0,9})\.crl$/.exec(request.params.file);
    const id = match ? Number(match[1]) : Number.NaN;
    if (!Number.isSafeInteger(id) || id > 2_147_483_647)
      return reply.code(404).type('text/plain; charset=utf-8').send('Not found');
    let crl = issued.get(id);
    if (!crl || Date.now() - crl.at >= CRL_REISSUE_MS) {
      // Loaded on first use: PKI.js and node-forge are memory an idle service need not hold.
      const { issueCrl } = await import('./certificate-authority.ts');
      const now = new Date();
      const der = await issueCrl(deps, id, now);
      if (!der) return reply.code(404).type('text/plain; charset=utf-8').send('Not found');
      crl = { der, at: now.getTime() };
      if (issued.size >= 16) issued.clear();
      issued.set(id, crl);
    }
    const maxAge = Math.max(0, Math.floor((crl.at + CRL_REISSUE_MS - Date.now()) / 1000));
    return reply
      .header('cache-control', `public, max-age=${maxAge}`)
      .header('content-disposition', `inline; filename="${id}.crl"`)
      .type('application/pkix-crl')
      .send(crl.der);
  });
}
