import Foundation

/// Status and errors go to stderr; stdout is for machine output only.
public enum Terminal {
    /// A line of its own: on a terminal, the status line drawn in place is cleared first (the
    /// renderer draws it again below), so the line is not written onto its end.
    public static func status(_ line: String) {
        write((stderrIsTerminal ? "\r\u{1B}[K" : "") + line + "\n")
    }

    public static func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    public static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// The terminal's width in columns, when stderr is one.
    static var columns: Int? {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }
}

/// Exit codes: 0 done, 1 failed while running, 2 bad input (file, flags, environment).
public enum ExitStatus {
    public static let failed: Int32 = 1
    public static let badInput: Int32 = 2
    /// An alarm `--fail-on` names was raised.
    public static let alarm: Int32 = 3
}
