import Foundation
import LocalIngest
import Testing
@testable import CastlineKit

/// The certificate castline's WebRTC connections present, judged by OpenSSL.
@Suite("the DTLS certificate of a WebRTC publish")
struct DTLSCertificateTests {
    @Test("ECDSA P-256, self-signed and valid now, its key its own: OpenSSL reads it, and its SHA-256 is the SDP's fingerprint")
    func opensslAgrees() async throws {
        let certificate = try DTLSCertificate()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("dtls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pem = folder.appendingPathComponent("cert.pem").path
        try certificate.pem.write(toFile: pem, atomically: true, encoding: .utf8)

        let text = try await ChildProcess.run("openssl", ["x509", "-in", pem, "-noout", "-text"])
        #expect(text.status == 0, "\(text.stderr)")
        for wanted in ["Signature Algorithm: ecdsa-with-SHA256", "Public Key Algorithm: id-ecPublicKey", "ASN1 OID: prime256v1",
                       "Issuer: CN = castline", "Subject: CN = castline", "Version: 3"] {
            #expect(text.stdout.contains(wanted), "\(wanted) in \(text.stdout)")
        }
        // Self-signed: it verifies against itself, which also checks its dates and signature.
        let verify = try await ChildProcess.run("openssl", ["verify", "-CAfile", pem, pem])
        #expect(verify.stdout.contains(": OK"), "\(verify.stdout) \(verify.stderr)")
        let fingerprint = try await ChildProcess.run("openssl", ["x509", "-in", pem, "-noout", "-fingerprint", "-sha256"])
        let theirs = fingerprint.stdout.split(separator: "=").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(certificate.fingerprint == "sha-256 " + (theirs ?? ""), "\(fingerprint.stdout)")
        let fromKey = try await ChildProcess.run("openssl", ["pkey", "-in", pem, "-pubout"])
        let fromCertificate = try await ChildProcess.run("openssl", ["x509", "-in", pem, "-noout", "-pubkey"])
        #expect(!fromKey.stdout.isEmpty && fromKey.stdout == fromCertificate.stdout, "the key is the certificate's")
    }

    @Test("every a=fingerprint line of an offer says the certificate's own, the rest unchanged")
    func stamp() throws {
        let certificate = try DTLSCertificate()
        let offer = "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=fingerprint:sha-256 00:11\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n"
            + "a=fingerprint:sha-256 22:33\r\na=setup:actpass\r\n"
        let stamped = certificate.stamp(offer)
        #expect(stamped == offer.replacingOccurrences(of: "a=fingerprint:sha-256 00:11", with: "a=fingerprint:\(certificate.fingerprint)")
            .replacingOccurrences(of: "a=fingerprint:sha-256 22:33", with: "a=fingerprint:\(certificate.fingerprint)"))
    }
}
