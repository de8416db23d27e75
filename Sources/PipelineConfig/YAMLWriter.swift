extension PipelineSpec {
    /// Canonical YAML, the inverse of `PipelineLoader.load`: schema field order, durations and bitrates as config
    /// text, options equal to their schema default left out, `name:` always written, secrets written as their
    /// `reference` ("${VAR}") when known and "****" otherwise. Loading the output with the same environment
    /// gives an equal spec (except for secrets without a reference).
    public func yaml(catalog: any ComponentCatalog) -> String {
        var lines = ["version: \(version)", "name: \(YAMLText.scalar(Interpolation.escape(name)))"]
        lines.append("source:")
        lines += YAMLWriter.component(source, role: .source, catalog: catalog, indent: "  ", listItem: false)
        if !stages.isEmpty {
            lines.append("stages:")
            for stage in stages {
                lines += YAMLWriter.component(stage, role: .stage, catalog: catalog, indent: "  ", listItem: true)
            }
        }
        lines.append("sinks:")
        for sink in sinks {
            lines += YAMLWriter.component(sink, role: .sink, catalog: catalog, indent: "  ", listItem: true)
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

enum YAMLWriter {
    static func component(_ c: ComponentSpec, role: ComponentRole, catalog: any ComponentCatalog,
                          indent: String, listItem: Bool) -> [String] {
        let schema = catalog.schema(for: role, kind: c.kind) ?? OptionSchema([])
        var body: [String] = []
        let inner = indent + (listItem ? "    " : "  ")
        if let name = c.name { body.append("\(inner)name: \(YAMLText.scalar(name))") }
        body += options(c.options, schema: schema, indent: inner)
        let head = indent + (listItem ? "- " : "") + YAMLText.scalar(c.kind, isKey: true) + ":"
        return body.isEmpty ? [head + " {}"] : [head] + body
    }

    static func options(_ values: OptionValues, schema: OptionSchema, indent: String) -> [String] {
        var lines: [String] = []
        // Schema fields first, in schema order; then anything else the values hold, by name.
        let names = schema.fields.map(\.name) + values.names.filter { schema.field($0) == nil }
        for name in names {
            guard let value = values[name] else { continue }
            let field = schema.field(name)
            if let field, field.filledDefault == value { continue }
            let key = YAMLText.scalar(name, isKey: true)
            if case .object(let nested) = value {
                let nestedSchema: OptionSchema
                if case .object(let s)? = field?.type { nestedSchema = s } else { nestedSchema = OptionSchema([]) }
                let body = options(nested, schema: nestedSchema, indent: indent + "  ")
                lines += body.isEmpty ? ["\(indent)\(key): {}"] : ["\(indent)\(key):"] + body
            } else {
                lines.append("\(indent)\(key): \(scalar(value))")
            }
        }
        return lines
    }

    static func scalar(_ value: OptionValue) -> String {
        switch value {
        case .string(let s): YAMLText.scalar(Interpolation.escape(s))
        case .secret(let s): YAMLText.scalar(s.reference ?? s.description)
        case .object(let o): o.description  // not reached: objects are written as nested maps
        default: YAMLText.scalar(value.description)
        }
    }
}
