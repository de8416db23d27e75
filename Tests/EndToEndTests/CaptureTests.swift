import Foundation
import LocalIngest
import Testing

/// The capture source against a real PulseAudio server (a null sink's monitor is the
/// microphone) and, with no camera on this machine, the test pattern through the camera's path.
@Suite("the capture source, end to end", .serialized, .timeLimit(.minutes(2)))
struct CaptureTests {
    @Test("a PulseAudio source and the camera's path: H.264 and AAC recorded, the tone played into the sink heard; a missing source or camera is one line, exit 2")
    func capturesSoundAndPicture() async throws {
        let scratch = try Scratch()
        let pulse = try await PulseServer.start(in: scratch)
        defer { Task { await pulse.stop() } }
        let tone = try pulse.playTone(frequency: 440)
        defer { tone.signal(SIGKILL) }
        func pipeline(_ name: String, source: String, sinks: String) throws -> String {
            try scratch.write("\(name).yaml", """
                version: 1
                name: \(name)
                source: { capture: \(source) }
                stages: [ { encode: {} } ]
                sinks: \(sinks)
                """)
        }
        let recording = scratch.file("captured.mkv"), sound = scratch.file("captured.wav")
        let file = try pipeline("capture", source: "{ audio: { api: pulse, device: \(pulse.monitor) }, video: { api: test, width: 320, height: 240, fps: 25 } }",
                                sinks: "[ { file: \(recording) }, { file: \(sound) } ]")
        let run = try await Castline.run(["run", file, "--duration", "3s"], environment: pulse.environment, timeout: .seconds(30))
        #expect(run.status == 0, "\(run.stderr)")
        let media = try await ProbedMedia.probe(recording)
        let video = try #require(media.stream("video"), "\(media)")
        #expect(video.codec == "h264" && video.fields["width"] == "320" && video.fields["avg_frame_rate"] == "25/1", "\(video.fields)")
        #expect(media.stream("audio")?.codec == "aac")
        #expect(abs(media.duration - 3) < 0.5, "recorded \(media.duration) s")
        let frequency = try await dominantFrequency(ofWAV: sound, scratch: scratch)
        #expect(abs(frequency - 440) < 15, "heard \(frequency) Hz")

        for (name, source, says) in [
            ("nosource", "{ audio: { api: pulse, device: nosuch } }",
             "source.capture.audio: PulseAudio has no source \"nosuch\" (list them with: pactl list short sources)"),
            ("nocamera", "{ video: { device: /dev/video97 } }",
             "source.capture.video.device: no video device \"/dev/video97\" (is the camera plugged in?"),
        ] {
            let bad = try await Castline.run(["run", try pipeline(name, source: source, sinks: "[ { null: {} } ]"), "--duration", "1s"],
                                            environment: pulse.environment, timeout: .seconds(20))
            #expect(bad.status == 2, "\(bad.stderr)")
            #expect(bad.stderr.contains(says), "\(bad.stderr)")
            #expect(bad.stderr.split(separator: "\n").filter { $0.contains("error") || $0.contains(name + ":") }.count == 1, "\(bad.stderr)")
        }
    }
}
