/// Where each key of a pipeline file sits, so an error found after validation (by a
/// component, across fields) still names `FILE:LINE:COL`. Not part of a spec's identity:
/// two specs that differ only in layout are the same pipeline.
public struct SourcePositions: Sendable, Hashable {
    private let positions: [String: Position]

    public static let none = SourcePositions(positions: [:])

    private init(positions: [String: Position]) {
        self.positions = positions
    }

    init(_ tree: Tree) {
        var positions: [String: Position] = [:]
        func walk(_ node: Tree, _ path: String) {
            switch node {
            case .scalar: break
            case .map(let entries, _):
                for entry in entries {
                    let child = path.isEmpty ? entry.key : "\(path).\(entry.key)"
                    // A key's own place when its value is a map or list; the value's for a scalar.
                    if case .scalar = entry.value { positions[child] = entry.value.position } else { positions[child] = entry.keyPosition }
                    walk(entry.value, child)
                }
            case .list(let items, _):
                for (index, item) in items.enumerated() {
                    let child = "\(path)[\(index)]"
                    positions[child] = item.position
                    walk(item, child)
                }
            }
        }
        walk(tree, "")
        self.positions = positions
    }

    /// `FILE:LINE:COL` of `keyPath`, or of the nearest key above it that the file has
    /// (a shorthand such as `- gst: "..."` holds `gst.description` in `gst`); nil when unknown.
    public func location(of keyPath: String) -> String? {
        var path = Substring(keyPath)
        while !path.isEmpty {
            if let position = positions[String(path)], position.line > 0 {
                return "\(position.file):\(position.line):\(position.column)"
            }
            guard let cut = path.lastIndex(where: { $0 == "." || $0 == "[" }) else { break }
            path = path[..<cut]
        }
        return nil
    }

    public static func == (lhs: SourcePositions, rhs: SourcePositions) -> Bool { true }
    public func hash(into hasher: inout Hasher) {}
}
