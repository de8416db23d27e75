import CastlineApp
import CastlineKit
import Testing

/// Every default a component declares is a value its own option accepts: a default out of its
/// range or choices would be filled into every pipeline file that leaves the option out.
@Suite("Declared option defaults")
struct OptionDefaultTests {
    @Test func everyDeclaredDefaultIsAValueItsOptionAccepts() {
        let registry = PipelineFiles.registry
        var checked = 0
        for role in [ComponentRole.source, .stage, .sink] {
            for description in registry.descriptions(for: role) {
                for problem in Self.problems(in: description.schema, at: description.kind, checked: &checked) {
                    Issue.record("\(problem)")
                }
            }
        }
        #expect(checked > 40)
    }

    static func problems(in schema: OptionSchema, at path: String, checked: inout Int) -> [String] {
        schema.fields.flatMap { field -> [String] in
            let at = "\(path).\(field.name)"
            var found: [String] = []
            if case .object(let nested) = field.type { found += problems(in: nested, at: at, checked: &checked) }
            guard let value = field.defaultValue else { return found }
            checked += 1
            if field.isRequired { found.append("\(at): required and defaulted") }
            switch (field.type, value) {
            case (.string, .string), (.bool, .bool), (.duration, .duration), (.bitrate, .bitrate),
                 (.secret, .secret), (.object, .object): break
            case (.int(let range), .int(let number)):
                if let range, !range.contains(number) { found.append("\(at): default \(number) outside \(range)") }
            case (.double(let range), .double(let number)):
                if let range, !range.contains(number) { found.append("\(at): default \(number) outside \(range)") }
            case (.choice(let values), .string(let text)):
                if !values.contains(text) { found.append("\(at): default \(text) is not one of \(values)") }
            default: found.append("\(at): default \(value) is not a \(field.type.displayName)")
            }
            return found
        }
    }
}
