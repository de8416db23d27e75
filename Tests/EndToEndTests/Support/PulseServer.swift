import Foundation
import LocalIngest

/// A PulseAudio server of the test's own, as a desktop has one: its own socket (only the
/// processes given `environment` see it) and a null sink whose monitor is a capture source.
struct PulseServer {
    static let sink = "castline_test"
    let process: ChildProcess
    /// `PULSE_SERVER` for the processes that should use it.
    let environment: [String: String]
    var monitor: String { "\(Self.sink).monitor" }

    struct Unavailable: Error, CustomStringConvertible { let description: String }

    static func start(in scratch: Scratch) async throws -> PulseServer {
        let home = scratch.file("pulse")
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let socket = home + "/native"
        let process = ChildProcess(executable: "/usr/bin/pulseaudio", arguments: [
            "--daemonize=no", "--exit-idle-time=-1", "-n", "--disable-shm=yes", "--log-target=stderr",
            "--load=module-null-sink sink_name=\(sink)",
            "--load=module-native-protocol-unix socket=\(socket) auth-anonymous=1",
        ], environment: ProcessInfo.processInfo.environment.merging(["HOME": home, "PULSE_RUNTIME_PATH": home + "/run"]) { $1 })
        try process.start()
        let server = PulseServer(process: process, environment: ["PULSE_SERVER": "unix:" + socket])
        // Ready once a client is answered.
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, process.exitStatus == nil {
            let info = try await ChildProcess.run("/usr/bin/pactl", ["info"], environment: server.environment)
            if info.status == 0 { return server }
            try await Task.sleep(for: .milliseconds(50))
        }
        _ = await process.terminate()
        throw Unavailable(description: "pulseaudio did not start: \(process.standardError.suffix(400))")
    }

    /// A tone played into the null sink, heard on its monitor, until stopped.
    func playTone(frequency: Int) throws -> ChildProcess {
        let player = ChildProcess(executable: "/usr/bin/gst-launch-1.0", arguments: [
            "-q", "audiotestsrc", "is-live=true", "freq=\(frequency)", "volume=0.5", "!", "pulsesink", "device=\(Self.sink)",
        ], environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
        try player.start()
        return player
    }

    func stop() async { _ = await process.terminate() }
}
