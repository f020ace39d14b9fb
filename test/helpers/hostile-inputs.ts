/**
 * Crafted inputs of issue 23 ("Trust, round 2"): files an attacker with an ordinary or a read-only
 * key sends to make one request cost far more than its bytes. Shared by the tests that prove each
 * is bounded (test/parse-pool.test.ts) and by `npm run bench:abuse`, which sends them under load.
 * Each builder is deterministic in shape (random only in keys and salts) and fast: none derives a
 * key with the iteration count it writes, and the PDFs are assembled as text, not drawn.
 */
import { generateKeyPairSync } from 'node:crypto';
import zlib from 'node:zlib';
import forge from 'node-forge';

const { asn1, pki } = forge;

/** What a hostile PKCS#12 holds: every count is written as given, whatever it costs to derive. */
export interface HostilePkcs12Options {
  /** The password the bundle is made with (the MAC and the encryptions). */
  password?: string;
  /** The MacData's iteration count (RFC 7292 §4): what node-forge derives first, before anything else. */
  macIterations?: number;
  /** The iteration count of the encrypted SafeContents holding the certificate (OpenSSL's layout). */
  certificatesIterations?: number;
  /** The iteration count of the pkcs8ShroudedKeyBag's PBES2. */
  keyIterations?: number;
  /**
   * Where the key bag sits: `data` (in a plain SafeContents, as OpenSSL and node-forge write it) or
   * `encrypted` (inside the encrypted SafeContents, with the certificate: it is seen only once that
   * is decrypted, so no look at the outer structure can find its count).
   */
  keyBagIn?: 'data' | 'encrypted';
}

/**
 * A small PKCS#12 (about 1.4 KB: an RSA-1024 key and its self-signed certificate) whose iteration
 * counts are the caller's to choose, up to 2^31 − 1. Everything is made with a cheap count (2,048)
 * and the counts asked for are written in afterwards, so building costs milliseconds. A count
 * written that way is not the one the data was made with: deriving with it (what an unguarded
 * reader does, at its full cost) ends in a failed MAC or decryption, as the attack of issue 23
 * needs no valid password. The MAC is computed over the bundle as written, so with only the
 * encryption counts changed it verifies and a reader goes on to derive those. Encryption is PBES2
 * (PBKDF2 with HMAC-SHA-256, AES-256-CBC), OpenSSL 3's default.
 * @returns the DER bytes
 */
export function hostilePkcs12(options: HostilePkcs12Options = {}): Buffer {
  const password = options.password ?? 'secret';
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
  const key = pki.privateKeyFromPem(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  const cert = pki.createCertificate();
  cert.publicKey = pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString());
  cert.serialNumber = '0badc0de';
  cert.validity.notBefore = new Date(Date.now() - 86_400_000);
  cert.validity.notAfter = new Date(Date.now() + 365 * 86_400_000);
  const subject = [{ name: 'commonName', value: 'Hostile' }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.sign(key, forge.md.sha256.create());

  const oid = (name: string) => asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OID, false, asn1.oidToDer(name).getBytes());
  const seq = (items: forge.asn1.Asn1[]) => asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, items);
  const octets = (bytes: string) => asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OCTETSTRING, false, bytes);
  const integer = (value: number) => asn1.create(asn1.Class.UNIVERSAL, asn1.Type.INTEGER, false, integerBytes(value));
  const explicit0 = (item: forge.asn1.Asn1) => asn1.create(asn1.Class.CONTEXT_SPECIFIC, 0, true, [item]);
  const dataInfo = (contents: forge.asn1.Asn1) =>
    seq([oid(pki.oids.data), explicit0(octets(asn1.toDer(contents).getBytes()))]);
  /** An EncryptedPrivateKeyInfo-shaped blob of `contents` (PBES2 made with 2,048), its count then set to `count`. */
  const encrypted = (contents: forge.asn1.Asn1, count: number | undefined) => {
    const blob = pki.encryptPrivateKeyInfo(contents, password, { algorithm: 'aes256', count: 2048 });
    // AlgorithmIdentifier { pbes2, PBES2-params { keyDerivationFunc { pbkdf2, PBKDF2-params { salt, count … } } } }
    const [algorithm] = blob.value as forge.asn1.Asn1[];
    const params = (algorithm!.value as forge.asn1.Asn1[])[1]!;
    const kdf = (params.value as forge.asn1.Asn1[])[0]!;
    const pbkdf2Params = (kdf.value as forge.asn1.Asn1[])[1]!;
    (pbkdf2Params.value as forge.asn1.Asn1[])[1] = integer(count ?? 2048);
    return blob;
  };

  const certBag = seq([
    oid(pki.oids.certBag),
    explicit0(
      seq([oid(pki.oids.x509Certificate), explicit0(octets(asn1.toDer(pki.certificateToAsn1(cert)).getBytes()))]),
    ),
  ]);
  const keyBag = seq([
    oid(pki.oids.pkcs8ShroudedKeyBag),
    explicit0(encrypted(pki.wrapRsaPrivateKey(pki.privateKeyToAsn1(key)), options.keyIterations)),
  ]);
  const encryptedBags = options.keyBagIn === 'encrypted' ? [certBag, keyBag] : [certBag];
  // EncryptedData (RFC 5652 §8): the SafeContents encrypted as a PKCS#8 blob is (same PBES2 parameters).
  const [algorithm, ciphertext] = encrypted(seq(encryptedBags), options.certificatesIterations)
    .value as forge.asn1.Asn1[];
  const encryptedInfo = seq([
    oid(pki.oids.encryptedData),
    explicit0(
      seq([
        integer(0),
        seq([
          oid(pki.oids.data),
          algorithm!,
          asn1.create(asn1.Class.CONTEXT_SPECIFIC, 0, false, ciphertext!.value as string),
        ]),
      ]),
    ),
  ]);
  const safe = seq(options.keyBagIn === 'encrypted' ? [encryptedInfo] : [encryptedInfo, dataInfo(seq([keyBag]))]);

  const salt = forge.random.getBytesSync(8);
  const macKey = forge.pkcs12.generateKey(password, forge.util.createBuffer(salt), 3, 2048, 20);
  const hmac = forge.hmac.create();
  hmac.start('sha1', macKey);
  hmac.update(asn1.toDer(safe).getBytes());
  const pfx = seq([
    integer(3),
    dataInfo(safe),
    seq([
      seq([
        seq([oid(pki.oids.sha1), asn1.create(asn1.Class.UNIVERSAL, asn1.Type.NULL, false, '')]),
        octets(hmac.digest().getBytes()),
      ]),
      octets(salt),
      integer(options.macIterations ?? 2048),
    ]),
  ]);
  return Buffer.from(asn1.toDer(pfx).getBytes(), 'binary');
}

/** A positive DER INTEGER's content octets (node-forge's integerToDer stops at 32 bits signed). */
function integerBytes(value: number): string {
  let hex = value.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  if (Number.parseInt(hex.slice(0, 2), 16) >= 0x80) hex = `00${hex}`;
  return forge.util.hexToBytes(hex);
}

/** Builds a PDF from objects written as text, with a cross-reference table of their true offsets. */
class PdfText {
  private readonly parts: Buffer[] = [Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
  private length = this.parts[0]!.length;
  readonly offsets = new Map<number, number>();

  /** Appends object `number` (its body between `obj` and `endobj`). */
  object(number: number, body: string | Buffer): void {
    this.offsets.set(number, this.length);
    this.push(Buffer.concat([Buffer.from(`${number} 0 obj\n`), Buffer.from(body), Buffer.from('\nendobj\n')]));
  }

  /** Appends a stream object. */
  stream(number: number, dictionary: string, data: Buffer): void {
    this.object(
      number,
      Buffer.concat([
        Buffer.from(`<< ${dictionary} /Length ${data.length} >>\nstream\n`),
        data,
        Buffer.from('\nendstream'),
      ]),
    );
  }

  get size(): number {
    return this.length;
  }

  push(bytes: Buffer): void {
    this.parts.push(bytes);
    this.length += bytes.length;
  }

  /** The cross-reference table (its offsets shifted by `skew`, 0 for a true table), trailer and %%EOF. */
  finish(root: number, skew = 0, startxrefSkew = 0): Buffer {
    const size = [...this.offsets.keys()].reduce((max, n) => Math.max(max, n), 0) + 1;
    const start = this.length;
    let xref = `xref\n0 ${size}\n0000000000 65535 f \n`;
    for (let n = 1; n < size; n += 1) {
      const offset = this.offsets.get(n);
      xref += offset === undefined ? '0000000000 65535 f \n' : `${String(offset + skew).padStart(10, '0')} 00000 n \n`;
    }
    xref += `trailer\n<< /Size ${size} /Root ${root} 0 R >>\nstartxref\n${start + startxrefSkew}\n%%EOF\n`;
    this.push(Buffer.from(xref, 'latin1'));
    return Buffer.concat(this.parts);
  }
}

/**
 * The /tools/verify attack of issue 23: a PDF of `megabytes` (about 30) holding `signatures`
 * (about 50) signature fields whose /ByteRange each ends early, at a different place near the
 * start of the file — so each signature's "what changed after signing" looks at a different
 * revision and at nearly the whole file after it — and whose final cross-reference table is broken
 * (its offsets and startxref point into nothing), so every opening of the file makes mupdf repair
 * it by scanning all of it. The bulk is one stream of text that looks like object headers
 * (`12 0 obj`), which the old per-signature scan matched one by one. /Contents are zeros: no
 * signature verifies, as none needs to for the attack.
 * @returns the PDF's bytes
 */
export function signatureFieldsPdf(options: { signatures?: number; megabytes?: number } = {}): Buffer {
  const signatures = options.signatures ?? 50;
  const bytes = Math.round((options.megabytes ?? 30) * 1024 * 1024);
  const pdf = new PdfText();
  const fields = Array.from({ length: signatures }, (_v, i) => 10 + 2 * i);
  const references = fields.map((f) => `${f} 0 R`).join(' ');
  pdf.object(1, `<< /Type /Catalog /Pages 2 0 R /AcroForm << /Fields [${references}] >> >>`);
  pdf.object(2, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>');
  pdf.object(3, `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Annots [${references}] >>`);
  pdf.stream(4, '', Buffer.from('BT /F1 12 Tf 72 720 Td (Signed) Tj ET'));
  // Each signature's revision ends at a different byte just after the page: a readable prefix.
  const base = pdf.size;
  for (const [i, field] of fields.entries()) {
    const end = base + i;
    pdf.object(
      field,
      `<< /FT /Sig /T (Signature ${i + 1}) /Type /Annot /Subtype /Widget /Rect [0 0 0 0] /P 3 0 R ` +
        `/V ${field + 1} 0 R >>`,
    );
    pdf.object(
      field + 1,
      '<< /Type /Sig /Filter /Adobe.PPKLite /SubFilter /adbe.pkcs7.detached ' +
        `/ByteRange [0 ${end - 20} ${end - 10} 10] /Contents <${'0'.repeat(512)}> >>`,
    );
  }
  const filler = fields.at(-1)! + 2;
  const line = Buffer.from(`${filler} 0 obj 7 0 obj 1 0 obj 99 0 obj endobj ${'x'.repeat(40)}\n`);
  const count = Math.max(1, Math.floor((bytes - pdf.size) / line.length));
  pdf.stream(filler, '', Buffer.concat(Array.from({ length: count }, () => line)));
  // Offsets off by 7 and a startxref into the filler: mupdf finds neither and repairs.
  return pdf.finish(1, 7, -Math.floor(bytes / 2));
}

/**
 * The /tools/merge attack of issue 23: a PDF of `pages` pages that all draw the same content
 * stream of `streamKilobytes` (about 600 KB of path operators). Grafting its pages one by one
 * copies the stream once per page; 50 such files of 40 pages (1.2 GB of copies) or 2 of 1,000
 * pages stay within the merge's 50-file and 2,000-page limits.
 * @returns the PDF's bytes (about `streamKilobytes` KB)
 */
export function sharedContentPdf(options: { pages?: number; streamKilobytes?: number } = {}): Buffer {
  const pages = options.pages ?? 40;
  const size = Math.round((options.streamKilobytes ?? 600) * 1024);
  const pdf = new PdfText();
  const kids = Array.from({ length: pages }, (_v, i) => 10 + i);
  pdf.object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  pdf.object(2, `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(' ')}] /Count ${pages} >>`);
  const unit = '72 72 m 540 720 l 540 72 l 72 720 l h S\n';
  pdf.stream(3, '', Buffer.from(unit.repeat(Math.ceil(size / unit.length)).slice(0, size)));
  for (const kid of kids) pdf.object(kid, '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R >>');
  return pdf.finish(1);
}

/**
 * A one-page PDF whose content stream inflates from about `megabytes` KB to `megabytes` MB of
 * spaces (deflate's ~1,000:1), which mupdf inflates and reads through whenever it interprets the
 * page (text-tag scan, preview): ~0.6 s per 100 MB here, in bounded memory (it streams). 2,000 MB
 * fits a 2 MB upload and outlasts any sane time limit; 200 MB makes a task of a second or so.
 * The stream is one compressed megabyte repeated (a deflate block ended by a sync flush can be
 * followed by another), closed by an empty final block; it has no Adler-32, which readers forgive.
 * @returns the PDF's bytes
 */
export function whitespaceBombPdf(options: { megabytes?: number } = {}): Buffer {
  const megabytes = options.megabytes ?? 2000;
  const block = zlib.deflateRawSync(Buffer.alloc(1024 * 1024, 0x20), {
    level: 9,
    finishFlush: zlib.constants.Z_SYNC_FLUSH,
  });
  const zlibHeader = Buffer.from([0x78, 0xda]);
  const finalBlock = Buffer.from([0x03, 0x00]);
  const data = Buffer.concat([zlibHeader, ...Array.from({ length: megabytes }, () => block), finalBlock]);
  const pdf = new PdfText();
  pdf.object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  pdf.object(2, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>');
  pdf.object(3, '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>');
  pdf.stream(4, '/Filter /FlateDecode', data);
  return pdf.finish(1);
}

/**
 * A one-page PDF 100 × 1,400 points: its preview, 1,400 pixels wide, is 19,600 pixels tall (just
 * under the 20,000 Signet renders), an 82 MB pixmap — over a parse pool of PARSE_MEMORY_MB=64.
 * @returns the PDF's bytes
 */
export function tallPagePdf(): Buffer {
  const pdf = new PdfText();
  pdf.object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  pdf.object(2, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>');
  pdf.object(3, '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 1400] /Contents 4 0 R >>');
  pdf.stream(4, '', Buffer.from('10 10 m 90 1390 l S'));
  return pdf.finish(1);
}

/**
 * A one-page PDF holding `objects` small arrays besides its page (about 55 bytes each, with its
 * cross-reference table): 200,000 make 11 MB that pdf-lib, which reads every object into
 * JavaScript, cannot read in a 64 MB heap (PARSE_MEMORY_MB=64), while mupdf reads them lazily.
 * @returns the PDF's bytes
 */
export function manyObjectsPdf(options: { objects?: number } = {}): Buffer {
  const objects = options.objects ?? 200_000;
  const pdf = new PdfText();
  pdf.object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  pdf.object(2, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>');
  pdf.object(3, '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>');
  for (let n = 4; n < objects + 4; n += 1) pdf.object(n, '[1 2 3 4 5 6 7 8]');
  return pdf.finish(1);
}
