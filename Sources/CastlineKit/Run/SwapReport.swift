/// What a swap did: the parts of the file that changed, and how long it took
/// from the request to the new parts playing.
public struct SwapReport: Sendable, Equatable {
    public let changes: [String]
    public let took: Duration

    public init(changes: [String], took: Duration) {
        self.changes = changes
        self.took = took
    }
}

/// A swap that was not applied; the running pipeline is unchanged. One line per problem.
public struct SwapRefused: Error, Sendable, CustomStringConvertible {
    public let lines: [String]

    public init(lines: [String]) { self.lines = lines }

    public var description: String { lines.joined(separator: "\n") }
}
