import PipelineConfig

/// castline's own picture of a built pipeline, as Graphviz dot: the source, the stages and the
/// sinks as the file names them (with the options that differ from their defaults), and between
/// them each stream in the form it has there, with the conversions the builder put in. Readable
/// at a glance, where GStreamer's own dump (`graph --gst`) shows every element and pad.
public enum PipelinePicture {
    /// Option values longer than this are cut (a long URL would widen the whole picture).
    static let valueWidth = 48
    /// At most this many options per box.
    static let optionsShown = 4

    public static func dot(_ built: BuiltPipeline) -> String {
        let plan = built.plan, layout = built.layout
        var lines = [
            "digraph castline {",
            "  rankdir=LR;",
            "  label=\(quoted("\(plan.spec.name): source → stages → sinks")); labelloc=t; fontname=Helvetica;",
            "  node [shape=box, style=\"rounded,filled\", fontname=Helvetica, fontsize=11];",
            "  edge [fontname=Helvetica, fontsize=10];",
        ]
        let source = plan.source
        lines.append("  part0 [label=\(quoted(box(source.spec, schema: type(of: source.component).schema, title: "source"))), fillcolor=\"#dff0d8\"];")
        for (index, stage) in plan.stages.enumerated() {
            let title = stage.spec.name.map { "\($0) (\(stage.spec.kind))" } ?? stage.spec.kind
            lines.append("  part\(index + 1) [label=\(quoted(box(stage.spec, schema: type(of: stage.component).schema, title: title, kindShown: true))), fillcolor=\"#d9e8f6\"];")
        }
        for (index, sink) in plan.sinks.enumerated() {
            lines.append("  sink\(index) [label=\(quoted(box(sink.spec, schema: type(of: sink.component).schema, title: "sink"))), fillcolor=\"#fbe5cf\"];")
        }
        // Chain edges: the streams leaving each part, as the next one takes them.
        for (index, stage) in plan.stages.enumerated() {
            guard let leaving = layout.cursors[safe: index] else { continue }
            var labels: [String] = []
            for (stream, cursor) in leaving.sorted(by: { $0.key < $1.key }) {
                switch stage.component.plan(for: stream, arriving: cursor.form) {
                case .drop: labels.append("\(stream) \(cursor.form), dropped")
                case .passThrough: labels.append("\(stream) \(cursor.form)")
                case .process(let takes) where takes.accepts(cursor.form): labels.append("\(stream) \(cursor.form)")
                case .process(let takes): labels.append("\(stream) \(cursor.form) → \(takes)")
                }
            }
            lines.append("  part\(index) -> part\(index + 1) [label=\(quoted(labels.joined(separator: "\n")))];")
        }
        // Sink edges: from the chain's end, in the form each sink takes.
        let end = layout.cursors.last ?? [:]
        for (index, sink) in layout.sinks.enumerated() {
            let labels = sink.entries.sorted(by: { $0.key < $1.key }).map { stream, entry in
                let from = end[stream]?.form
                return from.map { $0 == entry.form ? "\(stream) \($0)" : "\(stream) \($0) → \(entry.form)" } ?? "\(stream) \(entry.form)"
            }
            lines.append("  part\(plan.stages.count) -> sink\(index) [label=\(quoted(labels.joined(separator: "\n")))];")
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    /// A part's box: its title, its kind, and the options set away from their defaults.
    private static func box(_ spec: ComponentSpec, schema: OptionSchema, title: String, kindShown: Bool = false) -> String {
        let changed = changedOptions(spec.options, schema: schema)
        var lines = [kindShown ? title : "\(title): \(spec.kind)"]
        for (name, text) in changed.prefix(optionsShown) {
            lines.append("\(name): " + (text.count > valueWidth ? String(text.prefix(valueWidth - 1)) + "…" : text))
        }
        if changed.count > optionsShown { lines.append("(\(changed.count - optionsShown) more)") }
        return lines.joined(separator: "\n")
    }

    /// The options that differ from their defaults, as text; within a nested map, only its changed keys.
    private static func changedOptions(_ options: OptionValues, schema: OptionSchema) -> [(String, String)] {
        options.names.compactMap { name in
            guard let value = options[name] else { return nil }
            let field = schema.field(name)
            if case .object(let nested) = value, case .object(let nestedSchema)? = field?.type {
                let inner = changedOptions(nested, schema: nestedSchema)
                return (name, inner.isEmpty ? "defaults" : "{" + inner.map { "\($0): \($1)" }.joined(separator: ", ") + "}")
            }
            return value == field?.defaultValue ? nil : (name, value.description)
        }
    }

    private static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n") + "\""
    }
}
