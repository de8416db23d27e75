import GstKit

/// RTMP's end of a publishing pipeline: rtmp2sink, fed FLV tags castline writes (`FLVTagFeed`).
struct RTMPOutput: PublishOutput {
    /// What rtmp2sink connects to, key included: never shown.
    let location: @Sendable () throws -> String
    let insecureTLS: Bool
    let endpoint: RTMPSink.Endpoint

    var scheme: String { "rtmp" }
    var waitsForCallers: Bool { false }
    var displayURL: String { endpoint.displayURL }

    func build(in pipeline: Pipeline, streams: [StreamKind], picture: Bool,
               requestKeyframe: @escaping @Sendable () -> Void) throws -> (inputs: PublishInputs, output: Element) {
        let output = try ElementCatalog.make("rtmp2sink")
        try output.set("location", text: picture ? displayURL + "/****" : try location())
        // Timestamps are the main pipeline's running time; pacing happened there.
        try output.set("sync", false)
        // RTMP's default chunk of 128 bytes cuts a frame into dozens of chunks, each costing a
        // header and a write; 4096 is what OBS and ffmpeg publish with (3 % less CPU for three destinations).
        try output.set("chunk-size", UInt32(4096))
        if insecureTLS { try output.set("tls-validation-flags", text: "0") }
        try pipeline.add(output)
        guard let pad = output.staticPad("sink") else { throw BuildError("rtmp2sink has no sink pad") }
        return (.flvTags(pad), output)
    }

    /// rtmp2sink's byte counters: sent, and acknowledged by the server.
    func counters(_ output: Element?) -> PublishCounters {
        let stats = output?.structure("stats")
        return PublishCounters(sent: stats?.uint64("out-bytes-total") ?? 0, ackedBytes: stats?.uint64("out-bytes-acked") ?? 0)
    }

    /// The server says how many bytes it acknowledges at a time (nginx-rtmp 5 MB, ffmpeg 2.5 MB);
    /// not less than 2.5 MB is assumed, so a server that says little is not taken for one that stopped.
    func progress(_ output: Element) -> WriteProgress? {
        guard let stats = output.structure("stats") else { return nil }
        let window = max(stats.uint64("in-window-ack-size") ?? 0, stats.uint64("out-window-ack-size") ?? 0, 2_500_000)
        return WriteProgress(sent: stats.uint64("out-bytes-total") ?? 0, acked: stats.uint64("out-bytes-acked") ?? 0, window: window)
    }

    /// rtmp2sink holds a connection (and its stats count bytes) only once the server answered
    /// `publish` with NetStream.Publish.Start; until then its stats are all zero.
    func isConnected(_ output: Element?) -> Bool {
        (output?.structure("stats")?.uint64("out-bytes-total") ?? 0) > 0
    }

    func refusal(in reason: String) -> String? {
        guard reason.contains("'publish' cmd failed") else { return nil }
        return "the server at \(displayURL) refused to publish with this stream key (check the key)"
    }

    /// A refused `connect` on an application of more than one part (`rtmp://host/live/abc`)
    /// is most often a stream key pasted onto the URL. TLS that never completes is most often
    /// rtmps:// to a plain RTMP port.
    func neverConnected(reason: String?, waited: Duration) -> String {
        let parts = endpoint.application.split(separator: "/")
        if let reason, reason.contains("'connect' cmd failed") {
            guard parts.count > 1, let last = parts.last else {
                return "nothing was published: the server at \(endpoint.server) refused the app \"\(endpoint.application)\" "
                    + "(check the application path in the URL, e.g. /live or /app)"
            }
            return "the server at \(endpoint.displayURL) refused the app \"\(endpoint.application)\": if \(last) is the "
                + "stream key, give the URL without it (\(endpoint.server)/\(parts.dropLast().joined(separator: "/"))) "
                + "and the key with --key-env or key:"
        }
        if let reason, reason.contains("BadName") || reason.localizedCaseInsensitiveContains("already publishing") {
            return "nothing was published: the server at \(endpoint.displayURL) says this stream key is already publishing "
                + "(another encoder is live on it: stop that one, or use another key)"
        }
        let tlsHint = endpoint.secure
            ? "; if that port speaks plain RTMP, use rtmp://\(endpoint.host):\(endpoint.port)/\(endpoint.application)"
            : "; if it is an RTMPS port, use rtmps://"
        guard let reason else {
            return "nothing was published: the server at \(endpoint.displayURL) did not accept the stream in "
                + String(format: "%.1f s", waited.seconds) + " (check the host and port\(tlsHint))"
        }
        let tls = reason.localizedCaseInsensitiveContains("tls") || reason.localizedCaseInsensitiveContains("handshake")
        return "nothing was published: cannot publish to \(endpoint.displayURL): \(reason) "
            + "(check the URL and that the server is up\(tls || endpoint.secure ? tlsHint : ""))"
    }
}
