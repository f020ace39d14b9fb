// A second, independent verifier of Signet's PAdES signatures (issue 17): Apache PDFBox reads the
// PDF (signature dictionaries, byte ranges, the DSS) and Bouncy Castle checks the CMS signatures,
// the RFC 3161 tokens and the certificate paths with the DSS's CRLs (java.security PKIX), none of
// it Signet's code. Debian packages (.ci/run): libpdfbox2-java, libbcprov-java, libbcpkix-java,
// libbcutil-java and a JDK (the file runs as a single-file source program: `java -cp … PadesVerifier.java`).
//
// Usage: java -cp <jars> PadesVerifier.java --anchor <cert.der|pem> ... <file.pdf> ...
// Prints one JSON object per file, one per line (test/helpers/pades-verifier.ts reads them).
import java.io.ByteArrayInputStream;
import java.io.File;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.security.Security;
import java.security.cert.*;
import java.util.*;
import org.apache.pdfbox.cos.*;
import org.apache.pdfbox.pdmodel.PDDocument;
import org.apache.pdfbox.pdmodel.interactive.digitalsignature.PDSignature;
import org.bouncycastle.asn1.ASN1Encodable;
import org.bouncycastle.asn1.cms.Attribute;
import org.bouncycastle.asn1.cms.AttributeTable;
import org.bouncycastle.asn1.pkcs.PKCSObjectIdentifiers;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cms.*;
import org.bouncycastle.cms.jcajce.JcaSimpleSignerInfoVerifierBuilder;
import org.bouncycastle.jce.provider.BouncyCastleProvider;
import org.bouncycastle.tsp.TimeStampToken;
import org.bouncycastle.util.Store;

public class PadesVerifier {
  static final CertificateFactory X509;

  static {
    try {
      X509 = CertificateFactory.getInstance("X.509");
    } catch (Exception e) {
      throw new RuntimeException(e);
    }
  }

  public static void main(String[] args) throws Exception {
    Security.addProvider(new BouncyCastleProvider());
    List<X509Certificate> anchors = new ArrayList<>();
    List<String> files = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--anchor")) anchors.add((X509Certificate) X509.generateCertificate(new ByteArrayInputStream(Files.readAllBytes(new File(args[++i]).toPath()))));
      else files.add(args[i]);
    }
    for (String file : files) {
      try {
        System.out.println(verify(new File(file), anchors));
      } catch (Exception e) {
        System.out.println("{\"file\":" + q(file) + ",\"error\":" + q(e.toString()) + "}");
      }
    }
  }

  static String verify(File file, List<X509Certificate> anchors) throws Exception {
    byte[] pdf = Files.readAllBytes(file.toPath());
    StringBuilder out = new StringBuilder();
    out.append("{\"file\":").append(q(file.getPath()));
    try (PDDocument doc = PDDocument.load(pdf)) {
      // The DSS: certificates and CRLs, as a verifier finds them without the network.
      List<X509Certificate> dssCerts = new ArrayList<>();
      List<X509CRL> dssCrls = new ArrayList<>();
      Set<String> vriKeys = new HashSet<>();
      int ocsps = 0;
      boolean crlsValid = true;
      boolean certsValid = true;
      COSDictionary dss = doc.getDocumentCatalog().getCOSObject().getCOSDictionary(COSName.getPDFName("DSS"));
      if (dss != null) {
        for (byte[] bytes : streams(dss, "Certs")) {
          try {
            dssCerts.add((X509Certificate) X509.generateCertificate(new ByteArrayInputStream(bytes)));
          } catch (Exception e) {
            certsValid = false;
          }
        }
        for (byte[] bytes : streams(dss, "CRLs")) {
          try {
            dssCrls.add((X509CRL) X509.generateCRL(new ByteArrayInputStream(bytes)));
          } catch (Exception e) {
            crlsValid = false;
          }
        }
        ocsps = streams(dss, "OCSPs").size();
        COSDictionary vri = dss.getCOSDictionary(COSName.getPDFName("VRI"));
        if (vri != null) for (COSName key : vri.keySet()) vriKeys.add(key.getName());
        // Each CRL must be signed by its issuer, found among the DSS certificates or the anchors.
        List<X509Certificate> pool = new ArrayList<>(dssCerts);
        pool.addAll(anchors);
        for (X509CRL crl : dssCrls) {
          boolean signed = false;
          for (X509Certificate issuer : pool) {
            if (!issuer.getSubjectX500Principal().equals(crl.getIssuerX500Principal())) continue;
            try {
              crl.verify(issuer.getPublicKey());
              signed = true;
            } catch (Exception e) {
              // another key of the same name
            }
          }
          crlsValid &= signed;
        }
      }
      out.append(",\"dss\":").append(dss == null ? "null" : "{\"certs\":" + dssCerts.size() + ",\"crls\":" + dssCrls.size() + ",\"ocsps\":" + ocsps + ",\"vri\":" + vriKeys.size() + ",\"crlsValid\":" + crlsValid + ",\"certsValid\":" + certsValid + "}");
      out.append(",\"signatures\":[");
      boolean first = true;
      for (PDSignature signature : doc.getSignatureDictionaries()) {
        if (!first) out.append(',');
        first = false;
        out.append(verifySignature(pdf, signature, anchors, dssCerts, dssCrls, vriKeys));
      }
      out.append(']');
    }
    return out.append('}').toString();
  }

  static List<byte[]> streams(COSDictionary dss, String key) throws Exception {
    List<byte[]> found = new ArrayList<>();
    COSArray array = dss.getCOSArray(COSName.getPDFName(key));
    if (array == null) return found;
    for (int i = 0; i < array.size(); i++) {
      COSBase item = array.getObject(i);
      if (item instanceof COSStream) {
        try (java.io.InputStream in = ((COSStream) item).createInputStream()) {
          found.add(in.readAllBytes());
        }
      }
    }
    return found;
  }

  static String verifySignature(byte[] pdf, PDSignature signature, List<X509Certificate> anchors, List<X509Certificate> dssCerts, List<X509CRL> dssCrls, Set<String> vriKeys) throws Exception {
    StringBuilder out = new StringBuilder("{");
    String subFilter = signature.getSubFilter();
    int[] range = signature.getByteRange();
    byte[] contents = signature.getContents(pdf);
    byte[] signed = signature.getSignedContent(pdf);
    out.append("\"name\":").append(q(signature.getName() == null ? "" : signature.getName()));
    out.append(",\"subFilter\":").append(q(subFilter));
    out.append(",\"coversToEnd\":").append(range[2] + range[3] == pdf.length);
    out.append(",\"vri\":").append(vriKeys.contains(hex(MessageDigest.getInstance("SHA-1").digest(contents))));
    byte[] der = trimmed(contents);
    if ("ETSI.RFC3161".equals(subFilter)) {
      TimeStampToken token = new TimeStampToken(new CMSSignedData(der));
      out.append(",\"timestamp\":").append(token(token, MessageDigest.getInstance("SHA-256").digest(signed), anchors, dssCerts, dssCrls));
      return out.append('}').toString();
    }
    CMSSignedData cms = new CMSSignedData(new CMSProcessableByteArray(signed), der);
    SignerInformation signer = cms.getSignerInfos().getSigners().iterator().next();
    X509CertificateHolder holder = (X509CertificateHolder) cms.getCertificates().getMatches(signer.getSID()).iterator().next();
    X509Certificate certificate = new JcaX509CertificateConverter().setProvider("BC").getCertificate(holder);
    boolean valid;
    String error = null;
    try {
      valid = signer.verify(new JcaSimpleSignerInfoVerifierBuilder().setProvider("BC").build(holder));
    } catch (Exception e) {
      valid = false;
      error = e.toString();
    }
    AttributeTable signedAttributes = signer.getSignedAttributes();
    out.append(",\"cmsValid\":").append(valid);
    if (error != null) out.append(",\"cmsError\":").append(q(error));
    out.append(",\"signer\":").append(q(certificate.getSubjectX500Principal().getName()));
    out.append(",\"signingCertificateV2\":").append(signedAttributes.get(PKCSObjectIdentifiers.id_aa_signingCertificateV2) != null);
    out.append(",\"signingTimeAttribute\":").append(signedAttributes.get(PKCSObjectIdentifiers.pkcs_9_at_signingTime) != null);
    AttributeTable unsigned = signer.getUnsignedAttributes();
    Attribute stamp = unsigned == null ? null : unsigned.get(PKCSObjectIdentifiers.id_aa_signatureTimeStampToken);
    if (stamp != null) {
      ASN1Encodable value = stamp.getAttrValues().getObjectAt(0);
      TimeStampToken token = new TimeStampToken(new CMSSignedData(value.toASN1Primitive().getEncoded()));
      out.append(",\"timestamp\":").append(token(token, MessageDigest.getInstance("SHA-256").digest(signer.getSignature()), anchors, dssCerts, dssCrls));
    } else {
      out.append(",\"timestamp\":null");
    }
    List<X509Certificate> pool = new ArrayList<>(dssCerts);
    for (X509CertificateHolder h : (Collection<X509CertificateHolder>) cms.getCertificates().getMatches(null)) pool.add(new JcaX509CertificateConverter().setProvider("BC").getCertificate(h));
    out.append(",\"chain\":").append(path(certificate, pool, anchors, dssCrls));
    return out.append('}').toString();
  }

  /** Checks a token: its signature with the TSA's certificate, its imprint, and the TSA's path with the DSS's CRLs. */
  static String token(TimeStampToken token, byte[] expectedImprint, List<X509Certificate> anchors, List<X509Certificate> dssCerts, List<X509CRL> dssCrls) throws Exception {
    StringBuilder out = new StringBuilder("{");
    Store<X509CertificateHolder> store = token.getCertificates();
    Collection<X509CertificateHolder> matches = store.getMatches(token.getSID());
    boolean valid = false;
    String error = null;
    X509Certificate tsa = null;
    if (matches.isEmpty()) error = "no TSA certificate in the token";
    else {
      X509CertificateHolder holder = matches.iterator().next();
      tsa = new JcaX509CertificateConverter().setProvider("BC").getCertificate(holder);
      try {
        token.validate(new JcaSimpleSignerInfoVerifierBuilder().setProvider("BC").build(holder));
        valid = true;
      } catch (Exception e) {
        error = e.toString();
      }
    }
    out.append("\"valid\":").append(valid);
    if (error != null) out.append(",\"error\":").append(q(error));
    out.append(",\"imprintMatches\":").append(Arrays.equals(token.getTimeStampInfo().getMessageImprintDigest(), expectedImprint));
    out.append(",\"genTime\":").append(q(token.getTimeStampInfo().getGenTime().toInstant().toString()));
    out.append(",\"tsa\":").append(tsa == null ? "null" : q(tsa.getSubjectX500Principal().getName()));
    if (tsa != null) {
      List<X509Certificate> pool = new ArrayList<>(dssCerts);
      for (X509CertificateHolder h : store.getMatches(null)) pool.add(new JcaX509CertificateConverter().setProvider("BC").getCertificate(h));
      out.append(",\"chain\":").append(path(tsa, pool, anchors, dssCrls));
    }
    return out.append('}').toString();
  }

  /**
   * A PKIX path from the certificate to one of the anchors, now, its revocation checked with the DSS's CRLs only
   * (issued after the timestamp, a CRL that does not list a certificate shows it was not revoked when it signed).
   */
  static String path(X509Certificate target, List<X509Certificate> pool, List<X509Certificate> anchors, List<X509CRL> crls) {
    try {
      Set<TrustAnchor> trust = new HashSet<>();
      for (X509Certificate anchor : anchors) trust.add(new TrustAnchor(anchor, null));
      List<Object> material = new ArrayList<>(pool);
      material.addAll(crls);
      CertStore store = CertStore.getInstance("Collection", new CollectionCertStoreParameters(material));
      java.security.cert.X509CertSelector selector = new java.security.cert.X509CertSelector();
      selector.setCertificate(target);
      PKIXBuilderParameters parameters = new PKIXBuilderParameters(trust, selector);
      parameters.addCertStore(store);
      parameters.setRevocationEnabled(true);
      CertPathBuilderResult built = CertPathBuilder.getInstance("PKIX").build(parameters);
      return "{\"valid\":true,\"length\":" + built.getCertPath().getCertificates().size() + "}";
    } catch (Exception e) {
      return "{\"valid\":false,\"error\":" + q(e.toString()) + "}";
    }
  }

  /** The CMS without the /Contents zero padding: the bytes its outer DER header says it has. */
  static byte[] trimmed(byte[] contents) {
    int first = contents[1] & 0xff;
    if (first == 0x80) return contents; // indefinite length: BER readers stop at its end themselves
    int length = first;
    int header = 2;
    if ((first & 0x80) != 0) {
      length = 0;
      for (int i = 0; i < (first & 0x7f); i++) length = (length << 8) | (contents[2 + i] & 0xff);
      header += first & 0x7f;
    }
    return Arrays.copyOf(contents, header + length);
  }

  static String hex(byte[] bytes) {
    StringBuilder out = new StringBuilder();
    for (byte b : bytes) out.append(String.format("%02X", b));
    return out.toString();
  }

  static String q(String text) {
    if (text == null) return "null";
    StringBuilder out = new StringBuilder("\"");
    for (char c : text.toCharArray()) {
      if (c == '"' || c == '\\') out.append('\\').append(c);
      else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
      else out.append(c);
    }
    return out.append('"').toString();
  }
}
