import Foundation
import PipelineConfig

extension URISource {
    /// `uri` with its stream key (rtmp) or passphrase (srt) put where GStreamer reads them; each is
    /// masked in every event from now on, so the URI that holds it never shows.
    static func withCredentials(_ uri: String, _ options: OptionValues, at keyPath: String,
                                events: EventEmitter) throws -> String {
        let scheme = uriScheme(uri)
        if scheme == "srt", URLComponents(string: uri)?.queryItems?.contains(where: { $0.name == "passphrase" }) == true {
            throw BuildError("the passphrase does not go in the URL, where it would show (use passphrase: ${VAR}, or --passphrase-env)",
                             at: "\(keyPath).uri")
        }
        if options.isSet(Credentials.key) || options.isSet(Credentials.keyFile) {
            guard scheme == "rtmp" || scheme == "rtmps", !options.isSet(Credentials.passphrase) else {
                throw BuildError("a stream key is for rtmp:// and rtmps:// URIs (an srt:// one takes passphrase:)", at: "\(keyPath).key")
            }
            let key = try Credentials.streamKey(options, at: keyPath)
            let base = uri.hasSuffix("/") ? uri : uri + "/"
            // A short key may not be masked by itself; the URI that holds it is.
            events.protect(key)
            events.protect(use: base + key.reveal(), masked: base + "****")
            return base + key.reveal()
        }
        if scheme.hasPrefix("rtmp") {
            // rtmp2src would connect, then fail with "URI lacks stream".
            let parts = URL(string: uri)?.path.split(separator: "/") ?? []
            guard parts.count >= 2, let key = parts.last else {
                throw BuildError("\(uri) names no stream: give its key with --key-env VAR (or key: ${VAR} in the file)", at: "\(keyPath).uri")
            }
            // A key written into the URL: still never shown by castline.
            let bare = String(uri.dropLast(uri.hasSuffix("/") ? key.count + 1 : key.count))
            events.protect(use: uri, masked: bare + "****")
        }
        if let passphrase = try Credentials.srtPassphrase(options, at: keyPath) {
            guard scheme == "srt" else { throw BuildError("a passphrase is for srt:// URIs", at: "\(keyPath).passphrase") }
            events.protect(passphrase)
            guard var url = URLComponents(string: uri) else { throw BuildError("\"\(uri)\" is not a URI", at: "\(keyPath).uri") }
            url.queryItems = (url.queryItems ?? []) + [URLQueryItem(name: "passphrase", value: passphrase.reveal())]
            guard let made = url.string else { throw BuildError("\"\(uri)\" is not a URI", at: "\(keyPath).uri") }
            // Percent-encoded in the URI, the passphrase may not read as itself.
            events.protect(use: made, masked: uri)
            return made
        }
        return uri
    }

    /// A key or passphrase whose variable is not set yet (a file checked without it): it stands in
    /// as its own reference, which is never sent to a server. Nil when there is none.
    static func unresolvedCredential(_ options: OptionValues) -> String? {
        [options[Credentials.key], options[Credentials.passphrase]].compactMap { $0 }.first(where: \.isUnresolved)?.reference
    }

    /// Throws before anything reaches the far end with a stand-in for a credential.
    func refuseUnresolvedCredential() throws {
        guard let unresolvedCredential else { return }
        throw BuildError("reading the stream needs \(unresolvedCredential) set (export it first)", at: keyPath, badInput: true)
    }
}
