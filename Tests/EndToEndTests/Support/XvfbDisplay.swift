import Foundation
import LocalIngest

/// A virtual X display of the test's own (Xvfb on the first free display number), and
/// screenshots of it as RGB pixels.
struct XvfbDisplay {
    let process: ChildProcess
    /// `DISPLAY` for the processes that should draw on it.
    let environment: [String: String]
    let width = 640, height = 480

    struct Unavailable: Error, CustomStringConvertible { let description: String }

    static func start() async throws -> XvfbDisplay {
        // -displayfd: Xvfb picks a free display and writes its number once it accepts clients.
        let process = ChildProcess(executable: "/usr/bin/Xvfb", arguments: [
            "-displayfd", "1", "-screen", "0", "640x480x24", "-br", "-nolisten", "tcp",
        ])
        try process.start()
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, process.exitStatus == nil {
            // The number comes as Xvfb starts listening; a client that came at once was refused
            // once (x11grab: "Cannot open display"): ready when a screenshot can be taken.
            if let number = Int(process.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)) {
                let display = XvfbDisplay(process: process, environment: ["DISPLAY": ":\(number)"])
                if (try? await display.screenshot(into: nil)) != nil { return display }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        _ = await process.terminate()
        throw Unavailable(description: "Xvfb did not start: \(process.standardError.suffix(400))")
    }

    /// The whole screen now, as rows of RGB bytes (x11grab), in `scratch` or the temporary folder.
    func screenshot(into scratch: Scratch?) async throws -> [UInt8] {
        let name = "screen-\(UUID().uuidString).rgb"
        let file = scratch?.file(name) ?? NSTemporaryDirectory() + name
        defer { if scratch == nil { try? FileManager.default.removeItem(atPath: file) } }
        let grab = try await ChildProcess.run("/usr/bin/ffmpeg", [
            "-v", "error", "-f", "x11grab", "-video_size", "\(width)x\(height)", "-i", environment["DISPLAY"] ?? ":0",
            "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", file,
        ])
        guard grab.status == 0 else { throw Unavailable(description: "x11grab: \(grab.stderr)") }
        return Array(try Data(contentsOf: URL(fileURLWithPath: file)))
    }

    func stop() async { _ = await process.terminate() }
}
