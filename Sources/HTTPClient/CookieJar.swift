import AsyncHTTPClient
import Foundation

/// The cookies servers set, sent back as URLSession sends them: to the domain and path they were
/// set for, over TLS only when marked secure, until they expire. Some CDNs set a token cookie on the
/// multivariant playlist and refuse the media playlists and segments without it.
struct CookieJar {
    private var cookies: [HTTPClient.Cookie] = []

    /// Takes the `Set-Cookie` headers of a reply from `url`.
    mutating func take(_ headers: [String], from url: URL, now: Date = Date()) {
        guard let host = url.host?.lowercased() else { return }
        for header in headers {
            guard let cookie = HTTPClient.Cookie(header: header, defaultDomain: host) else { continue }
            cookies.removeAll { $0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path }
            if !Self.expired(cookie, now: now) { cookies.append(cookie) }
        }
    }

    /// The `Cookie` header for a request to `url`; nil when no cookie applies.
    mutating func header(for url: URL, now: Date = Date()) -> String? {
        cookies.removeAll { Self.expired($0, now: now) }
        guard let host = url.host?.lowercased() else { return nil }
        let path = url.path.isEmpty ? "/" : url.path
        let secure = url.scheme?.lowercased() == "https"
        let sent = cookies.filter { cookie in
            let domain = cookie.domain ?? host
            return (host == domain || host.hasSuffix("." + domain)) && (secure || !cookie.secure)
                && (path == cookie.path || path.hasPrefix(cookie.path.hasSuffix("/") ? cookie.path : cookie.path + "/"))
        }
        return sent.isEmpty ? nil : sent.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    private static func expired(_ cookie: HTTPClient.Cookie, now: Date) -> Bool {
        if let maxAge = cookie.maxAge { return maxAge <= 0 }
        return cookie.expires.map { $0 <= now } ?? false
    }
}
