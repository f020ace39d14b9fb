/**
 * A real RFC 3161 timestamp authority on 127.0.0.1 (a free port), for TSA_URL in tests: an HTTP
 * server (node:http) answering `POST /tsa` with PKI.js structures, its own root CA ("Test TSA
 * Root") and TSA certificate (extKeyUsage id-kp-timeStamping, critical; a cRLDistributionPoints URL
 * at `GET /crl`, the root's CRL). Written apart from src/signing/timestamps.ts on purpose: the
 * service's client is checked against another implementation than its own.
 *
 * Each request is checked as RFC 3161 §2.4.1/§2.4.2 asks of a TSA: the Content-Type
 * `application/timestamp-query`, a DER TimeStampReq and nothing after it, version 1, a known hash
 * algorithm (SHA-256/384/512) whose length the hashedMessage has, the policy if one is asked for,
 * no extensions (none is understood); a refusal is a TimeStampResp with status rejection and the
 * PKIFailureInfo bit (badRequest, badAlg, badDataFormat, unacceptedPolicy, unacceptedExtension).
 * A granted answer echoes the nonce, carries the certificates when certReq is true, and signs
 * contentType, messageDigest and ESS signing-certificate-v2. Knobs make it misbehave for the
 * client's tests (slow, oversized, HTTP errors, a token over another digest).
 */
import { createHash, generateKeyPairSync, randomBytes, sign as rsaSign, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';

const OIDS = {
  sha256: '2.16.840.1.101.3.4.2.1',
  sha384: '2.16.840.1.101.3.4.2.2',
  sha512: '2.16.840.1.101.3.4.2.3',
  sha256WithRSA: '1.2.840.113549.1.1.11',
  signedData: '1.2.840.113549.1.7.2',
  tstInfo: '1.2.840.113549.1.9.16.1.4',
  contentType: '1.2.840.113549.1.9.3',
  messageDigest: '1.2.840.113549.1.9.4',
  signingCertificateV2: '1.2.840.113549.1.9.16.2.47',
  timeStamping: '1.3.6.1.5.5.7.3.8',
};
const HASH_LENGTHS: Record<string, [string, number]> = {
  [OIDS.sha256]: ['sha256', 32],
  [OIDS.sha384]: ['sha384', 48],
  [OIDS.sha512]: ['sha512', 64],
};
/** PKIFailureInfo bits (RFC 3161 §2.4.2). */
export const FAILURE = {
  badAlg: 0,
  badRequest: 2,
  badDataFormat: 5,
  unacceptedPolicy: 15,
  unacceptedExtension: 16,
} as const;
export const TEST_TSA_POLICY = '1.3.6.1.4.1.99999.3161.1';

export interface TsaRequestSeen {
  contentType: string | undefined;
  /** The request's imprint (hex) and nonce (hex), when it parsed. */
  imprint?: string;
  nonce?: string;
  certReq?: boolean;
  /** The failure answered, if any. */
  failure?: keyof typeof FAILURE;
}

export interface TestTsa {
  /** `http://127.0.0.1:<port>/tsa`, for TSA_URL. */
  url: string;
  crlUrl: string;
  /** DER certificates: the root (trust anchor) and the TSA's. */
  root: Buffer;
  tsaCertificate: Buffer;
  requests: TsaRequestSeen[];
  /** Knobs: delay each answer (ms); answer this HTTP status; answer so many bytes; stamp another digest; refuse. */
  behaviour: {
    delayMs?: number;
    httpStatus?: number;
    oversizeBytes?: number;
    wrongImprint?: boolean;
    /** Refuse every request with this failure. */
    refuse?: keyof typeof FAILURE;
  };
  /** The genTime of every granted token, in order. */
  genTimes: Date[];
  close(): Promise<void>;
}

const ab = (bytes: Uint8Array) =>
  bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
const der = (value: { toSchema(): asn1js.AsnType } | asn1js.AsnType) =>
  Buffer.from(('toSchema' in value ? value.toSchema() : value).toBER(false));
const algorithm = (id: string) =>
  new pkijs.AlgorithmIdentifier({ algorithmId: id, algorithmParams: new asn1js.Null() });

function name(cn: string): pkijs.RelativeDistinguishedNames {
  const sequence = new asn1js.Sequence({
    value: [
      new asn1js.Set({
        value: [
          new pkijs.AttributeTypeAndValue({ type: '2.5.4.3', value: new asn1js.Utf8String({ value: cn }) }).toSchema(),
        ],
      }),
    ],
  });
  return new pkijs.RelativeDistinguishedNames({ schema: asn1js.fromBER(sequence.toBER()).result });
}

function certificate(options: {
  subject: string;
  publicKey: KeyObject;
  issuer?: { name: pkijs.RelativeDistinguishedNames; key: KeyObject };
  selfKey?: KeyObject;
  ca?: boolean;
  timestamping?: boolean;
  crlUrl?: string;
}): Buffer {
  const cert = new pkijs.Certificate();
  cert.version = 2;
  cert.serialNumber = new asn1js.Integer({ valueHex: ab(Buffer.concat([Buffer.from([1]), randomBytes(15)])) });
  cert.subject = name(options.subject);
  cert.issuer = options.issuer?.name ?? name(options.subject);
  cert.notBefore.value = new Date(Date.now() - 3_600_000);
  cert.notAfter.value = new Date(Date.now() + 5 * 365 * 86_400_000);
  cert.subjectPublicKeyInfo = new pkijs.PublicKeyInfo({
    schema: asn1js.fromBER(ab(options.publicKey.export({ type: 'spki', format: 'der' }))).result,
  });
  const extensions = [
    new pkijs.Extension({
      extnID: '2.5.29.19',
      critical: true,
      extnValue: ab(der(new pkijs.BasicConstraints(options.ca ? { cA: true } : {}))),
    }),
  ];
  if (options.timestamping)
    extensions.push(
      new pkijs.Extension({
        extnID: '2.5.29.37',
        critical: true,
        extnValue: ab(der(new pkijs.ExtKeyUsage({ keyPurposes: [OIDS.timeStamping] }))),
      }),
    );
  if (options.crlUrl)
    extensions.push(
      new pkijs.Extension({
        extnID: '2.5.29.31',
        critical: false,
        extnValue: ab(
          der(
            new pkijs.CRLDistributionPoints({
              distributionPoints: [
                new pkijs.DistributionPoint({
                  distributionPoint: [new pkijs.GeneralName({ type: 6, value: options.crlUrl })],
                }),
              ],
            }),
          ),
        ),
      }),
    );
  cert.extensions = extensions;
  cert.signature = algorithm(OIDS.sha256WithRSA);
  cert.signatureAlgorithm = algorithm(OIDS.sha256WithRSA);
  const tbs = cert.encodeTBS().toBER(false);
  cert.tbsView = new Uint8Array(tbs);
  const key = options.issuer?.key ?? options.selfKey!;
  cert.signatureValue = new asn1js.BitString({ valueHex: ab(rsaSign('sha256', new Uint8Array(tbs), key)) });
  return der(cert);
}

function crl(issuer: pkijs.Certificate, key: KeyObject): Buffer {
  const list = new pkijs.CertificateRevocationList();
  list.version = 1;
  list.signature = algorithm(OIDS.sha256WithRSA);
  list.signatureAlgorithm = algorithm(OIDS.sha256WithRSA);
  list.issuer = issuer.subject;
  list.thisUpdate = new pkijs.Time({ type: 0, value: new Date(Date.now() - 60_000) });
  list.nextUpdate = new pkijs.Time({ type: 0, value: new Date(Date.now() + 86_400_000) });
  const tbs = (list as unknown as { encodeTBS(): asn1js.Sequence }).encodeTBS().toBER(false);
  list.tbsView = new Uint8Array(tbs);
  list.signatureValue = new asn1js.BitString({ valueHex: ab(rsaSign('sha256', new Uint8Array(tbs), key)) });
  return der(list);
}

function rejection(bit: number): Buffer {
  const bytes = Buffer.alloc(Math.floor(bit / 8) + 1);
  bytes[bit >> 3]! |= 0x80 >> (bit & 7);
  const response = new pkijs.TimeStampResp({
    status: new pkijs.PKIStatusInfo({
      status: 2,
      failInfo: new asn1js.BitString({ valueHex: ab(bytes), unusedBits: 7 - (bit % 8) }),
    }),
  });
  return der(response);
}

/** Starts the TSA. */
export async function startTestTsa(): Promise<TestTsa> {
  const rootKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const tsaKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const rootDer = certificate({
    subject: 'Test TSA Root',
    publicKey: rootKeys.publicKey,
    selfKey: rootKeys.privateKey,
    ca: true,
  });
  const root = new pkijs.Certificate({ schema: asn1js.fromBER(ab(rootDer)).result });
  const tsaDer = certificate({
    subject: 'Test TSA',
    publicKey: tsaKeys.publicKey,
    issuer: { name: root.subject, key: rootKeys.privateKey },
    timestamping: true,
    crlUrl: `${base}/crl`,
  });
  const tsa = new pkijs.Certificate({ schema: asn1js.fromBER(ab(tsaDer)).result });
  const state: TestTsa = {
    url: `${base}/tsa`,
    crlUrl: `${base}/crl`,
    root: rootDer,
    tsaCertificate: tsaDer,
    requests: [],
    behaviour: {},
    genTimes: [],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  const token = (imprint: pkijs.MessageImprint, nonce: asn1js.Integer | undefined, certReq: boolean): Buffer => {
    const genTime = new Date();
    state.genTimes.push(genTime);
    const hashed = state.behaviour.wrongImprint
      ? new asn1js.OctetString({ valueHex: ab(randomBytes(imprint.hashedMessage.valueBlock.valueHexView.length)) })
      : imprint.hashedMessage;
    const info = new pkijs.TSTInfo({
      version: 1,
      policy: TEST_TSA_POLICY,
      messageImprint: new pkijs.MessageImprint({ hashAlgorithm: imprint.hashAlgorithm, hashedMessage: hashed }),
      serialNumber: new asn1js.Integer({ valueHex: ab(Buffer.concat([Buffer.from([1]), randomBytes(7)])) }),
      genTime,
      ...(nonce ? { nonce } : {}),
    });
    const infoDer = der(info);
    const essCertId = new asn1js.Sequence({
      value: [new asn1js.OctetString({ valueHex: ab(createHash('sha256').update(tsaDer).digest()) })],
    });
    const attributes = [
      new pkijs.Attribute({ type: OIDS.contentType, values: [new asn1js.ObjectIdentifier({ value: OIDS.tstInfo })] }),
      new pkijs.Attribute({
        type: OIDS.messageDigest,
        values: [new asn1js.OctetString({ valueHex: ab(createHash('sha256').update(infoDer).digest()) })],
      }),
      new pkijs.Attribute({
        type: OIDS.signingCertificateV2,
        values: [new asn1js.Sequence({ value: [new asn1js.Sequence({ value: [essCertId] })] })],
      }),
    ];
    // DER SET OF: ascending encodings.
    attributes.sort((a, b) => Buffer.compare(der(a), der(b)));
    const signerInfo = new pkijs.SignerInfo({
      version: 1,
      sid: new pkijs.IssuerAndSerialNumber({ issuer: tsa.issuer, serialNumber: tsa.serialNumber }),
      digestAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: OIDS.sha256 }),
      signedAttrs: new pkijs.SignedAndUnsignedAttributes({ type: 0, attributes }),
      signatureAlgorithm: algorithm(OIDS.sha256WithRSA),
    });
    const set = new asn1js.Set({ value: attributes.map((a) => a.toSchema()) }).toBER(false);
    signerInfo.signature = new asn1js.OctetString({
      valueHex: ab(rsaSign('sha256', new Uint8Array(set), tsaKeys.privateKey)),
    });
    const signedData = new pkijs.SignedData({
      version: 3,
      digestAlgorithms: [new pkijs.AlgorithmIdentifier({ algorithmId: OIDS.sha256 })],
      encapContentInfo: new pkijs.EncapsulatedContentInfo({
        eContentType: OIDS.tstInfo,
        eContent: new asn1js.OctetString({ valueHex: ab(infoDer) }),
      }),
      ...(certReq ? { certificates: [tsa, root] } : {}),
      signerInfos: [signerInfo],
    });
    return der(
      new pkijs.TimeStampResp({
        status: new pkijs.PKIStatusInfo({ status: 0 }),
        timeStampToken: new pkijs.ContentInfo({ contentType: OIDS.signedData, content: signedData.toSchema(true) }),
      }),
    );
  };

  const answer = (body: Buffer, seen: TsaRequestSeen): Buffer => {
    const fail = (failure: keyof typeof FAILURE) => {
      seen.failure = failure;
      return rejection(FAILURE[failure]);
    };
    const parsed = asn1js.fromBER(ab(body));
    if (parsed.offset === -1 || parsed.offset !== body.length) return fail('badDataFormat');
    let request: pkijs.TimeStampReq;
    try {
      request = new pkijs.TimeStampReq({ schema: parsed.result });
    } catch {
      return fail('badDataFormat');
    }
    // Re-encoded DER must be what was sent (a DER request).
    if (!der(request).equals(body)) return fail('badDataFormat');
    seen.imprint = Buffer.from(request.messageImprint.hashedMessage.valueBlock.valueHexView).toString('hex');
    seen.nonce = request.nonce ? Buffer.from(request.nonce.valueBlock.valueHexView).toString('hex') : undefined;
    seen.certReq = request.certReq === true;
    if (request.version !== 1) return fail('badRequest');
    const hash = HASH_LENGTHS[request.messageImprint.hashAlgorithm.algorithmId];
    if (!hash) return fail('badAlg');
    if (request.messageImprint.hashedMessage.valueBlock.valueHexView.length !== hash[1]) return fail('badDataFormat');
    if (request.reqPolicy && request.reqPolicy !== TEST_TSA_POLICY) return fail('unacceptedPolicy');
    if (request.extensions?.length) return fail('unacceptedExtension');
    if (state.behaviour.refuse) return fail(state.behaviour.refuse);
    return token(request.messageImprint, request.nonce, request.certReq === true);
  };

  server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const respond = () => {
        if (req.method === 'GET' && req.url === '/crl') {
          res.writeHead(200, { 'content-type': 'application/pkix-crl' });
          res.end(crl(root, rootKeys.privateKey));
          return;
        }
        if (req.method !== 'POST' || req.url !== '/tsa') {
          res.writeHead(404).end();
          return;
        }
        const seen: TsaRequestSeen = { contentType: req.headers['content-type'] };
        state.requests.push(seen);
        if (state.behaviour.httpStatus) {
          res.writeHead(state.behaviour.httpStatus).end('no');
          return;
        }
        if (state.behaviour.oversizeBytes) {
          res.writeHead(200, { 'content-type': 'application/timestamp-reply' });
          res.end(Buffer.alloc(state.behaviour.oversizeBytes, 0x30));
          return;
        }
        // RFC 3161 §3.4: the query travels as application/timestamp-query.
        let body: Buffer;
        if (req.headers['content-type'] === 'application/timestamp-query') body = answer(Buffer.concat(chunks), seen);
        else {
          seen.failure = 'badRequest';
          body = rejection(FAILURE.badRequest);
        }
        res.writeHead(200, { 'content-type': 'application/timestamp-reply', 'content-length': body.length });
        res.end(body);
      };
      if (state.behaviour.delayMs) setTimeout(respond, state.behaviour.delayMs);
      else respond();
    });
  });
  return state;
}
