@_exported import Timing
import Foundation

public enum ComponentRole: String, Sendable, CaseIterable {
    case source, stage, sink
}

/// One validated source, stage or sink.
public struct ComponentSpec: Sendable, Hashable {
    public var kind: String
    /// The component's `name:`, if the file gave one.
    public var name: String?
    /// Validated options, defaults filled in.
    public var options: OptionValues
    /// Where it came from, for run-time error messages: "source.test", "stages[1].delay", "sinks[0].file".
    public var keyPath: String

    public init(kind: String, name: String? = nil, options: OptionValues = .init(), keyPath: String) {
        self.kind = kind
        self.name = name
        self.options = options
        self.keyPath = keyPath
    }
}

/// A validated pipeline file.
public struct PipelineSpec: Sendable, Hashable {
    public var version: Int
    public var name: String
    public var source: ComponentSpec
    public var stages: [ComponentSpec]
    public var sinks: [ComponentSpec]
    /// Where each key sat in the file, for errors found later.
    public var positions = SourcePositions.none
    /// Environment variables the file's secrets read that were unset when it was checked
    /// (only when the loader defers them: `validate`, `--print-pipeline`).
    public var neededAtRunTime: [String] = []

    public init(version: Int = 1, name: String, source: ComponentSpec, stages: [ComponentSpec] = [],
                sinks: [ComponentSpec]) {
        self.version = version
        self.name = name
        self.source = source
        self.stages = stages
        self.sinks = sinks
    }

    /// Source, stages, then sinks.
    public var components: [ComponentSpec] { [source] + stages + sinks }

    /// Every secret value in the spec (so the CLI can mask them in any text it relays), without duplicates.
    public var allSecrets: [Secret] {
        var seen = Set<String>()
        return components.flatMap(\.options.allSecrets).filter { seen.insert($0.reveal()).inserted }
    }
}

/// The kinds of components and their option schemas. CastlineKit provides the real one.
public protocol ComponentCatalog: Sendable {
    func schema(for role: ComponentRole, kind: String) -> OptionSchema?
    func kinds(for role: ComponentRole) -> [String]
}

/// One problem in a pipeline file (or in a `--set` override).
public struct ConfigError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The path as the user gave it, or "--set" for an override.
    public var file: String
    /// 1-based; 0 when there is no position.
    public var line: Int
    /// 1-based; 0 when there is no position.
    public var column: Int
    /// "stages[1].delay.initial"; empty when the error is about the file as a whole.
    public var keyPath: String
    /// What is wrong, then the fix in parentheses.
    public var message: String

    public init(file: String, line: Int = 0, column: Int = 0, keyPath: String = "", message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.keyPath = keyPath
        self.message = message
    }

    /// "FILE:LINE:COL: key.path: message" (no ":LINE:COL" when line is 0, no "key.path: " when it is empty).
    public var description: String {
        var text = file
        if line > 0 { text += ":\(line):\(column)" }
        text += ": "
        if !keyPath.isEmpty { text += keyPath + ": " }
        return text + message
    }
}

/// All the problems found in a pipeline file, in file order (`--set` problems first).
public struct ConfigErrors: Error, Sendable, Hashable, CustomStringConvertible {
    public var errors: [ConfigError]

    public init(_ errors: [ConfigError]) {
        self.errors = errors
    }

    /// One error per line.
    public var description: String {
        errors.map(\.description).joined(separator: "\n")
    }
}
