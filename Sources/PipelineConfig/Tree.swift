import Foundation
import Yams

/// Where a node came from: a file position (1-based), or `--set` (line 0).
struct Position: Sendable, Hashable {
    var file: String
    var line: Int
    var column: Int

    static let override = Position(file: "--set", line: 0, column: 0)
}

/// The YAML document as PipelineConfig sees it: scalars keep their text (typing is done against the schema),
/// every node keeps its position, maps keep their key order.
indirect enum Tree: Sendable {
    case scalar(String, quoted: Bool, Position)
    case map([Entry], Position)
    case list([Tree], Position)

    struct Entry: Sendable {
        var key: String
        var keyPosition: Position
        var value: Tree
    }

    var position: Position {
        switch self {
        case .scalar(_, _, let p), .map(_, let p), .list(_, let p): p
        }
    }

    /// A plain `null`, `~` or nothing at all.
    var isNull: Bool {
        if case .scalar(let text, false, _) = self { return ["", "~", "null", "Null", "NULL"].contains(text) }
        return false
    }

    /// For messages: `"text"`, `a map`, `a list`, `nothing`.
    var shortDescription: String {
        switch self {
        case .scalar(let text, _, _): isNull ? "nothing" : quote(text)
        case .map: "a map"
        case .list: "a list"
        }
    }

    func entry(_ key: String) -> Entry? {
        if case .map(let entries, _) = self { return entries.first { $0.key == key } }
        return nil
    }
}

/// `"text"` with quotes and escapes, shortened when long.
func quote(_ text: String) -> String {
    YAMLText.doubleQuoted(text.count > 40 ? String(text.prefix(37)) + "..." : text)
}

enum TreeBuilder {
    /// Parses YAML text into a `Tree`. Returns `nil` and no errors for an empty document.
    static func parse(_ yaml: String, file: String) -> (tree: Tree?, errors: [ConfigError]) {
        let node: Node?
        do {
            node = try Yams.compose(yaml: yaml)
        } catch let error as YamlError {
            return (nil, [convert(error, file: file)])
        } catch {
            return (nil, [ConfigError(file: file, message: "cannot read the YAML: \(error) (check the file)")])
        }
        guard let node else { return (nil, []) }
        var errors: [ConfigError] = []
        var budget = maxValues
        let tree = build(node, file: file, errors: &errors, budget: &budget)
        guard budget >= 0 else {
            return (nil, [ConfigError(file: file, message: """
                the file expands to more than \(maxValues) values through its aliases (an alias bomb?); \
                write the repeated part out, or use fewer aliases
                """)])
        }
        return (tree, errors)
    }

    /// The most values a pipeline file may expand to. A real one has a few hundred; aliases that
    /// repeat aliases (nine levels of nine) would otherwise expand to hundreds of millions.
    static let maxValues = 100_000

    /// A `--set` value: `[`, `{`, `"` or `'` start YAML flow text; anything else is taken as a plain scalar.
    static func overrideValue(_ text: String) -> Tree {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let first = trimmed.first, "[{\"'".contains(first),
           let node = try? Yams.compose(yaml: trimmed) {
            var errors: [ConfigError] = []
            var budget = maxValues
            if let tree = build(node, file: "--set", errors: &errors, budget: &budget), errors.isEmpty, budget >= 0 {
                return tree
            }
        }
        return .scalar(trimmed, quoted: false, .override)
    }

    private static func position(_ mark: Mark?, file: String) -> Position {
        if file == "--set" { return .override }
        guard let mark else { return Position(file: file, line: 0, column: 0) }
        return Position(file: file, line: mark.line, column: mark.column)
    }

    /// `budget` counts down the values built; once below zero, building stops (see `maxValues`).
    private static func build(_ node: Node, file: String, errors: inout [ConfigError], budget: inout Int) -> Tree? {
        budget -= 1
        guard budget >= 0 else { return nil }
        switch node {
        case .scalar(let s):
            let quoted = s.style != .plain || s.tag.rawValue == Tag.Name.str.rawValue
            return .scalar(s.string, quoted: quoted, position(s.mark, file: file))
        case .sequence(let seq):
            var items: [Tree] = []
            for item in seq {
                guard budget >= 0 else { return nil }
                if let tree = build(item, file: file, errors: &errors, budget: &budget) { items.append(tree) }
            }
            return .list(items, position(seq.mark, file: file))
        case .mapping(let map):
            var entries: [Tree.Entry] = []
            for (key, value) in map {
                let keyPosition = position(key.mark, file: file)
                guard case .scalar(let k) = key else {
                    errors.append(ConfigError(
                        file: file, line: keyPosition.line, column: keyPosition.column,
                        message: "a key must be a plain word, not a \(key.isMapping ? "map" : "list") (use e.g. name:)"))
                    continue
                }
                guard budget >= 0 else { return nil }
                guard let v = build(value, file: file, errors: &errors, budget: &budget) else { continue }
                entries.append(Tree.Entry(key: k.string, keyPosition: keyPosition, value: v))
            }
            return .map(entries, position(map.mark, file: file))
        case .alias:
            // Yams resolves aliases while composing; nothing to do for an unresolved one.
            return nil
        }
    }

    static func convert(_ error: YamlError, file: String) -> ConfigError {
        func err(_ mark: Mark?, _ message: String) -> ConfigError {
            ConfigError(file: file, line: mark?.line ?? 0, column: mark?.column ?? 0, message: message)
        }
        let fix = "(check the indentation and quoting here and on the lines above)"
        switch error {
        case .scanner(let context, let problem, let mark, let yaml),
             .parser(let context, let problem, let mark, let yaml),
             .composer(let context, let problem, let mark, let yaml):
            if problem.hasPrefix("but found another document") {
                return err(mark, "the file holds more than one YAML document (keep one; remove the --- line)")
            }
            if character(at: mark, in: yaml) == "\t" {
                return err(mark, "invalid YAML: a tab character (indent with spaces, not tabs)")
            }
            var text = "invalid YAML: \(problem)"
            if let context, !context.text.isEmpty {
                text += " \(context.text)"
                if context.mark.line != mark.line { text += " at line \(context.mark.line)" }
            }
            return err(mark, text + " " + fix)
        case .duplicatedKeysInMapping(let duplicates, let context):
            let keys = duplicates.map(quote).joined(separator: ", ")
            let what = duplicates.count == 1 ? "key \(keys) appears" : "keys \(keys) appear"
            return err(context.mark, "\(what) more than once in the same map (keep one)")
        case .reader(let problem, _, _, _):
            return err(nil, "cannot read the file: \(problem) (save it as UTF-8 text)")
        case .dataCouldNotBeDecoded:
            return err(nil, "the file is not UTF-8 text (save it as UTF-8)")
        default:
            return err(nil, "cannot read the YAML: \(error) (check the file)")
        }
    }
}

/// The character at a 1-based line and column (columns count Unicode scalars, as libyaml does).
private func character(at mark: Mark, in yaml: String) -> Unicode.Scalar? {
    var line = 1
    var column = 1
    for scalar in yaml.unicodeScalars {
        if line == mark.line && column == mark.column { return scalar }
        if scalar == "\n" {
            line += 1
            column = 1
        } else {
            column += 1
        }
    }
    return nil
}

private extension Node {
    var isMapping: Bool {
        if case .mapping = self { return true }
        return false
    }
}
