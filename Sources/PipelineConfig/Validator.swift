import Foundation

/// Turns a `Tree` into a `PipelineSpec`, collecting every problem it finds.
struct Validator {
    let catalog: any ComponentCatalog
    let environment: [String: String]
    /// A secret whose `${VAR}` is unset is not an error but a variable needed at run time
    /// (`validate`, `--print-pipeline`: a CI job checks files without the keys).
    let deferringUnsetSecrets: Bool
    var errors: [ConfigError] = []
    /// The variables deferred secrets read, in the order met.
    var neededAtRunTime: [String] = []

    init(catalog: any ComponentCatalog, environment: [String: String], deferringUnsetSecrets: Bool = false) {
        self.catalog = catalog
        self.environment = environment
        self.deferringUnsetSecrets = deferringUnsetSecrets
    }

    mutating func error(_ position: Position, _ keyPath: String, _ message: String) {
        errors.append(ConfigError(file: position.file, line: position.line, column: position.column,
                                  keyPath: keyPath, message: message))
    }

    static let topLevelKeys = ["version", "name", "source", "stages", "sinks"]

    mutating func pipeline(_ root: Tree, defaultName: String) -> PipelineSpec? {
        guard case .map(let entries, let rootPosition) = root else {
            // A scalar is not quoted: a file that is no pipeline (a key file) must not show its text.
            let what = if case .scalar = root, !root.isNull { "a single value" } else { root.shortDescription }
            error(root.position, "", "the top level is \(what), not a map of keys "
                  + "(start the file with version: 1, then source: and sinks:)")
            return nil
        }
        for entry in entries where !Self.topLevelKeys.contains(entry.key) {
            var hint = ""
            if let guess = Suggest.closest(to: entry.key, in: Self.topLevelKeys) { hint = "did you mean \(guess)? " }
            error(entry.keyPosition, entry.key,
                  "unknown key (\(hint)known keys: \(Self.topLevelKeys.joined(separator: ", ")))")
        }
        let top = { (key: String) in entries.first { $0.key == key } }

        var version: Int?
        if let entry = top("version") {
            version = self.version(entry.value)
        } else {
            error(rootPosition, "version", "required key is missing (add version: 1 at the top of the file)")
        }

        var name = defaultName
        if let entry = top("name"), !entry.value.isNull,
           let value = string(entry.value, path: "name", example: "name: my-pipeline") {
            name = value
        }

        var source: ComponentSpec?
        var names: [(name: String, position: Position, owner: String)] = []
        let sourceExample = "source: { \(firstKind(.source)): {} }"
        if let entry = top("source") {
            if let spec = component(entry.value, role: .source, path: "source", names: &names) { source = spec }
        } else {
            error(rootPosition, "source", "required key is missing (add e.g. \(sourceExample))")
        }

        var stages: [ComponentSpec] = []
        var stagesOK = true
        if let entry = top("stages"), !entry.value.isNull {
            if case .list(let items, _) = entry.value {
                for (i, item) in items.enumerated() {
                    if let spec = component(item, role: .stage, path: "stages[\(i)]", names: &names) {
                        stages.append(spec)
                    } else {
                        stagesOK = false
                    }
                }
            } else {
                stagesOK = false
                error(entry.value.position, "stages", "\(entry.value.shortDescription) is not a list "
                      + "(write each stage as a list item, e.g. stages: [ \(firstKind(.stage)): {} ])")
            }
        }

        var sinks: [ComponentSpec] = []
        var sinksOK = true
        let sinkExample = "\(firstKind(.sink)): {}"
        if let entry = top("sinks"), case .list(let items, let position) = entry.value {
            if items.isEmpty {
                sinksOK = false
                error(position, "sinks", "the list is empty (add at least one sink, e.g. sinks: [ \(sinkExample) ])")
            }
            for (i, item) in items.enumerated() {
                if let spec = component(item, role: .sink, path: "sinks[\(i)]", names: &names) {
                    sinks.append(spec)
                } else {
                    sinksOK = false
                }
            }
        } else if let entry = top("sinks") {
            sinksOK = false
            let what = entry.value.isNull ? "the list is empty" : "\(entry.value.shortDescription) is not a list"
            error(entry.value.isNull ? entry.keyPosition : entry.value.position, "sinks",
                  "\(what) (add at least one sink, e.g. sinks: [ \(sinkExample) ])")
        } else {
            sinksOK = false
            error(rootPosition, "sinks", "required key is missing (add e.g. sinks: [ \(sinkExample) ])")
        }

        var seen: [String: String] = [:]
        for entry in names {
            if let owner = seen[entry.name] {
                error(entry.position, "\(entry.owner).name",
                      "name \(quote(entry.name)) is already used by \(owner) (pick another name)")
            } else {
                seen[entry.name] = entry.owner
            }
        }

        guard errors.isEmpty, let version, let source, stagesOK, sinksOK else { return nil }
        return PipelineSpec(version: version, name: name, source: source, stages: stages, sinks: sinks)
    }

    func firstKind(_ role: ComponentRole) -> String {
        catalog.kinds(for: role).first ?? "KIND"
    }

    mutating func version(_ node: Tree) -> Int? {
        guard case .scalar(let text, _, let position) = node, !node.isNull else {
            error(node.position, "version", "\(node.shortDescription) is not a version number (write version: 1)")
            return nil
        }
        guard let v = Int(text) else {
            error(position, "version", "\(quote(text)) is not a version number (write version: 1)")
            return nil
        }
        guard v == 1 else {
            error(position, "version", "version \(v) is not supported (this castline reads version 1; write version: 1)")
            return nil
        }
        return v
    }

    mutating func string(_ node: Tree, path: String, example: String) -> String? {
        guard case .scalar(let raw, _, let position) = node else {
            error(node.position, path, "\(node.shortDescription) is not a string (write e.g. \(example))")
            return nil
        }
        switch Interpolation.expand(raw, environment: environment) {
        case .success(let r): return r.value
        case .failure(let f):
            error(position, path, f.message)
            return nil
        }
    }

    /// One source / stage / sink: a map with one key, its kind, whose value holds the options.
    mutating func component(_ node: Tree, role: ComponentRole, path: String,
                            names: inout [(name: String, position: Position, owner: String)]) -> ComponentSpec? {
        let known = catalog.kinds(for: role)
        let noun = role.rawValue
        func write(_ kind: String) -> String {
            role == .source ? "source: { \(kind): {} }" : "- \(kind): {}"
        }
        guard case .map(let entries, let position) = node else {
            if case .scalar(let text, _, _) = node, !node.isNull {
                let kind = known.contains(text) ? text : firstKind(role)
                error(node.position, path, "\(quote(text)) is not a map (write \(write(kind)))")
            } else if node.isNull {
                error(node.position, path, "the \(noun) is empty (write e.g. \(write(firstKind(role))))")
            } else {
                error(node.position, path, "a list is not a \(noun) (write e.g. \(write(firstKind(role))))")
            }
            return nil
        }
        guard entries.count == 1, let entry = entries.first else {
            let found = entries.isEmpty ? "none" : "\(entries.count): " + entries.map(\.key).joined(separator: ", ")
            let fix: String
            if entries.isEmpty {
                fix = "write e.g. \(write(firstKind(role)))"
            } else if role == .source {
                fix = "keep one; a pipeline has one source"
            } else {
                fix = "split them into \(entries.count == 2 ? "two" : String(entries.count)) list items"
            }
            error(position, path, "a \(noun) is a map with one key, its kind; found \(found) (\(fix))")
            return nil
        }
        let kindPath = "\(path).\(entry.key)"
        guard let schema = catalog.schema(for: role, kind: entry.key) else {
            var hint = ""
            if let guess = Suggest.closest(to: entry.key, in: known) { hint = "did you mean \(guess)? " }
            error(entry.keyPosition, kindPath,
                  "unknown \(noun) kind (\(hint)known: \(known.sorted().joined(separator: ", ")))")
            return nil
        }
        let before = errors.count
        let (values, name) = options(entry.value, schema: schema, path: kindPath, anchor: entry.keyPosition,
                                     owner: entry.key, component: true)
        if let name { names.append((name.0, name.1, kindPath)) }
        guard errors.count == before else { return nil }
        return ComponentSpec(kind: entry.key, name: name?.0, options: values, keyPath: kindPath)
    }
}
