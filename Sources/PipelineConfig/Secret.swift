import Foundation
/// A secret option value (a stream key, a password). It never prints its text: `description`,
/// `debugDescription`, `customMirror` (so `dump`) all show "****". `reveal()` is the only way to get it.
public struct Secret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    private var value: String

    /// The file's text when the value came from the environment: "${MUX_STREAM_KEY}" (or "live_${KEY}").
    /// `PipelineSpec.yaml(catalog:)` writes this instead of the value. `nil` for literal secrets.
    public var reference: String?

    /// A stand-in for a variable not set yet (checking a file that needs it only at run time):
    /// its own reference, which checks of the value (a length) must pass over.
    public private(set) var isUnresolved = false

    public init(_ value: String, reference: String? = nil) {
        self.value = value
        self.reference = reference
    }

    /// The stand-in for `reference`, whose variable is not set yet.
    public static func unresolved(_ reference: String) -> Secret {
        var secret = Secret(reference, reference: reference)
        secret.isUnresolved = true
        return secret
    }

    /// The secret text. Call this only where the value is handed to the component that needs it.
    public func reveal() -> String { value }

    /// True when the secret is the empty string.
    public var isEmpty: Bool { value.isEmpty }

    /// What a secret shows as, wherever it is shown.
    public static let masked = "****"
    /// True for a value that is the mask itself: text copied from where a secret was shown.
    public var isMasked: Bool { value == Self.masked }

    public var description: String { Self.masked }
    public var debugDescription: String { Self.masked }
    public var customMirror: Mirror { Mirror(self, children: ["value": Self.masked], displayStyle: .struct) }
}

extension Secret {
    /// A URL as lines show it, its path (which may hold a key) masked: `https://host:8443/****`.
    public static func maskingPath(of url: URL) -> String {
        let port = url.port.map { ":\($0)" } ?? ""
        return "\(url.scheme ?? "http")://\(url.host ?? "")\(port)/\(masked)"
    }
}
