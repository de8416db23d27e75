import Foundation
import LocalIngest
import Testing

/// Every form of HLS castline's own client reads, made by ffmpeg's HLS muxer,
/// served over loopback HTTP, played, and judged by what was recorded.
@Suite("castline listen: HLS forms, end to end", .serialized, .timeLimit(.minutes(4)))
struct HLSVariantsTests {
    /// Plays `playlist` audio only into a WAV; checks its length and its tone.
    private func expectTone(_ server: HTTPFolder, _ playlist: String, scratch: Scratch, seconds: Double,
                            tone: Double = 1000, extra: [String] = [], recording: String? = nil) async throws -> Castline.Result {
        let wav = scratch.file("\(recording ?? playlist).wav")
        let result = try await Castline.run(["listen", server.url(playlist), "--audio-only", "--output", "null",
                                             "--record", wav] + extra, timeout: .seconds(40))
        #expect(result.status == 0, "\(playlist): \(result.stderr)")
        guard result.status == 0 else { return result }
        let media = try await ProbedMedia.probe(wav)
        #expect(abs(media.duration - seconds) <= 0.2, "\(playlist): recorded \(media.duration) s of \(seconds) s")
        let frequency = try await dominantFrequency(ofWAV: wav, scratch: scratch)
        #expect(abs(frequency - tone) < 20, "\(playlist): dominant frequency \(frequency) Hz")
        return result
    }

    @Test("MPEG-TS, fMP4, byte ranges, EVENT: each plays whole, the tone intact")
    func containers() async throws {
        let scratch = try Scratch()
        try await HLSFixtures.vod("ts", in: scratch.path, seconds: 3)
        try await HLSFixtures.fragmentedMP4("fmp4", in: scratch.path, seconds: 3)
        try await HLSFixtures.byteRanges("ranges", in: scratch.path, seconds: 3)
        try await HLSFixtures.vod("event", in: scratch.path, seconds: 3)
        // With B-frames (presentation order differs from decode order), for a delay stage to hold.
        try await HLSFixtures.vod("bframes", in: scratch.path, seconds: 3, options: ["-preset", "veryfast", "-bf", "2"])
        // An EVENT playlist that has ended: ENDLIST closes it, as a finished event's does.
        let event = try String(contentsOfFile: scratch.file("event.m3u8"), encoding: .utf8)
            .replacingOccurrences(of: "#EXT-X-PLAYLIST-TYPE:VOD", with: "#EXT-X-PLAYLIST-TYPE:EVENT")
        try event.write(toFile: scratch.file("event.m3u8"), atomically: true, encoding: .utf8)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        // All at once: each plays in real time and records its own file.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for playlist in ["ts.m3u8", "fmp4.m3u8", "ranges.m3u8", "event.m3u8"] {
                group.addTask { _ = try await expectTone(server, playlist, scratch: scratch, seconds: 3) }
            }
            // Through a delay stage, every frame: it holds media in decode order, B-frames too.
            group.addTask {
                let recording = scratch.file("bframes.mkv")
                let delayed = try await Castline.run(["listen", server.url("bframes.m3u8"), "--output", "null", "--delay", "1s",
                                                      "--record", recording], timeout: .seconds(40))
                #expect(delayed.status == 0, "\(delayed.stderr)")
                let frames = try await ChildProcess.run("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time",
                                                                    "-of", "csv=p=0", recording]).stdout.split(separator: "\n").count
                #expect(frames == 90, "\(frames) of the 90 frames through the delay")
            }
            try await group.waitForAll()
        }
        // Byte ranges: one file, fetched in parts.
        #expect(server.requests(of: "ranges.ts") >= 3, "\(server.requests(of: "ranges.ts")) ranged GETs")
    }

    @Test("packed audio (ADTS AAC with and without ID3 timestamps, MP3, AC-3) and MPEG-TS named .aac: each plays whole, the tone intact")
    func packedAudio() async throws {
        let scratch = try Scratch()
        try await HLSFixtures.packedAudio("aac-id3", in: scratch.path, format: "adts", codec: "aac", timestamps: true)
        try await HLSFixtures.packedAudio("aac", in: scratch.path, format: "adts", codec: "aac", timestamps: false)
        try await HLSFixtures.packedAudio("mp3", in: scratch.path, format: "mp3", codec: "libmp3lame", timestamps: true)
        try await HLSFixtures.packedAudio("ac3", in: scratch.path, format: "ac3", codec: "ac3", timestamps: false)
        try await HLSFixtures.transportStreamNamedAAC("mislabelled", in: scratch.path)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        // All at once: each plays in real time and records its own file.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for playlist in ["aac-id3.m3u8", "aac.m3u8", "mp3.m3u8", "ac3.m3u8", "mislabelled.m3u8"] {
                group.addTask {
                    let result = try await expectTone(server, playlist, scratch: scratch, seconds: 3)
                    #expect(!result.stderr.contains("Internal data stream error"), "\(playlist): \(result.stderr)")
                }
            }
            // Not only audio-only: a listen that records the encoded stream, and one that plays through a delay.
            group.addTask {
                let recording = scratch.file("aac-id3.mkv")
                let recorded = try await Castline.run(["listen", server.url("aac-id3.m3u8"), "--output", "null", "--record", recording],
                                                      timeout: .seconds(40))
                #expect(recorded.status == 0, "\(recorded.stderr)")
                let media = try await ProbedMedia.probe(recording)
                #expect(media.stream("audio")?.codec == "aac" && abs(media.duration - 3) <= 0.2, "\(media)")
            }
            // Through a delay stage: the whole of it comes out behind, the tone intact.
            group.addTask {
                _ = try await expectTone(server, "aac-id3.m3u8", scratch: scratch, seconds: 3, extra: ["--delay", "1s"], recording: "delayed")
            }
            try await group.waitForAll()
        }
    }

    @Test("a live playlist that stops growing: said from the first overdue segment (and in the source's figures), not only when --end-after runs out")
    func liveStreamStops() async throws {
        let scratch = try Scratch()
        try await HLSFixtures.vod("stopped", in: scratch.path, seconds: 3, video: false)
        let live = try String(contentsOfFile: scratch.file("stopped.m3u8"), encoding: .utf8)
            .replacingOccurrences(of: "#EXT-X-ENDLIST\n", with: "").replacingOccurrences(of: "#EXT-X-PLAYLIST-TYPE:VOD\n", with: "")
        try live.write(toFile: scratch.file("stopped.m3u8"), atomically: true, encoding: .utf8)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        let json = scratch.file("stats.jsonl")
        let result = try await Castline.run(["listen", server.url("stopped.m3u8"), "--audio-only", "--output", "null",
                                             "--end-after", "4s", "--stats-json", json], timeout: .seconds(30))
        #expect(result.status == 0, "\(result.stderr)")
        let waiting = try #require(result.stderr.range(of: "waiting for new media: the playlist has listed no new segment for 1.5 s"),
                                   "\(result.stderr)")
        let ended = try #require(result.stderr.range(of: "no new media for 4s"), "\(result.stderr)")
        #expect(waiting.lowerBound < ended.lowerBound)
        let figures = try String(contentsOfFile: json, encoding: .utf8).split(separator: "\n")
            .compactMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .compactMap { $0["waiting_for_media_s"] as? Double }
        #expect(!figures.isEmpty && figures.allSatisfy { $0 >= 0 && $0 < 4 }, "\(figures)")
    }

    @Test("a live playlist of byte ranges into one growing file (ffmpeg's single_file, served by nginx): its window slides with EXT-X-MEDIA-SEQUENCE stuck at 0, and 10 s are recorded whole")
    func liveSingleFile() async throws {
        try await withIngest { _, endpoints in
            let folder = endpoints.hlsDirectory
            let ffmpeg = ChildProcess(executable: "/usr/bin/ffmpeg", arguments: ["-nostdin", "-v", "error", "-re"]
                + HLSFixtures.inputs(seconds: 30, video: true) + HLSFixtures.codecs(video: true)
                + ["-f", "hls", "-hls_time", "1", "-hls_list_size", "4", "-hls_flags", "single_file", "\(folder)/single.m3u8"])
            try ffmpeg.start()
            defer { Task { await ffmpeg.terminate() } }
            // Listened to from the moment ffmpeg starts (the playlist not there yet): its window of
            // four slides after four seconds, well inside the ten recorded.
            let scratch = try Scratch()
            let recording = scratch.file("single.mkv")
            let result = try await Castline.run(["listen", "\(endpoints.httpBaseURL)/hls/single.m3u8", "--wait-for-live", "--output", "null",
                                                 "--record", recording, "--duration", "10s"], timeout: .seconds(45))
            #expect(result.status == 0, "\(result.stderr)")
            #expect(!result.stderr.contains("skipped") && !result.stderr.contains("waiting for new media"), "\(result.stderr)")
            let media = try await ProbedMedia.probe(recording)
            #expect(media.duration >= 9.5, "recorded \(media.duration) s: \(result.stderr)")
        }
    }

    @Test("AES-128: the key fetched once, the IV from the tag or from the sequence number")
    func encrypted() async throws {
        let scratch = try Scratch()
        try await HLSFixtures.encrypted("iv", in: scratch.path, withIV: true)
        try await HLSFixtures.encrypted("seq", in: scratch.path, withIV: false)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        for name in ["iv", "seq"] {
            _ = try await expectTone(server, "\(name).m3u8", scratch: scratch, seconds: 3)
            #expect(server.requests(of: "\(name).key") == 1, "\(name): key fetched \(server.requests(of: "\(name).key")) times")
        }
        // Another key in its place: the segment decrypts to noise, and the key is named as the likely fault.
        try Data(repeating: 7, count: 16).write(to: URL(fileURLWithPath: "\(scratch.path)/iv.key"))
        let wrong = try await Castline.run(["listen", server.url("iv.m3u8"), "--output", "null"], timeout: .seconds(20))
        #expect(wrong.status == 2 && wrong.stderr.contains("the key (or its IV) is probably wrong"), "\(wrong.stderr)")
    }

    @Test("SAMPLE-AES: one clear line and exit 2")
    func sampleAES() async throws {
        let scratch = try Scratch()
        _ = try scratch.write("drm.m3u8", """
            #EXTM3U
            #EXT-X-TARGETDURATION:2
            #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://key",KEYFORMAT="com.apple.streamingkeydelivery"
            #EXTINF:2.0,
            a.ts
            #EXT-X-ENDLIST
            """)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        let result = try await Castline.run(["listen", server.url("drm.m3u8"), "--output", "null"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("SAMPLE-AES"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").filter { $0 != "connecting" }.count == 1, "\(result.stderr)")
    }

    @Test("a discontinuity between two unrelated encodes: 6 s recorded, no jump")
    func discontinuity() async throws {
        let scratch = try Scratch()
        try await HLSFixtures.discontinuity("joined", in: scratch.path)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        _ = try await expectTone(server, "joined.m3u8", scratch: scratch, seconds: 6)
    }

    @Test("a multivariant playlist with three variants: a chosen one is kept encoded; auto switches up by throughput")
    func threeVariants() async throws {
        let scratch = try Scratch()
        try await HLSFixtures.threeVariants(in: scratch.path)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        let recording = scratch.file("mid.mkv")
        let chosen = try await Castline.run(["listen", server.url("master.m3u8"), "--rendition", "640x360", "--output", "null",
                                             "--record", recording], timeout: .seconds(40))
        #expect(chosen.status == 0, "\(chosen.stderr)")
        let media = try await ProbedMedia.probe(recording)
        #expect(media.stream("video")?.fields["width"] == "640")
        #expect(abs(media.duration - 6) <= 0.3, "recorded \(media.duration) s")
        #expect(server.requests(of: "low-0.ts") == 0 && server.requests(of: "high-0.ts") == 0, "fetched only the chosen variant")
        let auto = try await Castline.run(["listen", server.url("master.m3u8"), "--output", "null", "--stats-json", "-"],
                                          timeout: .seconds(40))
        #expect(auto.status == 0, "\(auto.stderr)")
        let renditions = jsonLines(auto.stdout).filter { $0["event"] as? String == "rendition-changed" }.compactMap { $0["rendition"] as? String }
        // Players start on the first variant listed; loopback carries the best, so it switches up.
        #expect(renditions.first == "320x240 400k", "\(renditions)")
        #expect(renditions.last == "960x540 1800k", "\(renditions)")
    }

    @Test("a long VOD is read 30 s ahead of what plays, not fetched whole")
    func readsAheadByTime() async throws {
        let scratch = try Scratch()
        // 90 s of 1 s audio segments: 1.4 MB, which a limit in bytes alone would fetch at once.
        try await HLSFixtures.vod("long", in: scratch.path, seconds: 90, video: false)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        let result = try await Castline.run(["listen", server.url("long.m3u8"), "--audio-only", "--output", "null",
                                             "--duration", "3s"], timeout: .seconds(30))
        #expect(result.status == 0, "\(result.stderr)")
        let fetched = (0..<90).filter { server.requests(of: "long-\($0).ts") > 0 }
        // 30 s ahead of 3 s played, and the segment that crossed the mark: no fewer than 30, far from 90.
        #expect(fetched.count >= 30 && fetched.count <= 40, "\(fetched.count) segments fetched")
        #expect(fetched == Array(0..<fetched.count), "fetched out of order: \(fetched)")
    }

    @Test("audio only from a separate EXT-X-MEDIA audio rendition: no video segment is fetched")
    func separateAudio() async throws {
        let scratch = try Scratch()
        try await HLSFixtures.separateAudio(in: scratch.path)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        let result = try await expectTone(server, "master.m3u8", scratch: scratch, seconds: 3)
        #expect(result.stderr.contains("audio English"), "\(result.stderr)")
        #expect(server.requests(of: "video.m3u8") == 0 && server.requests(of: "video-0.ts") == 0,
                "video fetched: \(server.requests(of: "video.m3u8")) playlist, \(server.requests(of: "video-0.ts")) segment")
    }

    @Test("with video, a separate audio rendition plays in step with the picture by their timestamps")
    func separateAudioInStep() async throws {
        let scratch = try Scratch()
        // The sound's timestamps run 0.5 s after the picture's (ffmpeg's first audio frame lands at 0.479).
        try await HLSFixtures.separateAudio(in: scratch.path, audioLate: 0.5)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        let recording = scratch.file("both.mkv")
        let result = try await Castline.run(["listen", server.url("master.m3u8"), "--output", "null", "--record", recording,
                                             "--stats-json", "-"], timeout: .seconds(30))
        #expect(result.status == 0, "\(result.stderr)")
        // Buffered as a player's buffer: what both tracks hold ahead, never more than the 3 s there are
        // (each track's fetched seconds were once summed: 6 s of a 3 s stream).
        let buffered = jsonLines(result.stdout).compactMap { $0["hls_buffered_s"] as? Double }
        #expect(!buffered.isEmpty && buffered.allSatisfy { $0 <= 3.05 }, "hls_buffered_s \(buffered)")
        let probe = try await ChildProcess.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,start_time",
                                                                    "-of", "csv=p=0", recording])
        let starts = Dictionary(probe.stdout.split(separator: "\n").compactMap { line -> (String, Double)? in
            let fields = line.split(separator: ",")
            guard fields.count == 2, let start = Double(fields[1]) else { return nil }
            return (String(fields[0]), start)
        }, uniquingKeysWith: { first, _ in first })
        let audio = try #require(starts["audio"], "\(probe.stdout)")
        let video = try #require(starts["video"], "\(probe.stdout)")
        #expect(abs((audio - video) - 0.479) < 0.03, "audio starts \(audio - video) s after the picture")
    }
}
