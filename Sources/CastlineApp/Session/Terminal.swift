import Foundation

/// Status and errors go to stderr; stdout is for machine output only.
public enum Terminal {
    public static func status(_ line: String) {
        write(line + "\n")
    }

    public static func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    public static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
}

/// Exit codes: 0 done, 1 failed while running, 2 bad input (file, flags, environment).
public enum ExitStatus {
    public static let failed: Int32 = 1
    public static let badInput: Int32 = 2
}
