import Foundation
import CastlineKit

/// `--record PATH` and `--overwrite`, as `listen` and `broadcast` take them.
enum RecordFlags {
    static func check(record: String?, overwrite: Bool) throws(SettingsError) {
        if overwrite, record == nil { throw SettingsError("--overwrite is for --record's file: give --record PATH too") }
    }

    /// The file sink they stand for; `paced`: written at the clock, as what a listener heard.
    static func sink(_ path: String, paced: Bool, overwrite: Bool) -> ComponentSpec {
        ComponentSpec(kind: FileSink.kind) { options in
            options.set(FileSink.path, FlagPath.absolute(path))
            if paced { options.set(FileSink.sync, true) }
            if overwrite { options.set(FileSink.overwrite, true) }
        }
    }
}

/// A path given as a flag names a file from where the command runs; a pipeline file names one from
/// its own folder. The spec a shortcut prints holds it absolute, so it runs from anywhere.
enum FlagPath {
    static func absolute(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.path }
}
