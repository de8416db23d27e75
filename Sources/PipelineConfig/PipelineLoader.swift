import Foundation

/// Reads pipeline files: YAML → `--set` overrides → validation against the catalog → `PipelineSpec`.
public struct PipelineLoader: Sendable {
    public var catalog: any ComponentCatalog
    /// Where `${VAR}` references are looked up.
    public var environment: [String: String]
    /// An unset `${VAR}` in a secret is noted in `neededAtRunTime`, not an error (checking a file, not running it).
    public var defersUnsetSecrets = false

    public init(catalog: any ComponentCatalog, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.catalog = catalog
        self.environment = environment
    }

    /// Loads the file at `path` (errors name the file as `path` is written).
    public func load(contentsOf path: String, overrides: [String] = []) throws(ConfigErrors) -> PipelineSpec {
        try load(yaml: Self.text(at: path), file: path, overrides: overrides)
    }

    /// A file that holds one component's options alone (`monitor --alarms FILE`): the map is
    /// checked as the same map under `owner:` in a pipeline file is, its errors at its lines.
    public func loadOptions(contentsOf path: String, schema: OptionSchema, owner: String) throws(ConfigErrors) -> OptionValues {
        let (parsed, syntaxErrors) = TreeBuilder.parse(try Self.text(at: path), file: path)
        guard syntaxErrors.isEmpty else { throw ConfigErrors(syntaxErrors) }
        guard let tree = parsed else { return schema.withDefaults(OptionValues()).0 }
        var validator = Validator(catalog: catalog, environment: environment, deferringUnsetSecrets: defersUnsetSecrets)
        let (values, _) = validator.options(tree, schema: schema, path: owner, anchor: tree.position, owner: owner, component: false)
        guard validator.errors.isEmpty else { throw ConfigErrors(validator.errors) }
        return values
    }

    /// A file's text; the error says why it cannot be read.
    static func text(at path: String) throws(ConfigErrors) -> String {
        func fail(_ message: String) -> ConfigErrors {
            ConfigErrors([ConfigError(file: path, message: message)])
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw fail("no such file (check the path)")
        }
        guard !isDirectory.boolValue else { throw fail("is a directory (pass a .yaml file)") }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw fail("cannot read the file (check its permissions)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw fail("the file is not UTF-8 text (save it as UTF-8)")
        }
        return text
    }

    /// Loads YAML text; `file` is used in error messages and for the default pipeline name.
    public func load(yaml: String, file: String, overrides: [String] = []) throws(ConfigErrors) -> PipelineSpec {
        var overrideErrors: [ConfigError] = []
        var parsedOverrides: [Override] = []
        for text in overrides {
            if let o = Override(text) {
                parsedOverrides.append(o)
            } else {
                overrideErrors.append(ConfigError(
                    file: "--set",
                    message: "\(quote(text)) is not key.path=value (try --set stages[0].delay.initial=5s)"))
            }
        }

        let (parsed, syntaxErrors) = TreeBuilder.parse(yaml, file: file)
        guard syntaxErrors.isEmpty else { throw ConfigErrors(overrideErrors + syntaxErrors) }
        guard var tree = parsed else {
            throw ConfigErrors(overrideErrors + [ConfigError(
                file: file, message: "the file is empty (start with version: 1, then source: and sinks:)")])
        }
        if case .map = tree {
            for o in parsedOverrides {
                do throws(ConfigError) {
                    try o.apply(to: &tree)
                } catch {
                    overrideErrors.append(error)
                }
            }
        }

        var validator = Validator(catalog: catalog, environment: environment, deferringUnsetSecrets: defersUnsetSecrets)
        let spec = validator.pipeline(tree, defaultName: Self.defaultName(for: file))
        let fileErrors = validator.errors.enumerated().sorted { a, b in
            let (x, y) = (a.element, b.element)
            let xKey = (x.file == "--set" ? 0 : 1, x.line, x.column, a.offset)
            let yKey = (y.file == "--set" ? 0 : 1, y.line, y.column, b.offset)
            return xKey < yKey
        }.map(\.element)
        let all = overrideErrors + fileErrors
        guard all.isEmpty, var spec else {
            throw ConfigErrors(all.isEmpty ? [ConfigError(file: file, message: "invalid pipeline (check the file)")] : all)
        }
        spec.positions = SourcePositions(tree)
        spec.neededAtRunTime = validator.neededAtRunTime
        return spec
    }

    /// "listen.yaml" → "listen".
    static func defaultName(for file: String) -> String {
        let name = URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
        return name.isEmpty || name == "/" ? "pipeline" : name
    }
}
