/// The words for a publish that failed, saying what to change.
enum PublishFailure {
    /// Why a first connection failed, in words that say what to change. A refused `connect` on a
    /// URL with more than an app (`rtmp://host/live/abc`) is most often a key pasted onto the URL.
    static func neverConnected(_ url: String, reason: String) -> String {
        let parts = url.split(separator: "/", omittingEmptySubsequences: true)  // scheme:, host:port, app...
        if reason.contains("'connect' cmd failed"), parts.count > 3, let last = parts.last {
            let base = parts.dropLast().joined(separator: "/").replacingOccurrences(of: ":/", with: "://")
            return "the server at \(url) refused the app \"\(parts.dropFirst(2).joined(separator: "/"))\": if \(last) is the "
                + "stream key, give the URL without it (\(base)) and the key with --key-env or key:"
        }
        return "cannot publish to \(url): \(reason) (check the URL and that the server is up)"
    }
}
