import Foundation
import PipelineConfig

/// The secrets a component's options give, read one way wherever they are taken: by the sinks
/// that publish (`rtmp`, `srt`) and by the `uri` source that plays from the same servers.
public enum Credentials {
    public static let key = ConfigOption<Secret?>("key", help: "rtmp(s): the stream key; write ${VAR} to read it from the environment")
    public static let keyFile = ConfigOption<String?>("key-file", help: "rtmp(s): a file holding the stream key (instead of key)")
    public static let passphrase = ConfigOption<Secret?>("passphrase", help: "srt: the passphrase (10 to 79 characters); write ${VAR}")
    public static let token = ConfigOption<Secret?>("token", help: "whip, whep: the bearer token; write ${VAR} to read it from the environment")
    public static let tokenFile = ConfigOption<String?>("token-file", help: "whip, whep: a file holding the bearer token (instead of token)")

    /// An RTMP stream key: `key` (write `${VAR}`) or `key-file`, one of them, not empty.
    static func streamKey(_ options: OptionValues, at keyPath: String) throws -> Secret {
        guard let key = try secret(options, key, keyFile, named: "stream key", at: keyPath) else {
            throw BuildError("a stream key is needed (key: ${STREAM_KEY}, or key-file: PATH)", at: keyPath)
        }
        return key
    }

    /// A WHIP bearer token: `token` (write `${VAR}`) or `token-file`, or none (an endpoint may take anyone).
    static func bearerToken(_ options: OptionValues, at keyPath: String) throws -> Secret? {
        try secret(options, token, tokenFile, named: "token", at: keyPath)
    }

    /// A secret given in the file (`${VAR}`) or in a file of its own: at most one of them, not empty.
    static func secret(_ options: OptionValues, _ inline: ConfigOption<Secret?>, _ file: ConfigOption<String?>,
                               named noun: String, at keyPath: String) throws -> Secret? {
        switch (options[inline], options[file]) {
        case (let secret?, nil):
            guard !secret.isEmpty else { throw BuildError("the \(noun) is empty (set the variable it reads)", at: "\(keyPath).\(inline.field.name)") }
            return secret
        case (nil, let path?):
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw BuildError("cannot read the \(noun) file \"\(path)\" (check the path and its permissions)", at: "\(keyPath).\(file.field.name)")
            }
            let secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !secret.isEmpty else { throw BuildError("the \(noun) file \"\(path)\" is empty", at: "\(keyPath).\(file.field.name)") }
            return Secret(secret)
        case (nil, nil):
            return nil
        case (_?, _?):
            throw BuildError("give \(inline.field.name) or \(file.field.name), not both", at: keyPath)
        }
    }

    /// An SRT passphrase (`passphrase`), if given, of a length SRT takes.
    static func srtPassphrase(_ options: OptionValues, at keyPath: String) throws -> Secret? {
        guard let passphrase = options[passphrase] else { return nil }
        guard passphrase.isUnresolved || (10...79).contains(passphrase.reveal().count) else {
            throw BuildError("an SRT passphrase has 10 to 79 characters (this one has \(passphrase.reveal().count))", at: "\(keyPath).passphrase")
        }
        return passphrase
    }
}
