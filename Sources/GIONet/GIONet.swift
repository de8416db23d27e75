import CGStreamer
import Synchronization

/// What went wrong, as one line a user can act on (GIO's own reason where it gave one).
public struct GIONetError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ line: String) { description = line }
}
