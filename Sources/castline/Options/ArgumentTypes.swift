import ArgumentParser
import CastlineApp
import CastlineKit
import PipelineConfig

// The flags' own types, parsed once by ArgumentParser in the pipeline file's words
// (`30s`, `2500k`); a value that does not parse is refused as the flag the user typed.

extension Duration {
    /// A length flag (`--duration`) must be above 0: `example` is what to try instead.
    func requireAbove0(_ flag: String, example: String) throws {
        guard self > .zero else { throw ValidationError("\(flag): give a time above 0 (e.g. \(example))") }
    }
}

extension Duration: @retroactive ExpressibleByArgument {
    public init?(argument: String) { self.init(configText: argument) }
    public var defaultValueDescription: String { configText }
}

extension Bitrate: ExpressibleByArgument {
    public init?(argument: String) { self.init(configText: argument) }
    public var defaultValueDescription: String { description }
}

extension ListenShortcut.Output: ExpressibleByArgument {}

extension RateControl: ExpressibleByArgument {}
