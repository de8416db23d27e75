import Foundation

/// A URI's scheme, lowercased ("rtmp" of "RTMP://host/app"), read without parsing the rest:
/// what decides which source or sink takes it.
public func uriScheme(_ uri: String) -> String {
    uri.prefix(while: { $0 != ":" }).lowercased()
}

/// The WebRTC endpoint an http(s) URL names by its path's end (`…/whip` publishes, `…/whep`
/// plays, as RFC 9725 and the WHEP draft name theirs); nil for any other URL.
public enum WebRTCEndpoint: String, Sendable, CaseIterable {
    case whip, whep

    public init?(url: String) {
        guard ["http", "https"].contains(uriScheme(url)), let path = URLComponents(string: url)?.path else { return nil }
        guard let kind = Self.allCases.first(where: { path.hasSuffix("/\($0.rawValue)") }) else { return nil }
        self = kind
    }
}

/// Refuses a URL whose port is outside 1 to 65535, which the network elements would take as
/// another port (rtmp2sink wraps 99999 to its default 1935) or fail on with no word of why.
/// Not quoted: a URL may carry a key.
func requireValidPort(_ port: Int?, at keyPath: String) throws {
    guard let port, !(1...65_535).contains(port) else { return }
    throw BuildError("the URL's port \(port) is out of range (use 1 to 65535)", at: keyPath)
}
