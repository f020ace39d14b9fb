/**
 * RFC 3161 timestamps (issue 17): the signature timestamp of PAdES B-T (ETSI EN 319 142-1 §5.3,
 * CAdES' id-aa-signatureTimeStampToken over the signature value) and the document timestamp of
 * B-LTA (ETSI.RFC3161, over the whole file).
 *
 * Two authorities:
 * - a remote one at TSA_URL (any RFC 3161 service over HTTP, §3.4: `application/timestamp-query`
 *   POSTed, `application/timestamp-reply` answered), with a timeout, a size cap and a typed error;
 *   each answer is checked as §2.4.2 asks of a client (status, imprint, nonce, the TSA's signature
 *   and its critical id-kp-timeStamping usage) before it is embedded;
 * - Signet's own timestamp authority (no TSA_URL): its key and certificate issued by the service's
 *   own CA (certificate-authority.ts) and named so ("Signet Timestamp Authority … not a qualified
 *   service"), stamping in process. It makes a signature B-T and its time checkable, but it is no
 *   third party: only an external TSA makes the time independent of the service.
 *
 * Built with PKI.js (TimeStampReq, TimeStampResp, TSTInfo, SignedData); RSA and digests by
 * node:crypto (pki.ts).
 */
import { randomBytes, type KeyObject } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { AppError } from '../errors.ts';
import {
  certificateOf,
  derOf,
  derSetOrder,
  hasExtendedKeyUsage,
  OID,
  parseAsn1,
  SHA256_ALGORITHM,
  sha256,
  signerInfoProblem,
  signingCertificateV2,
  signSignerInfo,
  toArrayBuffer,
} from './pki.ts';

/** An authority that timestamps SHA-256 digests. */
export interface Timestamper {
  /** Who stamps, for messages: "Signet's own timestamp authority" or the TSA's URL. */
  readonly name: string;
  /** The largest token it answers, in bytes (the signature's /Contents reservation counts on it). */
  readonly maxTokenBytes: number;
  /**
   * A TimeStampToken (RFC 3161 §2.4.2: a CMS ContentInfo, DER) whose TSTInfo imprints `digest`,
   * and the certificates it carries (DER, the authority's first).
   * @throws TimestampError when the authority cannot be reached or answers something unusable
   */
  stamp(digest: Buffer): Promise<StampedToken>;
}

/** A timestamp token and the certificates it carries (the validation data of B-LT needs them). */
export interface StampedToken {
  token: Buffer;
  certificates: Buffer[];
}

/** A timestamp authority failed (unreachable, slow, refused, or an answer that does not check). Retried by jobs. */
export class TimestampError extends AppError {
  override name = 'TimestampError';
  constructor(message: string, cause?: unknown) {
    super('UNAVAILABLE', message, { cause });
  }
}

/** What a checked token says. */
export interface CheckedTimestamp {
  genTime: Date;
  /** The TSA's certificate (the token's signer). */
  certificate: pkijs.Certificate;
  /** Every certificate the token carries (the TSA's first when found). */
  certificates: pkijs.Certificate[];
  policy: string;
  serialNumber: string;
}

/**
 * Checks a TimeStampToken against the digest it should imprint (RFC 3161 §2.4.2): a SignedData of
 * id-ct-TSTInfo whose messageImprint is (hash algorithm, `digest`), whose nonce is `nonce` when
 * one was sent, signed by a certificate it carries that has id-kp-timeStamping, the signature and
 * its messageDigest verifying.
 * @param imprint the digest that was stamped and its algorithm (default SHA-256)
 * @throws Error naming the first check that fails
 */
export async function checkTimeStampToken(
  token: Uint8Array,
  imprint: { digest: Uint8Array; algorithm?: string; nonce?: Buffer },
): Promise<CheckedTimestamp> {
  const contentInfo = new pkijs.ContentInfo({ schema: parseAsn1(token) });
  if (contentInfo.contentType !== OID.signedData) throw new Error('the token is not a CMS SignedData');
  const signedData = new pkijs.SignedData({ schema: contentInfo.content });
  if (signedData.encapContentInfo.eContentType !== OID.tstInfo) throw new Error('the token does not hold a TSTInfo');
  const eContent = signedData.encapContentInfo.eContent;
  if (!eContent) throw new Error('the token has no TSTInfo content');
  const tstInfo = new pkijs.TSTInfo({ schema: parseAsn1(new Uint8Array(eContent.getValue())) });
  const algorithm = imprint.algorithm ?? OID.sha256;
  if (tstInfo.messageImprint.hashAlgorithm.algorithmId !== algorithm)
    throw new Error('the token imprints another hash algorithm');
  if (!Buffer.from(tstInfo.messageImprint.hashedMessage.valueBlock.valueHexView).equals(Buffer.from(imprint.digest)))
    throw new Error('the token imprints another digest');
  if (imprint.nonce) {
    const nonce = tstInfo.nonce ? Buffer.from(tstInfo.nonce.valueBlock.valueHexView) : undefined;
    if (!nonce || !stripSign(nonce).equals(stripSign(imprint.nonce))) throw new Error('the token has another nonce');
  }
  const certificates = (signedData.certificates ?? []).filter(
    (c): c is pkijs.Certificate => c instanceof pkijs.Certificate,
  );
  const signerInfo = signedData.signerInfos[0];
  const sid = signerInfo?.sid;
  const signer =
    sid instanceof pkijs.IssuerAndSerialNumber
      ? certificates.find((c) => c.issuer.isEqual(sid.issuer) && c.serialNumber.isEqual(sid.serialNumber))
      : undefined;
  if (!signer) throw new Error("the token does not carry its signer's certificate");
  if (!hasExtendedKeyUsage(signer, OID.timeStamping))
    throw new Error("the token's signer certificate is not for timestamping (id-kp-timeStamping)");
  const problem = signerInfoProblem(signerInfo!, signer, new Uint8Array(eContent.getValue()));
  if (problem) throw new Error(`the token's signature does not verify (${problem})`);
  return {
    genTime: tstInfo.genTime,
    certificate: signer,
    certificates: [signer, ...certificates.filter((c) => c !== signer)],
    policy: tstInfo.policy,
    serialNumber: Buffer.from(tstInfo.serialNumber.valueBlock.valueHexView).toString('hex'),
  };
}

const stripSign = (bytes: Buffer) => {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  return bytes.subarray(start);
};

/** The TSTInfo of a token without checking it (for reports on tokens that fail their check). */
export function readTstInfo(token: Uint8Array): pkijs.TSTInfo | null {
  try {
    const signedData = new pkijs.SignedData({ schema: new pkijs.ContentInfo({ schema: parseAsn1(token) }).content });
    const eContent = signedData.encapContentInfo.eContent;
    return eContent ? new pkijs.TSTInfo({ schema: parseAsn1(new Uint8Array(eContent.getValue())) }) : null;
  } catch {
    return null;
  }
}

/** A TimeStampReq (RFC 3161 §2.4.1) for a SHA-256 digest: v1, a random 64-bit nonce, certReq true. */
export function buildTimeStampRequest(digest: Buffer, nonce: Buffer): Buffer {
  return derOf(
    new pkijs.TimeStampReq({
      version: 1,
      messageImprint: new pkijs.MessageImprint({
        hashAlgorithm: SHA256_ALGORITHM(),
        hashedMessage: new asn1js.OctetString({ valueHex: toArrayBuffer(digest) }),
      }),
      nonce: new asn1js.Integer({ valueHex: toArrayBuffer(nonce) }),
      certReq: true,
    }),
  );
}

/** A positive 64-bit nonce (its high bit clear, so the INTEGER needs no sign octet). */
export function newNonce(): Buffer {
  const nonce = randomBytes(8);
  nonce[0] = (nonce[0]! & 0x7f) | 0x01;
  return nonce;
}

export interface RemoteTimestamperOptions {
  url: string;
  /** Milliseconds for the whole exchange. */
  timeoutMs: number;
  /** Largest answer accepted, in bytes. */
  maxBytes: number;
  /** Largest token accepted, in bytes (what a signature reserves for it). */
  maxTokenBytes: number;
}

/**
 * The timestamp authority at `url` (TSA_URL): each stamp is one POST of a TimeStampReq, its answer
 * checked (checkTimeStampToken with the nonce sent) and the token's own bytes returned.
 */
export function createRemoteTimestamper(options: RemoteTimestamperOptions): Timestamper {
  const name = `the timestamp authority at ${options.url}`;
  const fail = (reason: string, cause?: unknown) => new TimestampError(`Timestamp: ${name} ${reason}`, cause);
  return {
    name,
    maxTokenBytes: options.maxTokenBytes,
    async stamp(digest) {
      const nonce = newNonce();
      let response: Response;
      const signal = AbortSignal.timeout(options.timeoutMs);
      try {
        response = await fetch(options.url, {
          method: 'POST',
          headers: { 'content-type': 'application/timestamp-query', accept: 'application/timestamp-reply' },
          body: new Uint8Array(buildTimeStampRequest(digest, nonce)),
          signal,
          redirect: 'error',
        });
      } catch (error) {
        if (signal.aborted) throw fail(`did not answer within ${options.timeoutMs / 1000} s`, error);
        throw fail(`could not be reached: ${(error as Error).message}`, error);
      }
      if (!response.ok) {
        await response.body?.cancel().catch(() => undefined);
        throw fail(`answered HTTP ${response.status}`);
      }
      let body: Buffer;
      try {
        body = await readCapped(response, options.maxBytes);
      } catch (error) {
        if (error instanceof TimestampError) throw fail((error as Error).message);
        if (signal.aborted) throw fail(`did not answer within ${options.timeoutMs / 1000} s`, error);
        throw fail(`broke off its answer: ${(error as Error).message}`, error);
      }
      let token: Buffer;
      try {
        token = tokenOfResponse(body);
      } catch (error) {
        throw fail((error as Error).message, error);
      }
      if (token.length > options.maxTokenBytes)
        throw fail(`answered a token of ${token.length} bytes; Signet reserves ${options.maxTokenBytes}`);
      let checked: CheckedTimestamp;
      try {
        checked = await checkTimeStampToken(token, { digest, nonce });
      } catch (error) {
        throw fail(`answered a token that does not check: ${(error as Error).message}`, error);
      }
      return { token, certificates: checked.certificates.map((c) => derOf(c)) };
    },
  };
}

/** The body, refused past `maxBytes` (counted as it arrives: a Content-Length may lie). */
async function readCapped(response: Response, maxBytes: number): Promise<Buffer> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw new TimestampError(`answered more than ${maxBytes} bytes`);
  }
  const chunks: Buffer[] = [];
  let received = 0;
  if (!response.body) return Buffer.alloc(0);
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    received += value.byteLength;
    if (received > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new TimestampError(`answered more than ${maxBytes} bytes`);
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
}

/** PKIFailureInfo bit names (RFC 3161 §2.4.2), for messages. */
const FAILURES: Record<number, string> = {
  0: 'badAlg',
  2: 'badRequest',
  5: 'badDataFormat',
  14: 'timeNotAvailable',
  15: 'unacceptedPolicy',
  16: 'unacceptedExtension',
  17: 'addInfoNotAvailable',
  25: 'systemFailure',
};

/**
 * The token of a TimeStampResp, as its own bytes.
 * @throws Error when the answer is not a TimeStampResp, is not granted (status 0 or 1), or holds no token
 */
export function tokenOfResponse(body: Uint8Array): Buffer {
  let asn1: asn1js.AsnType;
  try {
    asn1 = parseAsn1(body);
  } catch {
    throw new Error('answered something that is not a TimeStampResp');
  }
  const response = new pkijs.TimeStampResp({ schema: asn1 });
  const { status, failInfo, statusStrings } = response.status;
  if (status !== 0 && status !== 1) {
    const bits: string[] = [];
    if (failInfo) {
      const view = failInfo.valueBlock.valueHexView;
      for (let bit = 0; bit < view.length * 8; bit++)
        if (view[bit >> 3]! & (0x80 >> (bit & 7))) bits.push(FAILURES[bit] ?? `bit ${bit}`);
    }
    const text = statusStrings?.map((s) => s.valueBlock.value).join('; ');
    throw new Error(
      `refused the request (status ${status}${bits.length ? `, ${bits.join(', ')}` : ''}${text ? `: ${text}` : ''})`,
    );
  }
  // The token's bytes as the TSA wrote them (its signature covers parts of them).
  const sequence = asn1 as asn1js.Sequence;
  const tokenBlock = sequence.valueBlock.value[1];
  if (!tokenBlock) throw new Error('granted the request but sent no token');
  return Buffer.from(tokenBlock.valueBeforeDecodeView);
}

/** Signet's own TSA: its certificate (issued by the service's CA), the CA's, and its key. */
export interface TimestampAuthorityKey {
  key: KeyObject;
  /** The TSA's certificate, DER. */
  certificate: Buffer;
  /** The certificates a token carries: the TSA's, then its CA's (DER). */
  chain: Buffer[];
}

/** Signet's own TSA policy: an OID under the UUID arc 2.25 (X.667), so no registration is needed. */
export const OWN_TSA_POLICY = '2.25.69321323146918319061512613563590593756';

export interface TimeStampTokenRequest {
  /** The digest stamped and its algorithm OID (SHA-256 unless said). */
  digest: Uint8Array;
  algorithm?: string;
  nonce?: Buffer;
  /** Include the certificates (certReq); Signet's own stamps always do. */
  certificates?: boolean;
  genTime?: Date;
}

/**
 * A TimeStampToken made by Signet's own TSA (RFC 3161 §2.4.2): TSTInfo v1 with OWN_TSA_POLICY, a
 * random 128-bit serial, genTime (milliseconds), accuracy 1 s, the nonce when given; signed with
 * SHA-256/RSA with signed attributes contentType, messageDigest and ESS signing-certificate-v2
 * (RFC 5816: the v2 attribute identifies the TSA's certificate), carrying the TSA's chain.
 */
export function issueTimeStampToken(authority: TimestampAuthorityKey, request: TimeStampTokenRequest): Buffer {
  const certificate = certificateOf(authority.certificate);
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x01;
  const tstInfo = new pkijs.TSTInfo({
    version: 1,
    policy: OWN_TSA_POLICY,
    messageImprint: new pkijs.MessageImprint({
      hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: request.algorithm ?? OID.sha256 }),
      hashedMessage: new asn1js.OctetString({ valueHex: toArrayBuffer(request.digest) }),
    }),
    serialNumber: new asn1js.Integer({ valueHex: toArrayBuffer(serial) }),
    genTime: request.genTime ?? new Date(),
    accuracy: new pkijs.Accuracy({ seconds: 1 }),
    ...(request.nonce ? { nonce: new asn1js.Integer({ valueHex: toArrayBuffer(request.nonce) }) } : {}),
  });
  const tstDer = derOf(tstInfo);
  const signerInfo = new pkijs.SignerInfo({
    version: 1,
    sid: new pkijs.IssuerAndSerialNumber({ issuer: certificate.issuer, serialNumber: certificate.serialNumber }),
    digestAlgorithm: SHA256_ALGORITHM(),
    signedAttrs: new pkijs.SignedAndUnsignedAttributes({
      type: 0,
      attributes: derSetOrder([
        new pkijs.Attribute({ type: OID.contentType, values: [new asn1js.ObjectIdentifier({ value: OID.tstInfo })] }),
        new pkijs.Attribute({
          type: OID.messageDigest,
          values: [new asn1js.OctetString({ valueHex: toArrayBuffer(sha256(tstDer)) })],
        }),
        new pkijs.Attribute({
          type: OID.signingCertificateV2,
          values: [signingCertificateV2(certificate, authority.certificate)],
        }),
      ]),
    }),
  });
  signSignerInfo(signerInfo, authority.key);
  const signedData = new pkijs.SignedData({
    version: 3,
    digestAlgorithms: [SHA256_ALGORITHM()],
    encapContentInfo: new pkijs.EncapsulatedContentInfo({
      eContentType: OID.tstInfo,
      eContent: new asn1js.OctetString({ valueHex: toArrayBuffer(tstDer) }),
    }),
    ...(request.certificates === false ? {} : { certificates: authority.chain.map((der) => certificateOf(der)) }),
    signerInfos: [signerInfo],
  });
  return derOf(new pkijs.ContentInfo({ contentType: OID.signedData, content: signedData.toSchema(true) }));
}

/** Signet's own TSA as a Timestamper: stamps in process with the TSA key `load` gives (loaded once per call). */
export function createOwnTimestamper(load: () => Promise<TimestampAuthorityKey>): Timestamper {
  return {
    name: "Signet's own timestamp authority",
    // Its tokens carry two certificates and one RSA-3072 signature: about 3.5 KB.
    maxTokenBytes: 8 * 1024,
    async stamp(digest) {
      const authority = await load();
      return { token: issueTimeStampToken(authority, { digest }), certificates: authority.chain };
    },
  };
}
