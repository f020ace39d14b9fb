/**
 * Opening PKCS#12 bundles (the service's SIGNING_P12_PATH, generated certificates, the own CA's and
 * TSA's keys, accounts' uploads) as node-forge and @signpdf/signer-p12 read them, with one set of
 * checks and messages. A module of its own, below certificates.ts and certificate-authority.ts,
 * which both open bundles (they imported each other before).
 *
 * Opening derives keys from the password in JavaScript (node-forge: the PKCS#12 key derivation of
 * RFC 7292 appendix B for the MAC and the PKCS#12 PBEs, PBKDF2 for PBES2), as many times over as
 * the bundle's iteration counts say — counts the sender chooses. So every bundle opens in the parse
 * pool (src/parse-pool/: off the event loop, within its time limit), and each derivation is checked
 * first (issue 23 item 2): a count over PKCS12_MAX_ITERATIONS, or counts adding up to more than
 * PKCS12_MAX_TOTAL_ITERATIONS in one bundle, are refused before any key is derived with them. The
 * check sits at node-forge's three derivation points, so it sees every count, also those of bags
 * nested inside encrypted safe contents, which no look at the bundle's outer structure can see.
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import forge from 'node-forge';
import { AppError } from '../errors.ts';
import { ownBytes, runParseTask } from '../parse-pool/pool.ts';
import { parseTask } from '../parse-pool/tasks.ts';

/**
 * Most iterations one key derivation of a PKCS#12 may ask for. Writers use far fewer: OpenSSL 3
 * 2,048, Windows 2,000, the JDK 10,000 (for its MAC and its PBEs alike). node-forge derives in
 * JavaScript: measured here (Node 22, one core) 16–55 ms per 10,000 iterations of the PKCS#12
 * derivation (SHA-1 or SHA-256, warm to cold) and ~80 ms per 10,000 of PBKDF2-HMAC-SHA-256, so the
 * cap, five times the JDK's count, costs at most ~0.4 s per derivation. Issue 23's bundle asked for
 * 1,500,000 (14 s on the event loop); 2^31 − 1 would be hours.
 */
export const PKCS12_MAX_ITERATIONS = 50_000;
/**
 * Most iterations all the derivations of one bundle may add up to: a crafted bundle can hold many
 * encrypted bags, each under the cap. Five derivations at the cap (the MAC, and a key and an IV for
 * each of two PKCS#12 PBEs): at most ~2 s of a parse-pool worker.
 */
export const PKCS12_MAX_TOTAL_ITERATIONS = 250_000;

/** Iterations left to the bundle being opened (openPkcs12 sets it for its synchronous call). */
let iterationBudget: { left: number } | undefined;

/**
 * Wraps one of node-forge's derivation functions so that its iteration count (argument
 * `countArgument`) is charged to the bundle being opened first, and refused over the caps.
 */
function guarded<F extends (...args: never[]) => unknown>(derive: F, countArgument: number, what: string): F {
  return function (this: unknown, ...args: Parameters<F>) {
    if (iterationBudget) {
      const count = Number(args[countArgument]);
      if (!(count <= PKCS12_MAX_ITERATIONS))
        throw new IterationCapError(
          `uses an iteration count of ${count} (${what}); at most ${PKCS12_MAX_ITERATIONS} are accepted`,
        );
      iterationBudget.left -= count;
      if (iterationBudget.left < 0)
        throw new IterationCapError(
          `asks for more than ${PKCS12_MAX_TOTAL_ITERATIONS} iterations of key derivation in all; at most ` +
            `${PKCS12_MAX_ITERATIONS} per derivation and ${PKCS12_MAX_TOTAL_ITERATIONS} per bundle are accepted`,
        );
    }
    return derive.apply(this, args);
  } as F;
}

class IterationCapError extends Error {}

// node-forge's derivation points, looked up as properties at each call (pkcs12.js, pbe.js):
// the MAC key (forge.pkcs12.generateKey), PKCS#12 PBE keys and IVs (forge.pbe.generatePkcs12Key,
// the same function under another name), PBES2 keys (forge.pkcs5.pbkdf2).
const forgeFunctions = {
  pkcs12: forge.pkcs12 as unknown as Record<string, (...args: never[]) => unknown>,
  pbe: (forge.pki as unknown as { pbe: Record<string, (...args: never[]) => unknown> }).pbe,
  pkcs5: forge.pkcs5 as unknown as Record<string, (...args: never[]) => unknown>,
};
forgeFunctions.pkcs12.generateKey = guarded(forgeFunctions.pkcs12.generateKey!, 3, "the MAC's");
forgeFunctions.pbe.generatePkcs12Key = guarded(forgeFunctions.pbe.generatePkcs12Key!, 3, 'a PKCS#12 encryption');
forgeFunctions.pkcs5.pbkdf2 = guarded(forgeFunctions.pkcs5.pbkdf2!, 2, 'a PBKDF2 encryption');

/** An opened PKCS#12: the private key for node:crypto and the certificates as DER. */
export interface OpenedBundle {
  key: KeyObject;
  /** The certificate matching the key, DER. */
  certificate: Buffer;
  /** Every certificate of the bundle in bag order, DER (the key's among them). */
  certificates: Buffer[];
}

/** What the parse pool's `openPkcs12` task answers: the key as PKCS#8 DER, the certificates as DER. */
export interface Pkcs12Parts {
  key: Uint8Array;
  certificate: Uint8Array;
  certificates: Uint8Array[];
}

/**
 * Opens a PKCS#12 bundle in the parse pool (openPkcs12's checks and messages, the iteration caps)
 * into a node KeyObject and DER certificates.
 * @param options.passwordName names the password in messages (default: SIGNING_P12_PASSWORD's)
 * @param options.owner whose task it is in the parse pool's fair queue (an account id); default `system`
 * @throws AppError UNAVAILABLE as openPkcs12 (an iteration count over the caps among its reasons);
 *   the parse pool's limits (src/parse-pool/pool.ts runParseTask)
 */
export async function openPkcs12Bundle(
  p12: Buffer,
  password: string,
  source: string,
  options: { passwordName?: string; owner?: string | number } = {},
): Promise<OpenedBundle> {
  const parts = await runParseTask(openPkcs12Task, [ownBytes(p12), password, source, options.passwordName], {
    owner: options.owner ?? 'system',
    subject: `Signing certificate: ${source}`,
  });
  return {
    key: createPrivateKey({ key: Buffer.from(parts.key), format: 'der', type: 'pkcs8' }),
    certificate: Buffer.from(parts.certificate),
    certificates: parts.certificates.map((der) => Buffer.from(der)),
  };
}

/**
 * The parse pool's `openPkcs12` task (src/parse-worker/worker.ts): openPkcs12, its key and
 * certificates as DER. Runs in a worker; callers use openPkcs12Bundle.
 */
export function openPkcs12Parts(p12: Uint8Array, password: string, source: string, passwordName?: string): Pkcs12Parts {
  const { certificate, key, certificates } = openPkcs12(Buffer.from(p12), password, source, passwordName);
  const der = (cert: forge.pki.Certificate) =>
    Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes(), 'binary');
  return {
    key: createPrivateKey(forge.pki.privateKeyToPem(key)).export({ format: 'der', type: 'pkcs8' }),
    certificate: der(certificate),
    certificates: certificates.map(der),
  };
}

/** The parse pool's `openPkcs12` task: openPkcs12Parts in a worker (src/parse-pool/tasks.ts). */
export const openPkcs12Task = parseTask('openPkcs12', openPkcs12Parts);

/**
 * Opens a PKCS#12 bundle the way @signpdf/signer-p12 will: the first pkcs8ShroudedKeyBag's key
 * and the certificate whose public key matches it. Derives keys on the calling thread: it runs in
 * the parse pool (openPkcs12Parts); callers use openPkcs12Bundle.
 * @param source names the bundle in error messages
 * @throws AppError UNAVAILABLE (not PKCS#12, an iteration count over PKCS12_MAX_ITERATIONS or counts
 *   over PKCS12_MAX_TOTAL_ITERATIONS, wrong password, no key, no matching certificate)
 */
export function openPkcs12(
  p12: Buffer,
  password: string,
  source: string,
  passwordName = 'the password in SIGNING_P12_PASSWORD',
): { certificate: forge.pki.Certificate; key: forge.pki.rsa.PrivateKey; certificates: forge.pki.Certificate[] } {
  const fail = (reason: string, cause?: unknown): never => {
    throw new AppError('UNAVAILABLE', `Signing certificate: ${source} ${reason}`, { cause });
  };
  let asn1: forge.asn1.Asn1;
  try {
    asn1 = forge.asn1.fromDer(forge.util.createBuffer(p12.toString('binary')));
  } catch (error) {
    return fail('is not a PKCS#12 (.p12/.pfx) file', error);
  }
  let bundle: forge.pkcs12.Pkcs12Pfx;
  iterationBudget = { left: PKCS12_MAX_TOTAL_ITERATIONS };
  try {
    bundle = forge.pkcs12.pkcs12FromAsn1(asn1, false, password);
  } catch (error) {
    if (error instanceof IterationCapError) return fail(error.message, error);
    const message = (error as Error).message ?? '';
    // node-forge: "PKCS#12 MAC could not be verified. Invalid password?"; a wrong password on an
    // unMACed bundle fails later, decrypting the key ("Invalid password?" or a padding error).
    if (/password|MAC|decrypt|padding/i.test(message))
      return fail(`does not open with ${passwordName} (wrong password?)`, error);
    return fail(`is not a PKCS#12 file node-forge can read: ${message}`, error);
  } finally {
    iterationBudget = undefined;
  }
  const { key, certificate, certificates } = keyAndCertificateOf(bundle);
  if (!key) return fail('holds no encrypted private key (pkcs8ShroudedKeyBag) or an unsupported key type (RSA only)');
  if (!certificate) return fail('holds no certificate matching its private key');
  return { certificate, key, certificates };
}

/**
 * What a signer takes from an opened PKCS#12 bundle, as @signpdf/signer-p12 does: the first
 * pkcs8ShroudedKeyBag's RSA key, every certificate, and the one whose public key matches the key.
 * Shared by the configuration check above and the signer (sign-pdf.ts), so both accept the same
 * bundles; each words its own errors.
 */
export function keyAndCertificateOf(bundle: forge.pkcs12.Pkcs12Pfx): {
  key: forge.pki.rsa.PrivateKey | undefined;
  certificate: forge.pki.Certificate | undefined;
  certificates: forge.pki.Certificate[];
} {
  const key = bundle.getBags({ bagType: forge.pki.oids.pkcs8ShroudedKeyBag })[forge.pki.oids.pkcs8ShroudedKeyBag]?.[0]
    ?.key as forge.pki.rsa.PrivateKey | undefined;
  const certificates = (bundle.getBags({ bagType: forge.pki.oids.certBag })[forge.pki.oids.certBag] ?? [])
    .map((bag) => bag.cert)
    .filter((cert): cert is forge.pki.Certificate => cert !== undefined);
  const certificate = key
    ? certificates.find((cert) => {
        const publicKey = cert.publicKey as forge.pki.rsa.PublicKey;
        return publicKey.n?.compareTo(key.n) === 0 && publicKey.e?.compareTo(key.e) === 0;
      })
    : undefined;
  return { key, certificate, certificates };
}
