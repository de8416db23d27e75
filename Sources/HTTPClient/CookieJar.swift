import AsyncHTTPClient
import Foundation

/// The cookies servers set, sent back as URLSession sends them (RFC 6265): to the host that set
/// one, or to a domain that host lies in when the cookie names it; on paths under its own; over
/// TLS only when marked secure; until it expires. Some CDNs set a token cookie on the
/// multivariant playlist and refuse the media playlists and segments without it.
struct CookieJar {
    private struct Stored {
        let name: String
        let value: String
        let domain: String
        /// Set without a `Domain`: for that host alone, not its subdomains.
        let hostOnly: Bool
        let path: String
        let secure: Bool
        let expires: Date?
    }
    private var cookies: [Stored] = []

    /// Takes the `Set-Cookie` headers of a reply from `url`. A cookie for a domain the host does
    /// not lie in (or for a bare top-level name) is refused, as browsers refuse it.
    mutating func take(_ headers: [String], from url: URL, now: Date = Date()) {
        guard let host = url.host?.lowercased() else { return }
        for header in headers {
            guard let cookie = HTTPClient.Cookie(header: header, defaultDomain: host) else { continue }
            let named = Self.namesDomain(header)
            let domain = named ? (cookie.domain ?? host) : host
            guard domain == host || (!Self.isAddress(host) && domain.contains(".") && host.hasSuffix("." + domain)) else { continue }
            // Max-Age wins over Expires; either is kept as a moment.
            let expires = cookie.maxAge.map { now.addingTimeInterval(TimeInterval($0)) } ?? cookie.expires
            let stored = Stored(name: cookie.name, value: cookie.value, domain: domain, hostOnly: !named, path: cookie.path,
                                secure: cookie.secure, expires: expires)
            cookies.removeAll { $0.name == stored.name && $0.domain == stored.domain && $0.path == stored.path }
            if !(expires.map { $0 <= now } ?? false) { cookies.append(stored) }
        }
    }

    /// The `Cookie` header for a request to `url`; nil when no cookie applies.
    mutating func header(for url: URL, now: Date = Date()) -> String? {
        cookies.removeAll { $0.expires.map { $0 <= now } ?? false }
        guard let host = url.host?.lowercased() else { return nil }
        let path = url.path.isEmpty ? "/" : url.path
        let secure = url.scheme?.lowercased() == "https"
        let sent = cookies.filter { cookie in
            (host == cookie.domain || (!cookie.hostOnly && host.hasSuffix("." + cookie.domain)))
                && (secure || !cookie.secure)
                && (path == cookie.path || path.hasPrefix(cookie.path.hasSuffix("/") ? cookie.path : cookie.path + "/"))
        }
        return sent.isEmpty ? nil : sent.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    /// Whether a `Set-Cookie` header has a `Domain` attribute with a value.
    private static func namesDomain(_ header: String) -> Bool {
        header.split(separator: ";").dropFirst().contains { attribute in
            let parts = attribute.split(separator: "=", maxSplits: 1)
            return parts.count == 2 && parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "domain"
                && !parts[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: ".")).isEmpty
        }
    }

    /// An IPv4 or IPv6 address: cookies for it are for it alone.
    private static func isAddress(_ host: String) -> Bool {
        host.contains(":") || host.split(separator: ".").allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
    }
}
