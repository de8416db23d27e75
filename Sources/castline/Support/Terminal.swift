import Foundation

/// Status and errors go to stderr; stdout is for machine output only.
enum Terminal {
    static func status(_ line: String) {
        write(line + "\n")
    }

    static func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
}

/// Exit codes: 0 done, 1 failed while running, 2 bad input (file, flags, environment).
enum ExitStatus {
    static let failed: Int32 = 1
    static let badInput: Int32 = 2
}
