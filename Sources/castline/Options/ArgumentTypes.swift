import ArgumentParser
import CastlineApp
import CastlineKit
import PipelineConfig

// The flags' own types, parsed once by ArgumentParser in the pipeline file's words
// (`30s`, `2500k`); a value that does not parse is refused as the flag the user typed.

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
