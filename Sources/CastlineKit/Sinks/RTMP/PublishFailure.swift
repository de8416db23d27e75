/// The words for a publish that failed, saying what to change.
enum PublishFailure {
    /// Why a first connection failed. A refused `connect` on an application of more than one
    /// part (`rtmp://host/live/abc`) is most often a stream key pasted onto the URL.
    static func neverConnected(to endpoint: RTMPSink.Endpoint, reason: String) -> String {
        let parts = endpoint.application.split(separator: "/")
        if reason.contains("'connect' cmd failed"), parts.count > 1, let last = parts.last {
            return "the server at \(endpoint.displayURL) refused the app \"\(endpoint.application)\": if \(last) is the "
                + "stream key, give the URL without it (\(endpoint.server)/\(parts.dropLast().joined(separator: "/"))) "
                + "and the key with --key-env or key:"
        }
        return "cannot publish to \(endpoint.displayURL): \(reason) (check the URL and that the server is up)"
    }
}
