import Foundation
import LocalIngest

/// A folder served over plain HTTP on a free loopback port (python3's http.server), stopped for sure.
final class HTTPFolder: Sendable {
    let folder: String
    let port: Int
    private let process: ChildProcess

    /// Serves `folder` on a free port, or on `port` (a server started again where one was stopped).
    init(_ folder: String, port: Int? = nil) async throws {
        self.folder = folder
        self.port = try port ?? FreePort.find()
        process = ChildProcess(executable: ChildProcess.which("python3") ?? "/usr/bin/python3",
                               arguments: ["-m", "http.server", "\(self.port)", "--bind", "127.0.0.1", "--directory", folder])
        try process.start()
        guard await PortProbe.waitUntilOpen(host: "127.0.0.1", port: self.port, timeout: .seconds(10)) else {
            await process.terminate()
            throw ProbeError(message: "the HTTP server did not start")
        }
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    func stop() async { await process.terminate(grace: .milliseconds(500)) }

    /// How many GETs of `path` the server has answered (from its request log).
    func requests(of path: String) -> Int {
        process.standardError.components(separatedBy: "\"GET /\(path) ").count - 1
    }

    /// master.m3u8 with two VOD renditions: low.m3u8 (320x240, 400k) and high.m3u8 (640x360, 1000k).
    static func makeTwoRenditions(in scratch: Scratch, seconds: Int) async throws {
        try await makeVOD(in: scratch.path, name: "low", seconds: seconds, size: "320x240", bitrate: "300k")
        try await makeVOD(in: scratch.path, name: "high", seconds: seconds, size: "640x360", bitrate: "900k")
        _ = try scratch.write("master.m3u8", """
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=400000,RESOLUTION=320x240,CODECS="avc1.42c00d,mp4a.40.2"
            low.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=1000000,RESOLUTION=640x360,CODECS="avc1.42c01e,mp4a.40.2"
            high.m3u8
            """)
    }

    /// `vod.m3u8` (see `makeVOD`) of `seconds` written into `scratch` and served.
    static func servingVOD(seconds: Int, in scratch: Scratch) async throws -> HTTPFolder {
        try await makeVOD(in: scratch.path, name: "vod", seconds: seconds)
        return try await HTTPFolder(scratch.path)
    }

    /// Writes a VOD HLS rendition (H.264 + 1 kHz AAC) named `name` into the folder.
    static func makeVOD(in folder: String, name: String, seconds: Int, size: String = "320x240",
                        bitrate: String = "300k") async throws {
        let result = try await ChildProcess.run("/usr/bin/ffmpeg", [
            "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=30",
            "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000", "-t", "\(seconds)",
            "-c:v", "libx264", "-preset", "ultrafast", "-b:v", bitrate, "-g", "30", "-pix_fmt", "yuv420p",
            "-c:a", "aac", "-b:a", "64k", "-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod",
            "-hls_segment_filename", "\(folder)/\(name)-%d.ts", "\(folder)/\(name).m3u8",
        ], timeout: .seconds(60))
        guard result.status == 0 else { throw ProbeError(message: "ffmpeg: \(result.stderr)") }
    }
}

/// A WAV's first channel as 48 kHz float samples, decoded by ffmpeg.
func monoSamples(ofWAV path: String, scratch: Scratch) async throws -> [Float] {
    let raw = scratch.file("samples-\(UUID().uuidString).f32")
    let decode = try await ChildProcess.run("/usr/bin/ffmpeg", [
        "-v", "error", "-y", "-i", path, "-ac", "1", "-ar", "48000", "-f", "f32le", raw,
    ])
    guard decode.status == 0 else { throw ProbeError(message: "ffmpeg: \(decode.stderr)") }
    return try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
}

/// The dominant frequency of a WAV: whole cycles (rising through a band around zero, so
/// quiet noise is not counted) over the time from the first to the last. Silence before or
/// after the tone (a capture that starts before the sound reaches it) does not count.
func dominantFrequency(ofWAV path: String, scratch: Scratch) async throws -> Double {
    let samples = try await monoSamples(ofWAV: path, scratch: scratch)
    var rises: [Int] = []
    var below = false
    for (index, sample) in samples.enumerated() {
        if sample < -0.05 { below = true } else if below, sample > 0.05 { rises.append(index); below = false }
    }
    guard let first = rises.first, let last = rises.last, last > first else { return 0 }
    return Double(rises.count - 1) / (Double(last - first) / 48_000)
}
