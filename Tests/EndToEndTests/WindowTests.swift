import Foundation
import LocalIngest
import Testing

/// The `video` sink shows the picture in a real window, on an X display of the test's own.
@Suite("a video window, end to end", .serialized, .timeLimit(.minutes(2)))
struct WindowTests {
    @Test("the test signal's colour bars, shown in a window: a screenshot of the display has them; without a display, one line and exit 2")
    func showsTheBars() async throws {
        let scratch = try Scratch()
        let file = try scratch.write("window.yaml", """
            version: 1
            name: window
            source: { test: { video: { width: 320, height: 240 } } }
            sinks: [ { video: {} } ]
            """)
        let noDisplay = try await Castline.run(["run", file, "--duration", "1s"], environment: ["DISPLAY": ":97"], timeout: .seconds(20))
        #expect(noDisplay.status == 2, "\(noDisplay.stderr)")
        #expect(noDisplay.stderr.contains("cannot open a window on the display \":97\""), "\(noDisplay.stderr)")

        let display = try await XvfbDisplay.start()
        defer { Task { await display.stop() } }
        // A bare Xvfb resets as its last client leaves and refuses connections for a moment: a
        // window opened just after a screenshot or another castline must still open (11 runs
        // of 20 did not, once).
        for _ in 0..<4 {
            let quick = try await Castline.run(["run", file, "--duration", "0.2s"], environment: display.environment, timeout: .seconds(20))
            #expect(quick.status == 0, "\(quick.stderr)")
        }
        let run = try Castline.start(["run", file], environment: display.environment)
        defer { run.signal(SIGKILL) }
        // The bars (75 %: yellow, cyan, magenta) in the screenshot, once the window is drawn.
        func barPixels(_ pixels: [UInt8]) -> [Int] {
            let bars: [(Int, Int, Int)] = [(191, 191, 0), (0, 191, 191), (191, 0, 191)]
            return bars.map { bar in
                stride(from: 0, to: pixels.count - 2, by: 3).filter {
                    abs(Int(pixels[$0]) - bar.0) < 24 && abs(Int(pixels[$0 + 1]) - bar.1) < 24 && abs(Int(pixels[$0 + 2]) - bar.2) < 24
                }.count
            }
        }
        var seen = [0, 0, 0]
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline, run.exitStatus == nil, seen.min() ?? 0 < 2_000 {
            // The test's own screenshot may meet the server's reset as its previous one leaves
            // (x11grab: "Cannot open display"): it is taken again, until the deadline.
            guard let pixels = try? await display.screenshot(into: scratch) else { continue }
            seen = barPixels(pixels)
        }
        // Each bar is 1/7 of 320 px wide and 7/12 of 240 px high: about 6,400 pixels.
        #expect(seen.allSatisfy { $0 >= 2_000 }, "yellow, cyan, magenta pixels: \(seen); \(run.standardError)")
        let status = await Castline.interrupt(run)
        #expect(status == 0, "\(run.standardError)")
    }

    @Test("listen --output window with no sound device plays the picture, says it plays without sound, exit 0")
    func windowWithoutSound() async throws {
        let scratch = try Scratch()
        try await HLSFixtures.vod("av", in: scratch.path, seconds: 2)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        let display = try await XvfbDisplay.start()
        defer { Task { await display.stop() } }
        // No PulseAudio to find, and this machine has no sound card for ALSA.
        let environment = display.environment.merging(["PULSE_SERVER": "unix:\(scratch.file("no-pulse"))"]) { $1 }
        let result = try await Castline.run(["listen", server.url("av.m3u8"), "--output", "window"], environment: environment,
                                            timeout: .seconds(30))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("no sound device") && result.stderr.contains("playing without sound"), "\(result.stderr)")
    }
}
