/// `--set key.path=value`: edits the YAML tree before validation.
struct Override: Sendable, Hashable {
    enum Segment: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    var segments: [Segment]
    var value: String

    /// Parses "stages[1].delay.initial=5s". Returns nil when the text is not `key.path=value`.
    init?(_ text: String) {
        guard let eq = text.firstIndex(of: "=") else { return nil }
        guard let segments = Override.parsePath(String(text[..<eq])) else { return nil }
        self.segments = segments
        self.value = String(text[text.index(after: eq)...])
    }

    static func parsePath(_ path: String) -> [Segment]? {
        var segments: [Segment] = []
        for part in path.split(separator: ".", omittingEmptySubsequences: false) {
            var rest = part[...]
            let key = rest.prefix { $0 != "[" && $0 != "]" }
            guard !key.isEmpty, !key.contains(where: \.isWhitespace) else { return nil }
            segments.append(.key(String(key)))
            rest = rest.dropFirst(key.count)
            while !rest.isEmpty {
                guard rest.first == "[", let close = rest.firstIndex(of: "]"),
                      let index = Int(rest[rest.index(after: rest.startIndex)..<close]), index >= 0 else { return nil }
                segments.append(.index(index))
                rest = rest[rest.index(after: close)...]
            }
        }
        return segments.isEmpty ? nil : segments
    }

    static func render(_ segments: some Collection<Segment>) -> String {
        var text = ""
        for segment in segments {
            switch segment {
            case .key(let k): text += text.isEmpty ? k : ".\(k)"
            case .index(let i): text += "[\(i)]"
            }
        }
        return text
    }

    /// Applies the override to `tree` (the document root).
    func apply(to tree: inout Tree) throws(ConfigError) {
        tree = try set(tree, at: segments[...])
    }

    private func fail(_ path: some Collection<Segment>, _ message: String) -> ConfigError {
        ConfigError(file: "--set", keyPath: Override.render(path), message: message)
    }

    /// `node` (nil where nothing is yet) with the value set at `rest` below it.
    private func set(_ node: Tree?, at rest: ArraySlice<Segment>) throws(ConfigError) -> Tree {
        guard let segment = rest.first else { return TreeBuilder.overrideValue(value) }
        let here = segments[..<rest.startIndex]
        let next = segments[...rest.startIndex]
        let node = node?.isNull == true ? nil : node
        switch (segment, node) {
        case (.key(let key), nil):
            return .map([Tree.Entry(key: key, keyPosition: .override, value: try set(nil, at: rest.dropFirst()))], .override)
        case (.key(let key), .map(var entries, let position)?):
            if let i = entries.firstIndex(where: { $0.key == key }) {
                entries[i].value = try set(entries[i].value, at: rest.dropFirst())
            } else {
                entries.append(Tree.Entry(key: key, keyPosition: .override, value: try set(nil, at: rest.dropFirst())))
            }
            return .map(entries, position)
        case (.key, .list?):
            throw fail(next, "\(Override.render(here)) is a list, not a map (pick an item, e.g. \(Override.render(here))[0])")
        case (.key, .scalar(let text, _, _)?):
            throw fail(next, "\(Override.render(here)) is \(quote(text)), not a map (set \(Override.render(here))=VALUE instead)")
        case (.index(let index), .list(var items, let position)?):
            guard index < items.count else {
                throw fail(next, "there is no \(Override.render(next)) (\(Override.count(items.count, in: here)))")
            }
            items[index] = try set(items[index], at: rest.dropFirst())
            return .list(items, position)
        case (.index, nil):
            throw fail(next, "there is no \(Override.render(next)) (\(Override.count(0, in: here)))")
        case (.index, let other?):
            let what = other.shortDescription
            throw fail(next, "\(Override.render(here)) is \(what), not a list (set \(Override.render(here)).KEY=VALUE instead)")
        }
    }

    /// "the file has 2 stages", "the list has 1 item".
    private static func count(_ n: Int, in path: some Collection<Segment>) -> String {
        if path.count == 1, case .key(let key)? = path.first, key == "stages" || key == "sinks" {
            return "the file has \(n) \(n == 1 ? String(key.dropLast()) : key)"
        }
        return "\(render(path)) has \(n) item\(n == 1 ? "" : "s")"
    }
}
