import Dispatch
import Foundation

/// Watches one file for changes by looking at it every 10 ms (a stat call: cheap).
/// A new inode is an editor that wrote a new file and renamed it over the old
/// one: the file is whole, and the change is reported at once. A change of size
/// or modification time is a write in place: it is reported once the file has
/// held still for 100 ms, so a save in several writes is one change. A file
/// that is gone (mid-rename, or deleted) is reported when it is back.
final class FileWatcher: Sendable {
    private let task: Task<Void, Never>

    /// `changed` runs on each change, one at a time: changes during it are seen after it returns.
    init(path: String, every interval: Duration = .milliseconds(10), settle: Duration = .milliseconds(100),
         changed: @escaping @Sendable () async -> Void) {
        task = Task {
            var reported = Self.identity(of: path)
            var pending: (identity: Identity, since: ContinuousClock.Instant)?
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                let now = Self.identity(of: path)
                guard now != reported else {
                    pending = nil
                    continue
                }
                guard let current = now else { continue }  // gone for now: wait for it to come back
                if let before = reported, before.device != current.device || before.inode != current.inode {
                    reported = current
                    pending = nil
                    await changed()
                } else if pending?.identity != current {
                    pending = (current, .now)
                } else if let since = pending?.since, ContinuousClock.now - since >= settle {
                    reported = current
                    pending = nil
                    await changed()
                }
            }
        }
    }

    func stop() { task.cancel() }

    deinit { task.cancel() }

    /// What tells one version of a file from another.
    struct Identity: Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: timespec
        var changed: timespec

        static func == (a: Identity, b: Identity) -> Bool {
            a.device == b.device && a.inode == b.inode && a.size == b.size
                && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
                && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
        }
    }

    /// The file's identity now, or nil when it is not there.
    static func identity(of path: String) -> Identity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                        modified: info.st_mtim, changed: info.st_ctim)
    }
}
