import Foundation
import Synchronization

/// Status and errors go to stderr; stdout is for machine output only.
public enum Terminal {
    /// The status lines drawn in place at the bottom (one per pipeline), on a terminal.
    private static let block = Mutex<[String]>([])

    /// A line of its own: on a terminal it goes above the status lines drawn in place, which
    /// are drawn again below it (a line is never written onto their end).
    public static func status(_ line: String) {
        guard stderrIsTerminal else { return write(line + "\n") }
        block.withLock { shown in
            write(erase(shown.count) + line + "\n" + shown.joined(separator: "\n"))
        }
    }

    /// Draws `lines` in place of the status lines drawn before.
    static func drawStatus(_ lines: [String]) {
        block.withLock { shown in
            write(erase(shown.count) + lines.joined(separator: "\n"))
            shown = lines
        }
    }

    /// Leaves the status lines where they are, so what follows starts on a line of its own.
    static func endStatus() {
        block.withLock { shown in
            if !shown.isEmpty { write("\n") }
            shown = []
        }
    }

    /// Back to the first of `count` lines drawn in place, and everything from there cleared.
    private static func erase(_ count: Int) -> String {
        count > 1 ? "\r\u{1B}[\(count - 1)A\u{1B}[J" : "\r\u{1B}[K"
    }

    public static func write(_ text: String) {
        FileHandle.standardError.writeDiscardingErrors(Data(text.utf8))
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

extension FileHandle {
    /// Writes `data`, or drops it when nobody reads any more (a closed pipe: `castline … | head`),
    /// where Foundation's `write(_:)` would stop the process and lose what it was recording.
    /// False when the write failed.
    @discardableResult
    func writeDiscardingErrors(_ data: Data) -> Bool {
        (try? write(contentsOf: data)) != nil
    }
}
