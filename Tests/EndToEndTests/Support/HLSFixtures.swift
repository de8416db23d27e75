import Foundation
import LocalIngest

/// HLS streams made on the fly by ffmpeg's HLS muxer, a 1 kHz tone (and a test
/// picture where there is video), in the forms a player meets: MPEG-TS, fMP4,
/// byte ranges, AES-128, a discontinuity, EVENT, several variants, and separate
/// audio and video renditions.
enum HLSFixtures {
    /// Inputs: a picture and a 1 kHz tone, `seconds` long.
    static func inputs(seconds: Double, video: Bool, size: String = "320x240", tone: Int = 1000) -> [String] {
        (video ? ["-f", "lavfi", "-i", "testsrc2=size=\(size):rate=30"] : [])
            + ["-f", "lavfi", "-i", "sine=frequency=\(tone):sample_rate=48000", "-t", "\(seconds)"]
    }

    static func codecs(video: Bool, bitrate: String = "300k") -> [String] {
        (video ? ["-c:v", "libx264", "-preset", "ultrafast", "-b:v", bitrate, "-g", "30", "-pix_fmt", "yuv420p"] : ["-vn"])
            + ["-c:a", "aac", "-b:a", "64k"]
    }

    /// Runs ffmpeg in `folder` (the playlists it writes name segments relative to it).
    static func ffmpeg(_ arguments: [String], in folder: String) async throws {
        let result = try await ChildProcess.run("/bin/sh", ["-c", "cd \"$0\" && exec /usr/bin/ffmpeg \"$@\"", folder,
                                                            "-v", "error", "-y"] + arguments, timeout: .seconds(60))
        guard result.status == 0 else { throw ProbeError(message: "ffmpeg: \(result.stderr)") }
    }

    /// `name`.m3u8, a VOD: MPEG-TS segments of 1 s, or the extra muxer options given.
    static func vod(_ name: String, in folder: String, seconds: Double = 3, video: Bool = true, tone: Int = 1000,
                    size: String = "320x240", bitrate: String = "300k", options: [String] = []) async throws {
        try await ffmpeg(inputs(seconds: seconds, video: video, size: size, tone: tone) + codecs(video: video, bitrate: bitrate)
            + ["-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod"] + options
            + ["-hls_segment_filename", "\(name)-%d.\(options.contains("fmp4") ? "m4s" : "ts")", "\(name).m3u8"],
            in: folder)
    }

    /// One MPEG-TS file of a tone, `seconds` long: a segment a test server hands out as it likes.
    static func transportStream(_ name: String, in folder: String, seconds: Double = 2) async throws {
        try await ffmpeg(inputs(seconds: seconds, video: false) + codecs(video: false) + ["-f", "mpegts", name], in: folder)
    }

    /// fMP4 segments with an `EXT-X-MAP` init section.
    static func fragmentedMP4(_ name: String, in folder: String, seconds: Double = 3) async throws {
        try await vod(name, in: folder, seconds: seconds, options: ["-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "\(name)-init.mp4"])
    }

    /// One file, its segments as `EXT-X-BYTERANGE`s.
    static func byteRanges(_ name: String, in folder: String, seconds: Double = 3) async throws {
        try await ffmpeg(inputs(seconds: seconds, video: true) + codecs(video: true)
            + ["-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod", "-hls_flags", "single_file", "\(name).m3u8"],
            in: folder)
    }

    /// AES-128 segments, the key at `name.key`; IV given in the playlist or not.
    static func encrypted(_ name: String, in folder: String, seconds: Double = 3, withIV: Bool) async throws {
        let key = (0..<16).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        try Data(key).write(to: URL(fileURLWithPath: "\(folder)/\(name).key"))
        let info = ["\(name).key", "\(folder)/\(name).key"] + (withIV ? ["0123456789abcdef0123456789abcdef"] : [])
        try info.joined(separator: "\n").write(toFile: "\(folder)/\(name).keyinfo", atomically: true, encoding: .utf8)
        try await vod(name, in: folder, seconds: seconds, video: false, options: ["-hls_key_info_file", "\(name).keyinfo"])
    }

    /// Two VODs made apart (their timestamps unrelated) joined with `EXT-X-DISCONTINUITY`.
    static func discontinuity(_ name: String, in folder: String) async throws {
        try await vod("\(name)-a", in: folder, seconds: 3, video: false)
        try await ffmpeg(inputs(seconds: 3, video: false) + codecs(video: false)
            + ["-output_ts_offset", "1000", "-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod",
               "-hls_segment_filename", "\(name)-b-%d.ts", "\(name)-b.m3u8"], in: folder)
        let first = try segmentLines(of: "\(folder)/\(name)-a.m3u8")
        let second = try segmentLines(of: "\(folder)/\(name)-b.m3u8")
        let text = (["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:2", "#EXT-X-PLAYLIST-TYPE:VOD"]
            + first + ["#EXT-X-DISCONTINUITY"] + second + ["#EXT-X-ENDLIST", ""]).joined(separator: "\n")
        try text.write(toFile: "\(folder)/\(name).m3u8", atomically: true, encoding: .utf8)
    }

    /// Each `#EXTINF` line with its URI line.
    static func segmentLines(of playlist: String) throws -> [String] {
        let lines = try String(contentsOfFile: playlist, encoding: .utf8).split(separator: "\n").map(String.init)
        var kept: [String] = []
        for (index, line) in lines.enumerated() where line.hasPrefix("#EXTINF") && index + 1 < lines.count {
            kept += [line, lines[index + 1]]
        }
        return kept
    }

    /// Packed audio (RFC 8216 §3.4): `name`.m3u8 listing 1 s segments of an elementary stream
    /// (`format`: adts, mp3, ac3) made by ffmpeg's segment muxer; with `timestamps`, each opens
    /// with the ID3 tag Apple's tools write, its transport stream timestamp counting from `origin` seconds.
    static func packedAudio(_ name: String, in folder: String, format: String, codec: String, seconds: Double = 3,
                            timestamps: Bool, origin: Double = 10) async throws {
        let fileExtension = format == "adts" ? "aac" : format
        try await ffmpeg(inputs(seconds: seconds, video: false) + ["-c:a", codec, "-b:a", "128k", "-f", "segment", "-segment_time", "1",
               "-segment_format", format, "-segment_list", "\(name).m3u8", "-segment_list_type", "m3u8",
               "\(name)-%d.\(fileExtension)"], in: folder)
        guard timestamps else { return }
        var start = origin
        let lines = try segmentLines(of: "\(folder)/\(name).m3u8")
        for index in stride(from: 0, to: lines.count, by: 2) {
            let path = "\(folder)/\(lines[index + 1])"
            let audio = try Data(contentsOf: URL(fileURLWithPath: path))
            try (Data(timestampTag(UInt64(start * 90_000))) + audio).write(to: URL(fileURLWithPath: path))
            start += Double(lines[index].dropFirst("#EXTINF:".count).prefix { $0 != "," }) ?? 0
        }
    }

    /// The ID3v2.4 tag RFC 8216 §3.4 describes: a PRIV frame with the transport stream timestamp.
    static func timestampTag(_ timestamp: UInt64) -> [UInt8] {
        func syncsafe(_ value: Int) -> [UInt8] { [21, 14, 7, 0].map { UInt8((value >> $0) & 0x7F) } }
        let owner = Array("com.apple.streaming.transportStreamTimestamp".utf8) + [0]
        let body = owner + (0..<8).reversed().map { UInt8(truncatingIfNeeded: timestamp >> (8 * UInt64($0))) }
        let frame = Array("PRIV".utf8) + syncsafe(body.count) + [0, 0] + body
        return Array("ID3".utf8) + [4, 0, 0] + syncsafe(frame.count) + frame
    }

    /// MPEG-TS segments named `.aac`, as ffmpeg's HLS muxer writes when asked to: the name lies.
    static func transportStreamNamedAAC(_ name: String, in folder: String, seconds: Double = 3) async throws {
        try await ffmpeg(inputs(seconds: seconds, video: false) + codecs(video: false)
            + ["-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod", "-hls_segment_filename", "\(name)-%d.aac", "\(name).m3u8"],
            in: folder)
    }

    /// master.m3u8 with three TS variants: 320x240 300k, 640x360 800k, 960x540 1500k.
    static func threeVariants(in folder: String, seconds: Double = 6) async throws {
        let variants = [("low", "320x240", "300k", 400_000), ("mid", "640x360", "800k", 1_000_000), ("high", "960x540", "1500k", 1_800_000)]
        var master = ["#EXTM3U"]
        for (name, size, bitrate, bandwidth) in variants {
            try await vod(name, in: folder, seconds: seconds, size: size, bitrate: bitrate)
            master += ["#EXT-X-STREAM-INF:BANDWIDTH=\(bandwidth),RESOLUTION=\(size),CODECS=\"avc1.42c01e,mp4a.40.2\"", "\(name).m3u8"]
        }
        try (master + [""]).joined(separator: "\n").write(toFile: "\(folder)/master.m3u8", atomically: true, encoding: .utf8)
    }

    /// master.m3u8 whose video variant (video only) takes its sound from an `EXT-X-MEDIA` audio
    /// rendition, whose timestamps run `audioLate` seconds after the picture's.
    static func separateAudio(in folder: String, seconds: Double = 3, audioLate: Double = 0.5) async throws {
        try await ffmpeg(inputs(seconds: seconds, video: true) + ["-map", "0:v", "-c:v", "libx264", "-preset", "ultrafast",
               "-b:v", "300k", "-g", "30", "-pix_fmt", "yuv420p", "-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod",
               "-hls_segment_filename", "video-%d.ts", "video.m3u8"], in: folder)
        try await vod("audio", in: folder, seconds: seconds, video: false, options: ["-output_ts_offset", "\(audioLate)"])
        try """
            #EXTM3U
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,URI="audio.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=400000,RESOLUTION=320x240,CODECS="avc1.42c00d,mp4a.40.2",AUDIO="aud"
            video.m3u8

            """.write(toFile: "\(folder)/master.m3u8", atomically: true, encoding: .utf8)
    }
}
