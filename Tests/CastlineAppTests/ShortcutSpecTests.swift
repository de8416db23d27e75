import Foundation
import CastlineKit
import StagePlugins
import Testing
@testable import CastlineApp

/// `listen` and `broadcast` build their pipeline from flags, typed, without a file: what they
/// build, checked and completed, is what loading the same pipeline as a file gives.
@Suite("shortcuts build the spec a file would")
struct ShortcutSpecTests {
    static let environment = ["KEY": "abc123", "PASS": "0123456789ab"]

    /// Built from flags and completed; then written out and loaded back as a file is.
    func roundTrip(_ build: PipelineFiles.BuildSpec) throws -> (built: PipelineSpec, loaded: PipelineSpec) {
        let registry = PipelineFiles.registry
        let built = try build(Self.environment, false).completed(catalog: registry, origin: "castline test")
        let loader = PipelineLoader(catalog: registry, environment: Self.environment)
        let loaded = try loader.load(yaml: built.yaml(catalog: registry), file: "written.yaml")
        return (built, loaded)
    }

    @Test func listenFlagsMakeTheSpecAFileWould() throws {
        var hls = ListenShortcut(url: "https://example.com/live.m3u8")
        (hls.delay, hls.maxDelay, hls.audioOnly, hls.figuresWatched) = (.seconds(10), .seconds(60), true, true)
        hls.timeout = .seconds(4)
        var rtmp = ListenShortcut(url: "rtmp://example.com/app")
        (rtmp.keyEnv, rtmp.output, rtmp.record) = ("KEY", .null, "/tmp/listen.mkv")
        var srt = ListenShortcut(url: "srt://example.com:9000")
        (srt.passphraseEnv, srt.output, srt.measureLatency) = ("PASS", .window, true)
        for shortcut in [hls, rtmp, srt] {
            let (built, loaded) = try roundTrip(shortcut.spec)
            #expect(built.components == loaded.components)
        }
        let built = try roundTrip(hls.spec).built
        #expect(built.stages.map(\.kind) == ["audio-only", "delay", "stats"])
        #expect(built.stages[1].options[DelayStage.initial] == .seconds(10))
        #expect(built.stages[1].options.isSet(DelayStage.step))  // filled in, not only read back as the default
        #expect(built.source.options[HLSSource.timeout] == .seconds(4))
        #expect(try roundTrip(rtmp.spec).built.source.options[Credentials.key]?.reveal() == "abc123")
    }

    @Test func broadcastFlagsMakeTheSpecAFileWould() throws {
        var test = BroadcastShortcut(urls: ["rtmps://example.com/app", "srt://example.com:9000"])
        (test.keyEnvs, test.passphraseEnv, test.size, test.fps, test.maxReconnects) = (["KEY"], "PASS", "640x360", 25, 3)
        test.record = "/tmp/broadcast.mkv"
        var file = BroadcastShortcut(url: "rtmp://example.com/app")
        (file.keyEnvs, file.source) = (["KEY"], "/etc/hostname")
        var tone = BroadcastShortcut(url: "rtmp://example.com/app")
        (tone.keyEnvs, tone.audioOnly, tone.tone) = (["KEY"], true, 440)
        for shortcut in [test, file, tone] {
            let (built, loaded) = try roundTrip(shortcut.spec)
            #expect(built.components == loaded.components)
        }
        let built = try roundTrip(test.spec).built
        #expect(built.sinks.map(\.kind) == ["rtmp", "srt", "file"])
        #expect(built.sinks[1].options[PublishOptions.maxReconnects] == 3)
        let video = try #require(built.source.options[TestSource.videoOptions])
        #expect(video[TestSource.Video.width] == 640 && video[TestSource.Video.height] == 360 && video[TestSource.Video.fps] == 25)
        #expect(try roundTrip(tone.spec).built.source.options[TestSource.videoOptions] == nil)
    }

    @Test("the test picture is encoded by one x264 thread up to 720p30 at a fast preset, never finer than QP 20; a file's picture as x264 likes")
    func testPictureEncode() throws {
        func encode(_ configure: (inout BroadcastShortcut) -> Void) throws -> VideoEncoding? {
            var shortcut = BroadcastShortcut(url: "rtmp://example.com/app")
            shortcut.keyEnvs = ["KEY"]
            configure(&shortcut)
            let encode = try roundTrip(shortcut.spec).loaded.stages.first { $0.kind == EncodeStage.kind }
            return encode?.options[EncodeStage.videoOptions].map(VideoEncoding.init)
        }
        let standard = try #require(try encode { _ in })
        #expect(standard.threads == 1 && standard.qpMin == TestSource.encoderQPMin)
        #expect(try encode { $0.size = "1920x1080" }?.threads == 0)
        #expect(try encode { $0.fps = 60 }?.threads == 0)
        let medium = try #require(try encode { $0.preset = "medium" })
        #expect(medium.threads == 0 && medium.qpMin == TestSource.encoderQPMin)
        let file = try #require(try encode { $0.source = "/etc/hostname" })
        #expect(file.threads == 0 && file.qpMin == 0)
    }

    @Test func aValueOutOfItsRangeIsRefusedAsAFileWouldBe() throws {
        var shortcut = BroadcastShortcut(url: "rtmp://example.com/app")
        (shortcut.keyEnvs, shortcut.fps) = (["KEY"], 500)
        #expect(throws: ConfigErrors.self) { try roundTrip(shortcut.spec) }
        shortcut.keyEnvs = ["CASTLINE_NOT_SET"]
        #expect(throws: ConfigError.self) { try shortcut.spec(environment: [:], deferringUnsetSecrets: false) }
        let deferred = try shortcut.spec(environment: [:], deferringUnsetSecrets: true)
        #expect(deferred.neededAtRunTime == ["CASTLINE_NOT_SET"])
    }
}

extension ShortcutSpecTests {
    @Test("an odd picture size and an audio bitrate the encoders do not take are refused as flags, naming a value that works")
    func flagsTheEncodersRefuse() throws {
        func refusal(_ configure: (inout BroadcastShortcut) -> Void) -> String? {
            var shortcut = BroadcastShortcut(url: "rtmp://example.com/app")
            shortcut.keyEnvs = ["KEY"]
            configure(&shortcut)
            do { try shortcut.validate() } catch { return error.description }
            return nil
        }
        #expect(refusal { $0.size = "641x361" }?.contains("try 642x362") == true)
        #expect(refusal { $0.audioBitrate = Bitrate(bitsPerSecond: 1_000) }?.contains("8k to 320k") == true)
        #expect(refusal { $0.audioBitrate = Bitrate(bitsPerSecond: 1_000_000) }?.contains("8k to 320k") == true)
        #expect(refusal { $0.size = "640x360" } == nil)
        // A flag that shapes nothing published is refused, not ignored.
        let file = refusal { ($0.source, $0.signalFlags) = ("/etc/hostname", ["--size", "--tone"]) }
        #expect(file?.hasPrefix("--size and --tone: --source publishes the file's own") == true, "\(file ?? "")")
        #expect(refusal { ($0.audioOnly, $0.signalFlags) = (true, ["--fps"]) }?.contains("--audio-only publishes no video") == true)
        #expect(refusal { ($0.microphone, $0.signalFlags) = ("default", ["--size"]) }?.contains("sound only") == true)
        #expect(refusal { ($0.camera, $0.signalFlags) = ("/dev/video0", ["--size", "--fps"]) } == nil)
        #expect(refusal { ($0.audioOnly, $0.signalFlags) = (true, ["--tone"]) } == nil)
    }

    @Test("what is not an ingest URL is said to be that (a mistyped flag's value, a WHEP URL), never repeated (it may be a token), never taken for RTMP")
    func notAnIngestURL() {
        func refusal(_ urls: [String]) -> String? {
            do { try BroadcastShortcut(urls: urls).validate() } catch { return error.description }
            return nil
        }
        let token = refusal(["http://127.0.0.1:9/whip", "s3cr3t-token"])
        #expect(token?.contains("not a URL (a value of a mistyped flag?)") == true && token?.contains("s3cr3t") == false, "\(token ?? "")")
        #expect(refusal(["http://127.0.0.1:9/whep"])?.contains("WHEP (playback) endpoint") == true)
        #expect(refusal(["https://127.0.0.1:9/foo"])?.contains("give any other with --whip URL") == true)
        #expect(refusal(["rmtp://host/live"])?.contains("a rmtp:// URL was given") == true)
        #expect(refusal(["http://127.0.0.1:9/whip", "srt://127.0.0.1:9000"]) == nil)
    }

    @Test("paths given as flags are absolute in the spec, so a printed pipeline file runs from any folder")
    func flagPathsAreAbsolute() throws {
        var shortcut = BroadcastShortcut(url: "rtmps://example.com/app")
        (shortcut.keyFiles, shortcut.caFile, shortcut.record) = (["key.txt"], "tls/ca.pem", "out/take.mkv")
        let spec = try shortcut.spec(environment: [:], deferringUnsetSecrets: true)
        let here = FileManager.default.currentDirectoryPath
        #expect(spec.sinks[0].options[Credentials.keyFile] == here + "/key.txt")
        #expect(spec.sinks[0].options[RTMPSink.caFile] == here + "/tls/ca.pem")
        #expect(spec.sinks.last?.options[FileSink.path] == here + "/out/take.mkv")
    }
}

@Suite("monitor's stream names")
struct MonitorNameTests {
    @Test("a playlist's file name, with the folders that tell it from the others'; each name once; an RTMP or SRT stream's host, never its key")
    func names() {
        let shortcut = MonitorShortcut(urls: ["https://cdn.example.com/live/news.m3u8", "http://127.0.0.1:8080/b/news.m3u8",
                                              "rtmp://ingest.example.com/live/sk-live-1234", "srt://10.0.0.5:9000?streamid=abc",
                                              "http://a.example/sports.m3u8"])
        #expect(shortcut.listens.map(\.name) == ["live-news", "b-news", "ingest-example-com", "10-0-0-5", "sports"])
        let same = MonitorShortcut(urls: ["http://x/a/hls/index.m3u8", "http://x/b/hls/index.m3u8", "http://y/index.m3u8", "http://y/index.m3u8"])
        #expect(same.listens.map(\.name) == ["a-hls-index", "b-hls-index", "index", "index-2"])
        let backup = MonitorShortcut(urls: ["https://cdn1.tv/live/ch1/index.m3u8", "https://cdn2.tv/live/ch1/index.m3u8",
                                            "https://cdn1.tv/live/ch2/index.m3u8", "http://y/index.m3u8", "http://z/index.m3u8"])
        #expect(backup.listens.map(\.name) == ["cdn1-tv-ch1-index", "cdn2-tv-ch1-index", "ch2-index", "y-index", "z-index"])
        let numbered = MonitorShortcut(urls: ["http://y/index.m3u8", "http://y/index.m3u8", "http://x/index-2.m3u8"])
        #expect(numbered.listens.map(\.name) == ["index", "index-2", "index-2-2"])
    }
}
