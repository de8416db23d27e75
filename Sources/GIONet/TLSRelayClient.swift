import CGStreamer
import CGStreamerShim
import Foundation
import GLibSupport

/// How a TLS server certificate is judged (`--ca-file`, `--fingerprint`, ...).
public enum TLSTrust: Sendable, Equatable {
    /// The system CA store (g_tls_backend_get_default_database).
    case system
    /// Only the CAs in this PEM file (not the system ones: pinning the private CA is the point).
    case caFile(String)
    /// SHA-256 of the server's leaf certificate DER: "AB:CD:..." or "abcd..." (case-insensitive).
    case fingerprint(String)
    /// No validation at all.
    case insecure
}

// MARK: - Client TLS set-up shared by TLSRelay.check, fetchFingerprint and the relay
//
// How it is done, and why: a plain GSocketClient connects, then g_tls_client_connection_new wraps the
// connection and g_tls_connection_handshake(_async) runs the handshake. This is simpler than
// g_socket_client_set_tls + the "event" signal: we hold the GTlsClientConnection directly, configure it
// before the handshake and read the peer certificate afterwards, the same way for blocking and async use.
//
// Trust, as glib-networking 2.74 (GnuTLS) does it (verified by the tests):
// - system: the connection's default database is the backend's default (system store); nothing to set.
// - caFile: g_tls_connection_set_database(GTlsFileDatabase of the file): only those anchors count.
// - fingerprint / insecure / fetch: the database is set to NULL, which makes glib-networking always flag
//   G_TLS_CERTIFICATE_UNKNOWN_CA and so always emit "accept-certificate" — the one place the certificate
//   is seen during the handshake. The handler accepts when the SHA-256 matches (or always, for insecure).
//   The pin is checked again on the peer certificate after the handshake.
// The validation-flags property (deprecated in GLib 2.74, though glib-networking 2.74 still honours it:
// flags 0 lets an unknown-CA handshake succeed) is not touched: "accept-certificate" alone decides.
// Verified here: the signal gets the GTlsCertificateFlags (0x1 = unknown CA for the ingest's private CA, 0x2
// with --ca-file and a wrong server name), returning FALSE fails the handshake with G_TLS_ERROR_BAD_CERTIFICATE
// "Unacceptable TLS certificate", and g_tls_connection_get_peer_certificate_errors still reports the flags.
// For system/caFile, "accept-certificate" is still connected (returning FALSE) to record which
// GTlsCertificateFlags failed, for the message.

/// What the certificate must satisfy, with the fingerprint already normalized.
enum CertificatePolicy: Sendable, Equatable {
    case system
    case caFile(String)
    case pin(String)   // "AB:CD:..."
    case acceptAny     // insecure, and fetchFingerprint

    init(_ trust: TLSTrust) throws(GIONetError) {
        switch trust {
        case .system: self = .system
        case .caFile(let path): self = .caFile(path)
        case .insecure: self = .acceptAny
        case .fingerprint(let text):
            guard let pin = TLSFingerprint.normalize(text) else {
                throw GIONetError("invalid fingerprint \"\(text)\": expected the 64 hex digits of a SHA-256, e.g. AB:CD:... (check --fingerprint)")
            }
            self = .pin(pin)
        }
    }
}

enum TLSFingerprint {
    /// "AB:CD:..." from "AB:CD:...", "ab:cd:..." or "abcd..." (colons and spaces ignored); nil unless 64 hex digits.
    static func normalize(_ text: String) -> String? {
        let hex = text.filter { $0 != ":" && !$0.isWhitespace }.uppercased()
        guard hex.count == 64, hex.allSatisfy({ $0.isHexDigit && $0.isASCII }) else { return nil }
        return colonized(hex)
    }

    static func colonized(_ hex: String) -> String {
        var out = ""
        for (index, character) in hex.uppercased().enumerated() {
            if index > 0 && index % 2 == 0 { out.append(":") }
            out.append(character)
        }
        return out
    }

    /// SHA-256 of a GTlsCertificate's DER ("certificate" property, a GByteArray), as "AB:CD:...".
    static func of(certificate: gpointer) -> String? {
        guard castline_is_a(certificate, g_tls_certificate_get_type()) != 0 else { return nil }
        var value = GValue()
        g_value_init(&value, g_byte_array_get_type())
        defer { g_value_unset(&value) }
        g_object_get_property(certificate.assumingMemoryBound(to: GObject.self), "certificate", &value)
        guard let boxed = g_value_get_boxed(&value) else { return nil }
        let array = boxed.assumingMemoryBound(to: GByteArray.self)
        guard let data = array.pointee.data, array.pointee.len > 0 else { return nil }
        guard let hex = takeString(g_compute_checksum_for_data(G_CHECKSUM_SHA256, data, gsize(array.pointee.len))) else { return nil }
        return colonized(hex)
    }
}

/// GTlsCertificateFlags as words for a message.
enum CertificateProblems {
    static func words(_ flags: UInt32) -> [String] {
        let names: [(GTlsCertificateFlags, String)] = [
            (G_TLS_CERTIFICATE_UNKNOWN_CA, "unknown CA"),
            (G_TLS_CERTIFICATE_BAD_IDENTITY, "bad identity"),
            (G_TLS_CERTIFICATE_NOT_ACTIVATED, "not activated yet"),
            (G_TLS_CERTIFICATE_EXPIRED, "expired"),
            (G_TLS_CERTIFICATE_REVOKED, "revoked"),
            (G_TLS_CERTIFICATE_INSECURE, "insecure algorithm"),
            (G_TLS_CERTIFICATE_GENERIC_ERROR, "generic error"),
        ]
        return names.filter { flags & $0.0.rawValue != 0 }.map(\.1)
    }
}

/// What one handshake saw. "accept-certificate" runs on GIO's TLS handshake thread (sync handshake) or on the
/// relay thread (async), and the result is read afterwards on the caller's thread.
final class HandshakeWatch: Sendable {
    let policy: CertificatePolicy
    private let seen = Protected<(errors: UInt32, fingerprint: String?)>((0, nil))
    init(policy: CertificatePolicy) { self.policy = policy }

    var errors: UInt32 { seen.withLock { $0.errors } }
    var fingerprint: String? { seen.withLock { $0.fingerprint } }

    /// The "accept-certificate" decision.
    func accept(certificate: gpointer?, errors: UInt32) -> Bool {
        let fingerprint = certificate.flatMap { TLSFingerprint.of(certificate: $0) }
        seen.withLock { $0 = (errors, fingerprint) }
        switch policy {
        case .system, .caFile: return false
        case .acceptAny: return true
        case .pin(let expected): return fingerprint == expected
        }
    }
}

private typealias AcceptCertificateSignal = @convention(c) (gpointer?, gpointer?, UInt32, gpointer?) -> gboolean
private let acceptCertificateTrampoline: AcceptCertificateSignal = { _, certificate, errors, data in
    guard let data else { return 0 }
    return Unmanaged<HandshakeWatch>.fromOpaque(data).takeUnretainedValue().accept(certificate: certificate, errors: errors) ? 1 : 0
}
private let releaseHandshakeWatch: GClosureNotify = { data, _ in
    guard let data else { return }
    Unmanaged<HandshakeWatch>.fromOpaque(data).release()
}

/// One TLS target: where, which name, which trust; holds the CA file's database.
final class TLSClientSetup: @unchecked Sendable {  // immutable after init; a GTlsDatabase may be used from any thread
    let host: String
    let port: Int
    let serverName: String
    let policy: CertificatePolicy
    private let database: UnsafeMutablePointer<GTlsDatabase>?

    init(host: String, port: Int, serverName: String?, policy: CertificatePolicy) throws(GIONetError) {
        guard !host.isEmpty else { throw GIONetError("no TLS server host given") }
        guard (1...65535).contains(port) else { throw GIONetError("invalid TLS server port \(port)") }
        self.host = host
        self.port = port
        self.serverName = (serverName?.isEmpty == false ? serverName : nil) ?? host
        self.policy = policy
        if case .caFile(let path) = policy {
            var error: UnsafeMutablePointer<GError>?
            let made = g_tls_file_database_new(path, &error)
            if let error {
                let message = error.pointee.message.map { String(cString: $0) } ?? "unreadable"
                g_error_free(error)
                if let made { g_object_unref(made) }
                throw GIONetError("cannot use CA file \(path): \(message) (give a PEM file with --ca-file)")
            }
            guard let made else { throw GIONetError("cannot use CA file \(path) (give a PEM file with --ca-file)") }
            database = made
        } else {
            database = nil
        }
    }

    deinit { if let database { g_object_unref(database) } }

    /// "host:port" for messages.
    var label: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// A new GSocketConnectable for the remote host (transfer full).
    func makeConnectable() -> OpaquePointer? { g_network_address_new(host, guint16(port)) }

    /// A GTlsClientConnection over `base` (transfer full), set up for the policy; `watch` records the handshake.
    ///
    /// No TLS session resumption, on purpose: glib-networking 2.74 keeps TLS 1.3 session tickets in a
    /// process-wide cache keyed by "address/server name/port/client certificate", and a resumed handshake
    /// skips certificate verification entirely (no "accept-certificate", whatever database is set). So after
    /// a relayed connection under one trust, a check() or relay under another trust (e.g. `.system` after
    /// `.insecure`) to the same server would pass unverified — verified on this machine. glib-networking
    /// only computes that key when the base stream is a GSocketConnection; wrapping the connection's own
    /// streams in a GSimpleIOStream leaves it without one, so every handshake is a full, verified one.
    /// The socket itself stays owned (and closed) by the caller's GSocketConnection.
    func wrap(_ connection: UnsafeMutablePointer<GSocketConnection>, watch: HandshakeWatch) throws(GIONetError) -> UnsafeMutablePointer<GIOStream> {
        let stream = cast(connection, to: GIOStream.self)
        guard let base = g_simple_io_stream_new(g_io_stream_get_input_stream(stream), g_io_stream_get_output_stream(stream)) else {
            throw GIONetError("cannot start TLS to \(label)")
        }
        defer { g_object_unref(base) }
        let identity = g_network_address_new(serverName, guint16(port))
        defer { if let identity { g_object_unref(UnsafeMutableRawPointer(identity)) } }
        var error: UnsafeMutablePointer<GError>?
        let made = g_tls_client_connection_new(base, identity, &error)
        if let error {
            let message = takeError(error)
            if let made { g_object_unref(made) }
            throw GIONetError("cannot start TLS to \(label): \(message) (is glib-networking installed?)")
        }
        guard let tls = made else { throw GIONetError("cannot start TLS to \(label) (is glib-networking installed?)") }
        let connection = cast(tls, to: GTlsConnection.self)
        switch policy {
        case .system: break
        case .caFile: g_tls_connection_set_database(connection, database)
        case .pin, .acceptAny: g_tls_connection_set_database(connection, nil)
        }
        let data = Unmanaged.passRetained(watch).toOpaque()
        g_signal_connect_data(tls, "accept-certificate", unsafeBitCast(acceptCertificateTrampoline, to: GCallback.self),
                              data, releaseHandshakeWatch, GConnectFlags(rawValue: 0))
        return tls
    }

    /// nil when the handshake succeeded and the certificate is acceptable; else the line for the user.
    /// `error` is the handshake's GError (borrowed).
    func verdict(tls: UnsafeMutablePointer<GIOStream>, error: UnsafeMutablePointer<GError>?, watch: HandshakeWatch) -> String? {
        if let error, error.pointee.domain == g_io_error_quark(), error.pointee.code == gint(G_IO_ERROR_CANCELLED.rawValue) {
            return "TLS connection to \(label) cancelled"
        }
        let seenFingerprint = watch.fingerprint ?? peerFingerprint(tls)
        if case .pin(let expected) = policy {
            if let seenFingerprint, seenFingerprint != expected {
                return "certificate fingerprint mismatch: server has \(seenFingerprint), expected \(expected) (check --fingerprint)"
            }
            if error == nil && seenFingerprint == nil {
                return "TLS server \(label) sent no certificate to compare with --fingerprint"
            }
        }
        guard let error else { return nil }
        let message = error.pointee.message.map { String(cString: $0) } ?? "handshake failed"
        let flags = watch.errors
        let badCertificate = error.pointee.domain == g_tls_error_quark() && error.pointee.code == gint(G_TLS_ERROR_BAD_CERTIFICATE.rawValue)
        if flags != 0 || badCertificate {
            return untrusted(flags: flags, detail: message)
        }
        if error.pointee.domain == g_io_error_quark(), error.pointee.code == gint(G_IO_ERROR_TIMED_OUT.rawValue) {
            return "TLS handshake with \(label) timed out (check that it is an RTMPS port and the server is up)"
        }
        return "TLS handshake with \(label) failed: \(message) (check that it is an RTMPS/TLS port)"
    }

    func untrusted(flags: UInt32, detail: String) -> String {
        let words = CertificateProblems.words(flags)
        let what = words.isEmpty ? detail : words.joined(separator: ", ")
        let hint: String
        if flags & G_TLS_CERTIFICATE_UNKNOWN_CA.rawValue != 0 {
            if case .caFile = policy {
                hint = "check that --ca-file holds the CA that signed it, or check the host"
            } else {
                hint = "give its CA with --ca-file, or check the host"
            }
        } else if flags & G_TLS_CERTIFICATE_BAD_IDENTITY.rawValue != 0 {
            hint = "it is not issued for \(serverName); check the host"
        } else if flags & (G_TLS_CERTIFICATE_EXPIRED.rawValue | G_TLS_CERTIFICATE_NOT_ACTIVATED.rawValue) != 0 {
            hint = "check the server's certificate dates and this machine's clock"
        } else {
            hint = "check the server's certificate"
        }
        return "TLS certificate of \(label) is not trusted: \(what) (\(hint))"
    }

    /// The line for a failed TCP connect (error borrowed).
    func cannotConnect(_ error: UnsafeMutablePointer<GError>?) -> String {
        var reason = error?.pointee.message.map { String(cString: $0) } ?? "unknown error"
        // GSocketClient says "Could not connect to HOST: REASON"; keep only the reason.
        if reason.hasPrefix("Could not connect to "), let colon = reason.range(of: ": ") {
            reason = String(reason[colon.upperBound...])
        }
        return "cannot connect to \(label): \(reason) (check the URL and that the server is up)"
    }

    private func peerFingerprint(_ tls: UnsafeMutablePointer<GIOStream>) -> String? {
        guard let certificate = g_tls_connection_get_peer_certificate(cast(tls, to: GTlsConnection.self)) else { return nil }
        return TLSFingerprint.of(certificate: UnsafeMutableRawPointer(certificate))
    }

    /// Connects, handshakes and closes, blocking (GSocket timeout applies to connect and handshake I/O).
    /// Returns the server certificate's fingerprint (nil if it sent none).
    func handshakeOnce(timeout: Duration, cancellable: Cancellable? = nil) throws(GIONetError) -> String? {
        guard let client = g_socket_client_new() else { throw GIONetError("cannot create a GSocketClient") }
        defer { g_object_unref(client) }
        let (seconds, attoseconds) = timeout.components
        g_socket_client_set_timeout(client, guint(clamping: max(1, seconds + (attoseconds > 0 ? 1 : 0))))
        guard let connectable = makeConnectable() else { throw GIONetError("invalid host \(host)") }
        defer { g_object_unref(UnsafeMutableRawPointer(connectable)) }
        var error: UnsafeMutablePointer<GError>?
        guard let base = g_socket_client_connect(client, connectable, cancellable?.pointer, &error) else {
            let line = cannotConnect(error)
            if let error { g_error_free(error) }
            throw GIONetError(line)
        }
        defer {
            g_io_stream_close(cast(base, to: GIOStream.self), nil, nil)  // closes the fd now (see RelayedConnection.deinit)
            g_object_unref(base)
        }
        let watch = HandshakeWatch(policy: policy)
        let tls = try wrap(base, watch: watch)
        defer { g_object_unref(tls) }
        let done = g_tls_connection_handshake(cast(tls, to: GTlsConnection.self), cancellable?.pointer, &error)
        let line = verdict(tls: tls, error: done != 0 ? nil : error, watch: watch)
        if let error { g_error_free(error) }
        let fingerprint = watch.fingerprint ?? peerFingerprint(tls)
        g_io_stream_close(tls, nil, nil)
        if let line { throw GIONetError(line) }
        return fingerprint
    }
}

/// Message of a GError, which is freed.
func takeError(_ error: UnsafeMutablePointer<GError>) -> String {
    defer { g_error_free(error) }
    return error.pointee.message.map { String(cString: $0) } ?? "unknown error"
}
