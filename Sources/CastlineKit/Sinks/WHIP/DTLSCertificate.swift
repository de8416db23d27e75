import Crypto
import Foundation

/// The DTLS certificate a WebRTC connection presents: ECDSA P-256, self-signed, as browsers make
/// theirs. webrtcbin 1.22 makes RSA-2048, and stacks that offer only ECDHE-ECDSA suites (aiortc,
/// and others) then find no shared cipher. The far end checks it against the SDP's
/// `a=fingerprint`, which is the certificate's own SHA-256 (`fingerprint`).
///
/// Built here as DER (a dozen fields) on swift-crypto's P-256, rather than with
/// swift-certificates, whose build would add a minute to a first build.
struct DTLSCertificate: Sendable {
    /// Certificate and private key, PEM, as GStreamer's DTLS elements take them (`pem`).
    let pem: String
    /// `sha-256 AB:CD:…` of the certificate's DER, as `a=fingerprint` writes it.
    let fingerprint: String

    init(commonName: String = "castline", now: Date = Date()) throws {
        let key = P256.Signing.PrivateKey()
        let signatureAlgorithm = DER.sequence(DER.oid([0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02]))  // ecdsa-with-SHA256
        let name = DER.sequence(DER.tag(0x31, DER.sequence(DER.oid([0x55, 0x04, 0x03]), DER.tag(0x0C, Array(commonName.utf8)))))
        var serial = (0..<8).map { _ in UInt8.random(in: 0...255) }
        serial[0] = serial[0] & 0x7F | 0x01
        let tbs = DER.sequence(
            DER.tag(0xA0, DER.tag(0x02, [0x02])),  // version 3
            DER.tag(0x02, serial),
            signatureAlgorithm,
            name,
            DER.sequence(DER.utcTime(now.addingTimeInterval(-86_400)), DER.utcTime(now.addingTimeInterval(30 * 86_400))),
            name,
            Array(key.publicKey.derRepresentation))
        let signature = try key.signature(for: Data(tbs)).derRepresentation
        let certificate = DER.sequence(tbs, signatureAlgorithm, DER.tag(0x03, [0] + Array(signature)))
        let base64 = Data(certificate).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        pem = "-----BEGIN CERTIFICATE-----\n\(base64)\n-----END CERTIFICATE-----\n" + key.pemRepresentation + "\n"
        fingerprint = "sha-256 " + SHA256.hash(data: Data(certificate)).map { String(format: "%02X", $0) }.joined(separator: ":")
    }

    /// `sdp` with every `a=fingerprint` line saying this certificate's: webrtcbin 1.22 hashes a
    /// PEM given to it whole (certificate and key), which no far end would accept.
    func stamp(_ sdp: String) -> String {
        sdp.components(separatedBy: "\r\n").map { $0.hasPrefix("a=fingerprint:") ? "a=fingerprint:\(fingerprint)" : $0 }
            .joined(separator: "\r\n")
    }
}

/// The few DER encodings a certificate needs.
enum DER {
    static func tag(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var length: [UInt8] = []
        if content.count < 0x80 {
            length = [UInt8(content.count)]
        } else {
            var count = content.count
            while count > 0 { length.insert(UInt8(count & 0xFF), at: 0); count >>= 8 }
            length.insert(0x80 | UInt8(length.count), at: 0)
        }
        return [tag] + length + content
    }

    static func sequence(_ parts: [UInt8]...) -> [UInt8] { tag(0x30, parts.flatMap { $0 }) }
    static func oid(_ encoded: [UInt8]) -> [UInt8] { tag(0x06, encoded) }

    static func utcTime(_ date: Date) -> [UInt8] {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyMMddHHmmss'Z'"
        return tag(0x17, Array(formatter.string(from: date).utf8))
    }
}
