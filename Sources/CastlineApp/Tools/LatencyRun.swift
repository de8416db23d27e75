import CastlineKit
import Foundation
import LocalIngest

/// `castline latency`: broadcasts the test signal and listens back to it at once, the
/// listener reading the signal's clock (a latency stage), so what is printed each second is
/// how far behind the broadcaster a viewer plays and whether sound and picture agree.
public enum LatencyRun {
    /// The environment variable the key of a `--local` run travels in (never an argument).
    static let localKeyVariable = "CASTLINE_LATENCY_KEY"

    /// `broadcast` and `play` for a real service; both nil with `local`. Returns the exit status.
    /// `size`: the test signal's, for `local` (a given `broadcast` has its own).
    /// `playToken`: where a WHEP endpoint's bearer token comes from (the environment, or a file).
    public static func run(broadcast: BroadcastShortcut?, play: String?, playToken: (env: String?, file: String?) = (nil, nil),
                           local: Bool, size: String, duration: Duration) async -> Int32 {
        var ingest: IngestServer?
        var publish = broadcast, playback = play
        if local {
            let server = IngestServer()
            do {
                let endpoints = try await server.start()
                let key = "latency-\(UInt32.random(in: 100_000...999_999))"
                setenv(localKeyVariable, key, 1)
                var made = BroadcastShortcut(url: endpoints.rtmpURL)
                made.keyEnvs = [localKeyVariable]
                made.size = size
                publish = made
                playback = endpoints.hlsPlaylistURL(key: key)
                Terminal.status("local ingest: \(endpoints.rtmpURL), playback \(endpoints.httpBaseURL)/hls/")
            } catch {
                Terminal.status("latency --local: the ingest did not start: \(error)")
                return ExitStatus.failed
            }
            ingest = server
        }
        guard let publish, let playback else { return ExitStatus.badInput }
        var listen = ListenShortcut(url: playback)
        (listen.tokenEnv, listen.tokenFile) = playToken
        listen.output = .null
        listen.measureLatency = true
        // The stream is not there until the broadcast has run a segment or two.
        listen.waitForLive = true
        // The listener stops with the broadcast (`endTogether`); a broadcast that stops on its own
        // (a failure) leaves the listener to end 8 s after the playlist stopped moving.
        listen.endAfter = .seconds(8)
        let entries = [publish.spec, listen.spec].map { build in
            RunSession.Entry(plan: PipelineFiles.load(origin: "castline latency", build).orExit())
        }
        var options = RunSession.Options(stopAfter: duration, stats: StatsSettings(latencyLines: true))
        options.endTogether = true
        let status = await RunSession.run(entries, options: options)
        await ingest?.stop()
        return status
    }
}
