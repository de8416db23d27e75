import ArgumentParser
import CastlineApp
import CastlineKit

struct StagesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stages",
        abstract: "List every source, stage and sink kind with its options, types, defaults and help.")

    @Argument(help: "Show only this kind, e.g. delay.")
    var kind: String?

    func run() async throws {
        let registry = PipelineFiles.registry
        var shown = 0
        for role in ComponentRole.allCases {
            let kinds = registry.descriptions(for: role).filter { kind == nil || $0.kind == kind }
            guard !kinds.isEmpty else { continue }
            print("\(role)s:")
            for description in kinds.sorted(by: { $0.kind < $1.kind }) {
                print("  \(description.kind): \(description.summary)")
                printOptions(description.schema, indent: "    ")
                shown += 1
            }
        }
        if shown == 0, let kind {
            let known = ComponentRole.allCases.flatMap(registry.kinds(for:)).sorted().joined(separator: ", ")
            throw ValidationError("no kind named \"\(kind)\" (known: \(known))")
        }
    }

    private func printOptions(_ schema: OptionSchema, indent: String) {
        if let shorthand = schema.shorthand {
            print("\(indent)(a plain value sets \(shorthand))")
        }
        for field in schema.fields {
            var line = "\(indent)\(field.name) (\(field.type.displayName))"
            if field.isRequired { line += ", required" }
            if let value = field.defaultValue { line += ", default \(value)" }
            print("\(line): \(field.help)")
            if case .object(let nested) = field.type {
                printOptions(nested, indent: indent + "  ")
            }
        }
    }
}
