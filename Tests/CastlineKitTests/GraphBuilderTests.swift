import CastlineKit
import Foundation
import StagePlugins
import Synchronization
import Testing

@Suite("GraphBuilder: the converters, encoders and branches it inserts")
struct GraphBuilderTests {
    let builder = GraphBuilder()

    @Test("raw audio to a WAV file: converted, not encoded")
    func wavTakesRaw() throws {
        let built = try builder.build(ComponentRegistry.builtin.plan(loadSpec("""
            version: 1
            source: { test: { audio: {} } }
            sinks: [ { file: /tmp/castline-never-written.wav } ]
            """)))
        let made = factories(in: built.pipeline)
        #expect(made.contains("wavenc"))
        #expect(made.contains("audioconvert"))
        #expect(!made.contains("voaacenc"))
    }

    @Test("a sink that takes none of the pipeline's streams is bad input at its key path, not a pipeline that never prerolls")
    func sinkWithNothingToTake() throws {
        #expect {
            try builder.build(ComponentRegistry.builtin.plan(loadSpec("""
                version: 1
                source: { test: { video: {} } }
                sinks: [ { file: /tmp/castline-never-written.wav } ]
                """)))
        } throws: { error in
            let error = error as? BuildError
            return error?.keyPath == "sinks[0].file" && error?.isBadInput == true
                && "\(error.map(String.init(describing:)) ?? "")".contains("it takes audio, and the pipeline carries only video")
        }
    }

    @Test("raw audio and video to Matroska with no encode stage: h264 and aac are inserted")
    func matroskaGetsEncoders() throws {
        let built = try builder.build(ComponentRegistry.builtin.plan(loadSpec("""
            version: 1
            source: { test: {} }
            sinks: [ { file: /tmp/castline-never-written.mkv } ]
            """)))
        let made = factories(in: built.pipeline)
        #expect(made.contains("x264enc"))
        #expect(made.contains("voaacenc"))
        #expect(made.contains("matroskamux"))
    }

    @Test("a stream no sink takes is discarded, and said so")
    func unusedStreamIsDiscarded() async throws {
        let plan = try ComponentRegistry.builtin.plan(loadSpec("""
            version: 1
            source: { test: {} }
            sinks: [ { audio: {} } ]
            """))
        let built = try builder.build(plan)
        plan.channel.finish()
        var notices: [String] = []
        for await event in plan.channel.events { if case .notice(let text) = event.kind { notices.append(text) } }
        // No video branch is built at all: nothing encodes or converts video.
        let made = factories(in: built.pipeline)
        #expect(!made.contains("videoconvert") && !made.contains("x264enc"))
        #expect(notices.contains { $0.contains("video is not taken by any sink") })
    }

    @Test("a stage for none of the streams carried (a video filter on sound) is said to do nothing; audio-only, which drops, is not")
    func stageForNoCarriedStream() async throws {
        let plan = try ComponentRegistry.builtin.plan(loadSpec("""
            version: 1
            source: { test: { audio: {} } }
            stages: [ { audio-only: {} }, { gst: "videoflip method=1" }, { gain: { db: -3 } } ]
            sinks: [ { null: {} } ]
            """))
        _ = try builder.build(plan)
        plan.channel.finish()
        var notices: [String] = []
        for await event in plan.channel.events { if case .notice(let text) = event.kind { notices.append(text) } }
        let nothing = notices.filter { $0.contains("does nothing here") }
        #expect(nothing == ["stages[1].gst: does nothing here: it works on none of the streams the pipeline carries (audio)"], "\(notices)")
    }

    @Test("two sinks share a stream through a tee")
    func twoSinksTee() throws {
        let built = try builder.build(ComponentRegistry.builtin.plan(loadSpec("""
            version: 1
            source: { test: { audio: {} } }
            sinks: [ { null: {} }, { audio: {} } ]
            """)))
        #expect(factories(in: built.pipeline).contains("tee"))
    }

    @Test("three RTMP destinations are parsed once, before the tee; RTMP and SRT video, each in its own framing")
    func sharedFraming() throws {
        func parsers(_ sinks: String) throws -> [String] {
            let built = try builder.build(ComponentRegistry.builtin.plan(loadSpec("""
                version: 1
                source: { test: {} }
                stages: [ { encode: {} } ]
                sinks: \(sinks)
                """)))
            return factories(in: built.pipeline).filter { $0.hasSuffix("parse") }
        }
        let rtmp = "{ rtmp: { url: rtmp://127.0.0.1/live, key: k } }"
        // The encoder's own parser and the shared one, for each stream.
        #expect(try parsers("[\(rtmp), \(rtmp), \(rtmp)]").sorted() == ["aacparse", "aacparse", "h264parse", "h264parse"])
        // FLV takes H.264 as avc, MPEG-TS as byte-stream: a parser on each branch. Both take raw AAC: one.
        #expect(try parsers("[\(rtmp), { srt: { url: 'srt://127.0.0.1:9000' } }]").sorted()
            == ["aacparse", "aacparse", "h264parse", "h264parse", "h264parse"])
    }

    @Test("a gst stage works on the stream its caps name, and no other")
    func gstStagePicksItsStream() throws {
        let built = try builder.build(ComponentRegistry.builtin.plan(loadSpec("""
            version: 1
            source: { test: {} }
            stages: [ { gst: "audioecho delay=100000000" } ]
            sinks: [ { null: {} } ]
            """)))
        #expect(built.pipeline.element(named: "stage-gst0-audio") != nil)
        #expect(built.pipeline.element(named: "stage-gst0-video") == nil)
    }

    @Test("a gst element that does not exist is an error at its key path")
    func gstStageUnknownElement() throws {
        #expect {
            try ComponentRegistry.builtin.plan(loadSpec("""
                version: 1
                source: { test: {} }
                stages: [ { gst: "nosuchelement" } ]
                sinks: [ { null: {} } ]
                """))
        } throws: { error in
            (error as? BuildError)?.keyPath == "stages[0].gst.description" && "\(error)".contains("nosuchelement")
        }
    }

    @Test("an rtmp sink without a key, with http, or with ca-file on rtmp:// is refused at its key path")
    func rtmpSinkChecks() throws {
        let cases: [(String, String)] = [
            ("url: rtmp://h/app", "sinks[0].rtmp"),
            ("{ url: http://h/app, key: k }", "sinks[0].rtmp.url"),
            ("{ url: rtmp://h, key: k }", "sinks[0].rtmp.url"),
            ("{ url: rtmp://h/app, key: k, ca-file: /etc/hostname }", "sinks[0].rtmp.ca-file"),
            ("{ url: rtmps://h/app, key: k, fingerprint: ab:cd }", "sinks[0].rtmp.fingerprint"),
        ]
        for (options, keyPath) in cases {
            #expect(throws: (any Error).self, "\(options)") {
                do {
                    _ = try ComponentRegistry.builtin.plan(loadSpec("""
                        version: 1
                        source: { test: {} }
                        sinks: [ { rtmp: \(options) } ]
                        """))
                } catch let error as BuildError {
                    #expect(error.keyPath == keyPath, "\(options): \(error)")
                    throw error
                }
            }
        }
    }

    @Test("a WHIP sink gets the constrained-baseline H.264 its offer names: the encoder put in for it makes that profile, and a file's H.264 (High, with B-frames) is encoded again, not passed through")
    func whipGetsConstrainedBaseline() throws {
        func built(source: String, stages: String = "[]") throws -> [Element] {
            let pipeline = try builder.build(ComponentRegistry.builtin.plan(loadSpec("""
                version: 1
                source: \(source)
                stages: \(stages)
                sinks: [ { whip: { url: "http://127.0.0.1:9/whip" } } ]
                """))).pipeline
            return elements(in: pipeline)
        }
        func profiles(_ elements: [Element]) -> [String] {
            elements.compactMap { $0.factoryName == "capsfilter" ? $0.caps("caps")?.structure(at: 0) : nil }
                .filter { $0.name == "video/x-h264" }.compactMap { $0.string("profile") }
        }
        #expect(profiles(try built(source: "{ test: {} }")) == ["constrained-baseline"])
        let scratch = try FileLoopTests.Scratch(bFrames: true)
        let file = "{ uri: { uri: \"file://\(scratch.media)\" } }"
        #expect(profiles(try built(source: file)) == ["constrained-baseline"])
        // A stage that reads any form (stats) gets it decoded, so the sink's encoder makes the profile.
        #expect(profiles(try built(source: file, stages: "[ { stats: {} } ]")) == ["constrained-baseline"])
        // Before a stage that takes it encoded only (a delay), `when: needed` asked for constrained
        // baseline does not take the file's H.264 as that.
        let needed = "[ { encode: { when: needed, video: { profile: constrained-baseline }, audio: { codec: opus } } }, { delay: { initial: 1s } } ]"
        #expect(profiles(try built(source: file, stages: needed)) == ["constrained-baseline"])
    }
}
