import Foundation
import LocalIngest
import Testing

/// One `castline listen --delay` run (or without `--delay`) with its JSON lines, read as the
/// delay stage and the stats stage report them.
struct DelayListener {
    let delay: String?
    let statsFile: String
    let process: ChildProcess
    /// When it was launched (wall clock), to time its start.
    let launched: Date

    /// Starts `castline listen URL --audio-only --output null --delay DELAY --stats-json FILE`
    /// (and `--measure-latency`).
    static func start(url: String, delay: String?, scratch: Scratch, measuringLatency: Bool = false,
                      recording: String? = nil) throws -> DelayListener {
        let file = scratch.file("delay-\(delay ?? "none").jsonl")
        let launched = Date()
        // Recording, it takes the picture too, and keeps a minute: the history then reaches back
        // past where play-out starts, into the group of pictures playing there.
        let process = try Castline.start([
            "listen", url, "--output", "null", "--stats-json", file,
        ] + (recording.map { ["--record", $0, "--max-delay", "1m"] } ?? ["--audio-only"])
          + (delay.map { ["--delay", $0] } ?? []) + (measuringLatency ? ["--measure-latency"] : []))
        return DelayListener(delay: delay, statsFile: file, process: process, launched: launched)
    }

    /// Every JSON line written so far.
    var events: [[String: Any]] {
        // Not there yet before the first line is written.
        let text = (try? String(contentsOfFile: statsFile, encoding: .utf8)) ?? ""
        return jsonLines(text, growing: true)
    }

    /// The delay stage's samples: wall-clock time, the media playing out, the delay applied.
    var positions: [(time: Date, position: Double, delay: Double)] {
        events.compactMap { event in
            guard event["event"] as? String == "stats", let delay = event["delay_s"] as? Double,
                  let position = event["position_s"] as? Double, let time = Self.time(event) else { return nil }
            return (time, position, delay)
        }
    }

    /// The stats stage's audio samples: wall-clock time and where what is heard lies in the stream.
    var heardPositions: [(time: Date, position: Double, delay: Double)] {
        events.compactMap { event in
            guard event["event"] as? String == "stats", event["stream"] as? String == "audio",
                  let position = event["position_s"] as? Double, let time = Self.time(event) else { return nil }
            return (time, position, 0)
        }
    }

    /// The latency stage's readings of the audio, newest last.
    var latencies: [Double] { events.compactMap { $0["latency_audio_s"] as? Double } }

    /// When the first event of `kind` (with `key` equal to `value`, if given) was written.
    func firstTime(of kind: String, where key: String? = nil, is value: String? = nil) -> Date? {
        events.first { event in
            event["event"] as? String == kind && (key.map { event[$0] as? String == value } ?? true)
        }.flatMap(Self.time)
    }

    static func time(_ event: [String: Any]) -> Date? {
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return (event["ts"] as? String).flatMap(format.date(from:))
    }

    /// Stops it as a user does; kills it if that does not work.
    func stop() async {
        _ = await Castline.interrupt(process)
    }
}

/// `ahead`'s position at each of `behind`'s samples (interpolated between its
/// own samples, which come once a second) minus `behind`'s: how far apart the
/// two play at the same wall-clock moment.
func positionGaps(ahead: [(time: Date, position: Double, delay: Double)],
                  behind: [(time: Date, position: Double, delay: Double)]) -> [Double] {
    behind.compactMap { sample in
        guard let after = ahead.firstIndex(where: { $0.time >= sample.time }), after > 0 else { return nil }
        let (early, late) = (ahead[after - 1], ahead[after])
        let span = late.time.timeIntervalSince(early.time)
        // A jump between two samples (a pause, a skip) is no straight line to read between.
        guard span > 0, span < 1.5, abs(late.position - early.position - span) < 0.1 else { return nil }
        let interpolated = early.position + (late.position - early.position) * sample.time.timeIntervalSince(early.time) / span
        return interpolated - sample.position
    }
}

/// An ffmpeg publisher of a 1 kHz AAC tone (audio only) to the ingest, in real time.
func publishTone(to endpoints: IngestEndpoints, key: String, seconds: Int) throws -> ChildProcess {
    let publisher = ChildProcess(executable: "/usr/bin/ffmpeg", arguments: [
        "-v", "error", "-re", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000", "-t", "\(seconds)",
        "-c:a", "aac", "-b:a", "128k", "-f", "flv", endpoints.rtmpPublishURL(key: key),
    ])
    try publisher.start()
    return publisher
}

/// How far apart the two play (see `positionGaps`), compared once a second until
/// `count` moments are in or `within` has passed; then both are stopped.
func gapsWhilePlaying(_ live: DelayListener, _ delayed: DelayListener, count: Int,
                      within: Duration) async throws -> [Double] {
    var gaps: [Double] = []
    let deadline = ContinuousClock.now + within
    while ContinuousClock.now < deadline, gaps.count < count {
        try await Task.sleep(for: .seconds(1))
        gaps = positionGaps(ahead: live.positions, behind: delayed.positions)
    }
    await live.stop()
    await delayed.stop()
    return gaps
}

/// castline's own test signal, audio only (the tone, its beeps and their numbers: what a
/// latency stage reads), published to the ingest.
func publishTestSignal(to endpoints: IngestEndpoints, key: String) throws -> ChildProcess {
    try Castline.start(["broadcast", endpoints.rtmpURL, "--key-env", "CASTLINE_TEST_KEY", "--audio-only"],
                       environment: ["CASTLINE_TEST_KEY": key])
}

/// Runs `body` with a live tone (`seconds` long; or castline's test signal) published under a
/// fresh key to a fresh local ingest, once its playlist lists `segments` segments; the
/// publisher is stopped afterwards.
func withPublishedTone(key prefix: String, segments: Int, seconds: Int = 90, testSignal: Bool = false,
                       _ body: (IngestEndpoints, String) async throws -> Void) async throws {
    try await withIngest { _, endpoints in
        let key = "\(prefix)\(UInt16.random(in: 1000...9999))"
        let publisher = try testSignal ? publishTestSignal(to: endpoints, key: key) : publishTone(to: endpoints, key: key, seconds: seconds)
        defer { publisher.signal(SIGKILL) }
        try #require(await endpoints.published(key: key).waitForSegments(segments, timeout: .seconds(40)))
        try await body(endpoints, key)
    }
}

/// Runs `body` with two listeners on a live picture and tone (ffmpeg: 320x180, a keyframe each
/// 2 s) published to a fresh local ingest, once its playlist lists `segments` segments: one at
/// delay 0 (audio only), and one at `delay` recording picture and sound to `recording`.
/// The publisher is stopped afterwards; `body` stops the listeners.
func withTwoListeners(key prefix: String, segments: Int, delay: String, recording: String,
                      _ body: (DelayListener, DelayListener) async throws -> Void) async throws {
    try await withIngest { _, endpoints in
        let key = "\(prefix)\(UInt16.random(in: 1000...9999))"
        let publisher = ChildProcess(executable: "/usr/bin/ffmpeg", arguments: [
            "-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f", "lavfi",
            "-i", "sine=frequency=1000:sample_rate=48000", "-t", "60", "-c:v", "libx264", "-preset", "ultrafast",
            "-tune", "zerolatency", "-g", "60", "-c:a", "aac", "-b:a", "128k", "-f", "flv", endpoints.rtmpPublishURL(key: key),
        ])
        try publisher.start()
        defer { publisher.signal(SIGKILL) }
        try #require(await endpoints.published(key: key).waitForSegments(segments, timeout: .seconds(40)))
        let scratch = try Scratch()
        let url = endpoints.hlsPlaylistURL(key: key)
        let live = try DelayListener.start(url: url, delay: "0s", scratch: scratch)
        let delayed = try DelayListener.start(url: url, delay: delay, scratch: scratch, recording: recording)
        try await body(live, delayed)
    }
}
