import Foundation
import Synchronization

/// Single keys from a terminal on stdin (space, q), without Enter or echo.
/// Does nothing at all when stdin is not a terminal.
final class KeyReader: @unchecked Sendable {  // the saved mode is written once, before the reading thread starts
    private var saved = termios()
    private var active = false

    /// Starts reading; `handler` runs on a background thread for each key.
    func start(_ handler: @escaping @Sendable (Character) -> Void) {
        guard isatty(STDIN_FILENO) == 1, tcgetattr(STDIN_FILENO, &saved) == 0 else { return }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        guard tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0 else { return }
        active = true
        KeyReader.restoreAtExit(saved)
        Thread.detachNewThread {
            var byte: UInt8 = 0
            while read(STDIN_FILENO, &byte, 1) == 1 {
                handler(Character(UnicodeScalar(byte)))
            }
        }
    }

    func stop() {
        guard active else { return }
        var mode = saved
        tcsetattr(STDIN_FILENO, TCSANOW, &mode)
        active = false
    }

    /// A second Ctrl-C exits at once: the terminal must come back as it was even then.
    private static func restoreAtExit(_ mode: termios) {
        savedMode.withLock { $0 = mode }
        atexit {
            if var mode = KeyReader.savedMode.withLock({ $0 }) { tcsetattr(STDIN_FILENO, TCSANOW, &mode) }
        }
    }

    /// The terminal mode to restore at exit.
    private static let savedMode = Mutex<termios?>(nil)
}
