import Foundation

/// A pipeline a command built from its flags (`listen`, `broadcast`) rather than read from a
/// file. Its values are typed already; they are checked against their options (names, types,
/// ranges, choices) and completed with the declared defaults, as the loader does for a file,
/// so both give the same spec. Problems name the flags' origin (`castline listen`), no line.
extension PipelineSpec {
    /// Key paths as a file's would have them (`stages[1].delay`), defaults filled in, values checked.
    public func completed(catalog: any ComponentCatalog, origin: String) throws(ConfigErrors) -> PipelineSpec {
        var errors: [ConfigError] = []
        func complete(_ component: ComponentSpec, role: ComponentRole, at path: String) -> ComponentSpec {
            var done = component
            done.keyPath = "\(path).\(component.kind)"
            guard let schema = catalog.schema(for: role, kind: component.kind) else {
                errors.append(ConfigError(file: origin, keyPath: done.keyPath, message: "unknown \(role.rawValue) kind"))
                return done
            }
            done.options = Self.complete(component.options, schema: schema, at: done.keyPath, origin: origin, errors: &errors)
            return done
        }
        var spec = self
        spec.source = complete(source, role: .source, at: "source")
        spec.stages = stages.enumerated().map { complete($1, role: .stage, at: "stages[\($0)]") }
        spec.sinks = sinks.enumerated().map { complete($1, role: .sink, at: "sinks[\($0)]") }
        guard errors.isEmpty else { throw ConfigErrors(errors) }
        return spec
    }

    private static func complete(_ values: OptionValues, schema: OptionSchema, at path: String, origin: String,
                                 errors: inout [ConfigError]) -> OptionValues {
        func problem(_ name: String, _ message: String) {
            errors.append(ConfigError(file: origin, keyPath: "\(path).\(name)", message: message))
        }
        for name in values.names where schema.field(name) == nil { problem(name, "unknown option") }
        let (filled, missing) = schema.withDefaults(values)
        for field in missing { problem(field.name, "required option is missing") }
        var done = OptionValues()
        for field in schema.fields {
            guard let value = filled[field.name] else { continue }
            switch (field.type, value) {
            case (.object(let nested), .object(let inner)):
                done[field.name] = .object(complete(inner, schema: nested, at: "\(path).\(field.name)", origin: origin, errors: &errors))
            case (.string, .string), (.bool, .bool), (.duration, .duration), (.bitrate, .bitrate), (.secret, .secret),
                 (.int, .int), (.double, .double), (.double, .int), (.choice, .string):
                let shown = if case .string(let text) = value { quote(text) } else { "\(value)" }
                if let wrong = field.problem(with: value, shown: shown) {
                    problem(field.name, wrong)
                } else {
                    // A whole number where a double is asked for is kept as the double it reads as.
                    if case .double = field.type, case .int(let number) = value { done[field.name] = .double(Double(number)) }
                    else { done[field.name] = value }
                }
            default:
                problem(field.name, "\(value) is not \(field.type.displayName)")
            }
        }
        return done
    }
}

extension ComponentSpec {
    /// A component a command builds: its options set through their declarations; key path set by `completed`.
    public init(kind: String, _ configure: (inout OptionValues) -> Void = { _ in }) {
        var options = OptionValues()
        configure(&options)
        self.init(kind: kind, options: options, keyPath: kind)
    }
}

extension OptionValues {
    /// Sets an option through its declaration (so its name and type are the component's own).
    public mutating func set<Value>(_ option: ConfigOption<Value>, _ value: Value) {
        self[option.name] = value.optionValue
    }
}

/// The secrets a command's flags name, read from environment variables as a file's `${NAME}`
/// reads them. An unset one is an error naming its flag, or, when nothing will run
/// (`deferringUnset`), its own reference, noted in `needed` (a spec's `neededAtRunTime`).
public struct FlagSecrets {
    let environment: [String: String]
    let deferringUnset: Bool
    public private(set) var needed: [String] = []

    public init(environment: [String: String], deferringUnset: Bool) {
        self.environment = environment
        self.deferringUnset = deferringUnset
    }

    /// The secret in the variable `flag` named.
    public mutating func read(_ name: String, flag: String) throws(ConfigError) -> Secret {
        let reference = "${\(name)}"
        switch Interpolation.expand(reference, environment: environment) {
        case .success(let result):
            return Secret(result.value, reference: reference)
        case .failure(.unset) where deferringUnset:
            if !needed.contains(name) { needed.append(name) }
            return .unresolved(reference)
        case .failure(.unset):
            throw ConfigError(file: "", message: "\(flag) \(name): the environment variable is not set (export it first)")
        case .failure(let failure):
            throw ConfigError(file: "", message: "\(flag) \(name): \(failure.message)")
        }
    }
}
