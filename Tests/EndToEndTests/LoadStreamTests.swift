import Foundation
import LocalIngest
import Testing
import TestSupport

/// `castline load` of RTMP and SRT streams: a real nginx-rtmp fed by ffmpeg, and GStreamer's
/// own SRT listener (gst-launch-1.0), with viewers that read the container's timestamps.
@Suite("castline load: RTMP and SRT viewers", .serialized, .timeLimit(.minutes(2)))
struct LoadStreamTests {
    /// The running totals a load has written so far.
    private func readings(_ process: ChildProcess) -> [[String: Any]] {
        jsonLines(process.standardOutput, growing: true).filter { $0["event"] as? String == "load" }
    }

    @Test("""
        RTMP: 4 viewers play (first frame once 1 s of media came); the publisher stops: each viewer stalls once, \
        to the count, and says why; the stream key never shows
        """)
    func rtmpViewersStallWhenThePublisherStops() async throws {
        try await withIngest { _, endpoints in
            let key = "loadkey\(UInt16.random(in: 1000...9999))"
            let publisher = try publishTone(to: endpoints, key: key, seconds: 60)
            defer { publisher.signal(SIGKILL) }
            #expect(await endpoints.published(key: key).waitForSegments(1, timeout: .seconds(30)))
            let load = try Castline.start(["load", endpoints.rtmpURL, "--key-env", "LOAD_KEY", "--viewers", "4", "--ramp", "20/s",
                                           "--duration", "6s", "--stats-json", "-"], environment: ["LOAD_KEY": key])
            // All four playing, none stalled: then the publisher goes.
            let playing = await waitUntil(.seconds(15), every: .milliseconds(100)) {
                readings(load).last.map { $0["viewers_playing"] as? Double == 4 && $0["stalls"] as? Double == 0 } ?? false
            }
            #expect(playing, "\(load.standardOutput.suffix(600)) \(load.standardError)")
            publisher.signal(SIGKILL)
            let status = await load.waitForExit(timeout: .seconds(30))
            await load.waitForOutput()
            #expect(status == 0, "\(load.standardError)")
            let last = try #require(readings(load).last)
            #expect(last["viewers_started"] as? Double == 4 && last["viewers_failed"] as? Double == 0, "\(last)")
            #expect(last["stalls"] as? Double == 4, "\(last)")
            #expect((last["http_errors"] as? Double ?? 0) >= 4, "each viewer's connection ended: \(last)")
            let (p50, p95) = (last["ttff_p50_s"] as? Double ?? 0, last["ttff_p95_s"] as? Double ?? 0)
            #expect(p50 >= 1.0 && p95 < 3, "first frame p50 \(p50) s, p95 \(p95) s")
            // Each viewer took at least its first second of a 128 kbit/s AAC tone.
            #expect((last["bytes"] as? Double ?? 0) > 4 * 10_000, "\(last)")
            #expect(load.standardError.contains("stalls 4") && load.standardError.contains("note: the first error with no HTTP status: the server ended the stream"),
                    "\(load.standardError)")
            #expect(!load.standardOutput.contains(key) && !load.standardError.contains(key))
        }
    }

    @Test("SRT with a passphrase from the environment: 3 viewers of GStreamer's own listener play without a stall; a wrong passphrase fails them, and shows nowhere")
    func srtViewersOfAListener() async throws {
        let port = try FreePort.find(datagram: true)
        let passphrase = "load-passphrase-\(UInt16.random(in: 1000...9999))"
        let listener = ChildProcess(executable: "/usr/bin/gst-launch-1.0", arguments: [
            "-q", "videotestsrc", "is-live=true", "!", "video/x-raw,width=320,height=240,framerate=30/1", "!",
            "x264enc", "tune=zerolatency", "speed-preset=ultrafast", "key-int-max=30", "bitrate=300", "!", "mpegtsmux", "!",
            "srtsink", "uri=srt://127.0.0.1:\(port)?mode=listener", "passphrase=\(passphrase)", "wait-for-connection=false", "latency=50",
        ])
        try listener.start()
        defer { listener.signal(SIGKILL) }
        let url = "srt://127.0.0.1:\(port)"
        // A viewer with the wrong passphrase beside the right ones: the listener takes both.
        let wrong = "wrong-passphrase-\(UInt16.random(in: 1000...9999))"
        async let refusedRun = Castline.run(["load", url, "--passphrase-env", "SRT_PASS", "--viewers", "2", "--duration", "6s",
                                             "--timeout", "2s"], environment: ["SRT_PASS": wrong], timeout: .seconds(40))
        let result = try await Castline.run(["load", url, "--passphrase-env", "SRT_PASS", "--viewers", "3", "--ramp", "10/s",
                                             "--duration", "4s", "--stats-json", "-"],
                                            environment: ["SRT_PASS": passphrase], timeout: .seconds(40))
        #expect(result.status == 0, "\(result.stderr)")
        let last = try #require(jsonLines(result.stdout).last { $0["event"] as? String == "load" })
        #expect(last["viewers_started"] as? Double == 3 && last["viewers_failed"] as? Double == 0 && last["stalls"] as? Double == 0, "\(last)")
        #expect((last["ttff_p50_s"] as? Double ?? 0) >= 1.0 && (last["bytes"] as? Double ?? 0) > 3 * 20_000, "\(last)")

        let refused = try await refusedRun
        #expect(refused.status == 1 && refused.stderr.contains("error: every viewer failed: no media from the srt stream within 2 s (is it sending, with the same passphrase?)"),
                "\(refused.stderr)")
        #expect(!refused.stderr.contains(wrong) && !refused.stdout.contains(wrong))
    }
}
