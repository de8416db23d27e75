import CastlineKit

/// `castline stages`: every source, stage and sink kind with its options, types, defaults and help.
public enum StageList {
    /// The listing, or nil when `kind` names nothing (the error then names what there is).
    public static func lines(kind: String?) throws(SettingsError) -> [String] {
        let registry = PipelineFiles.registry
        var lines: [String] = []
        for role in ComponentRole.allCases {
            let kinds = registry.descriptions(for: role).filter { kind == nil || $0.kind == kind }
            guard !kinds.isEmpty else { continue }
            lines.append("\(role)s:")
            for description in kinds.sorted(by: { $0.kind < $1.kind }) {
                lines.append("  \(description.kind): \(description.summary)")
                lines += options(description.schema, indent: "    ")
            }
        }
        if lines.isEmpty, let kind {
            let known = Set(ComponentRole.allCases.flatMap(registry.kinds(for:))).sorted().joined(separator: ", ")
            throw SettingsError("no kind named \"\(kind)\" (known: \(known))")
        }
        return lines
    }

    private static func options(_ schema: OptionSchema, indent: String) -> [String] {
        var lines = schema.shorthand.map { ["\(indent)(a plain value sets \($0))"] } ?? []
        for field in schema.fields {
            var line = "\(indent)\(field.name) (\(field.type.displayName))"
            if field.isRequired { line += ", required" }
            if let value = field.defaultValue { line += ", default \(value)" }
            lines.append("\(line): \(field.help)")
            if case .object(let nested) = field.type { lines += options(nested, indent: indent + "  ") }
        }
        return lines
    }
}
