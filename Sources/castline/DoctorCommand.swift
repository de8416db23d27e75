import ArgumentParser
import CastlineApp
import CastlineKit
import LocalIngest

struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check GStreamer and every element and program castline needs, naming the Debian package of each missing one.")

    func run() async throws {
        Gst.initialize()
        print(Gst.versionString)
        var missing: [String] = []
        for entry in ElementCatalog.entries {
            let present = Gst.hasElement(entry.element)
            if !present { missing.append(entry.package) }
            print("\(present ? "ok     " : "MISSING") \(entry.element.padding(16)) \(entry.package.padding(28)) \(entry.purpose)")
        }
        for program in Self.programs {
            let present = ChildProcess.which(program.name) != nil
            if !present { missing.append(program.package) }
            print("\(present ? "ok     " : "MISSING") \(program.name.padding(16)) \(program.package.padding(28)) \(program.purpose)")
        }
        if missing.isEmpty {
            print("everything castline needs is installed")
        } else {
            let packages = Array(Set(missing)).sorted().joined(separator: " ")
            Terminal.status("missing: install them with: apt-get install \(packages)")
            throw ExitCode(ExitStatus.failed)
        }
    }

    static let programs: [(name: String, package: String, purpose: String)] = [
        ("nginx", "nginx-light", "castline ingest (with libnginx-mod-rtmp)"),
        ("stunnel4", "stunnel4", "castline ingest: RTMPS"),
        ("openssl", "openssl", "castline ingest: certificates"),
        ("dot", "graphviz", "castline graph -o x.svg"),
    ]
}

extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
