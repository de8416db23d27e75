import CastlineKit
import LocalIngest

/// `castline doctor`: GStreamer, every element and program castline needs, and the Debian package of each missing one.
public enum Doctor {
    static let programs: [(name: String, package: String, purpose: String)] = [
        ("nginx", "nginx-light", "castline ingest (with libnginx-mod-rtmp)"),
        ("stunnel4", "stunnel4", "castline ingest: RTMPS"),
        ("openssl", "openssl", "castline ingest: certificates"),
        ("dot", "graphviz", "castline graph -o x.svg"),
    ]

    /// Prints the table on stdout; the exit status (1 with the apt-get line for what is missing).
    public static func report() -> Int32 {
        Gst.initialize()
        print(Gst.versionString)
        var missing: [String] = []
        func line(_ present: Bool, _ name: String, _ package: String, _ purpose: String) {
            if !present { missing.append(package) }
            print("\(present ? "ok     " : "MISSING") \(name.padding(16)) \(package.padding(28)) \(purpose)")
        }
        for entry in ElementCatalog.entries {
            line(Gst.hasElement(entry.element), entry.element, entry.package, entry.purpose)
        }
        for program in programs {
            line(ChildProcess.which(program.name) != nil, program.name, program.package, program.purpose)
        }
        // Not a package: a sound output is only needed to hear a listen, and --output null does without.
        let sound: String?
        do { sound = try AudioSink.outputProblem() } catch { sound = "\(error)" }
        print("\(sound == nil ? "ok     " : "none   ") \("sound output".padding(16)) \("PulseAudio or ALSA".padding(28)) "
              + (sound ?? "listen's default output"))
        let window: String?
        do { window = try VideoSink.outputProblem() } catch { window = "\(error)" }
        print("\(window == nil ? "ok     " : "none   ") \("video window".padding(16)) \("an X display".padding(28)) "
              + (window ?? "listen --output window"))
        guard missing.isEmpty else {
            Terminal.status("missing: install them with: apt-get install \(Array(Set(missing)).sorted().joined(separator: " "))")
            return ExitStatus.failed
        }
        print("everything castline needs is installed")
        return 0
    }
}

extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
