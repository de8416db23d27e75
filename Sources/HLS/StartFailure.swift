/// Why an HLS start failed, for the source to say against the option at fault.
public struct StartFailure: Error, Sendable, CustomStringConvertible {
    /// The option the problem is with: the playlist's URL, or the rendition asked for.
    public enum Option: String, Sendable { case url, rendition }

    public var message: String
    public var option: Option
    /// The server's answer is no playable stream (not trouble reaching it, which may pass).
    public var badInput: Bool

    public init(_ message: String, option: Option = .url, badInput: Bool) {
        self.message = message
        self.option = option
        self.badInput = badInput
    }

    public var description: String { message }
}
