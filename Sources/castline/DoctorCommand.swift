import ArgumentParser
import CastlineApp

struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check GStreamer and every element and program castline needs, naming the Debian package of each missing one.")

    func run() async throws {
        let status = Doctor.report()
        if status != 0 { throw ExitCode(status) }
    }
}
