import Foundation
import PipelineConfig

/// The secrets a component's options give, read one way wherever they are taken: by the sinks
/// that publish (`rtmp`, `srt`) and by the `uri` source that plays from the same servers.
public enum Credentials {
    public static let key = ConfigOption<Secret?>("key", help: "rtmp(s): the stream key; write ${VAR} to read it from the environment")
    public static let keyFile = ConfigOption<String?>("key-file", help: "rtmp(s): a file holding the stream key (instead of key)")
    public static let passphrase = ConfigOption<Secret?>("passphrase", help: "srt: the passphrase (10 to 79 characters); write ${VAR}")

    /// An RTMP stream key: `key` (write `${VAR}`) or `key-file`, one of them, not empty.
    static func streamKey(_ options: OptionValues, at keyPath: String) throws -> Secret {
        switch (options[key], options[keyFile]) {
        case (let key?, nil):
            guard !key.isEmpty else { throw BuildError("the stream key is empty (set the variable it reads)", at: "\(keyPath).key") }
            return key
        case (nil, let path?):
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw BuildError("cannot read the key file \"\(path)\" (check the path and its permissions)", at: "\(keyPath).key-file")
            }
            let key = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !key.isEmpty else { throw BuildError("the key file \"\(path)\" is empty", at: "\(keyPath).key-file") }
            return Secret(key)
        case (nil, nil):
            throw BuildError("a stream key is needed (key: ${STREAM_KEY}, or key-file: PATH)", at: keyPath)
        case (_?, _?):
            throw BuildError("give key or key-file, not both", at: keyPath)
        }
    }

    /// An SRT passphrase (`passphrase`), if given, of a length SRT takes.
    static func srtPassphrase(_ options: OptionValues, at keyPath: String) throws -> Secret? {
        guard let passphrase = options[passphrase] else { return nil }
        guard (10...79).contains(passphrase.reveal().count) else {
            throw BuildError("an SRT passphrase has 10 to 79 characters (this one has \(passphrase.reveal().count))", at: "\(keyPath).passphrase")
        }
        return passphrase
    }
}
