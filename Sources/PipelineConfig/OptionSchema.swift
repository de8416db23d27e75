/// The type of one option in a component's schema.
public indirect enum OptionType: Sendable, Hashable {
    case string, bool, duration, bitrate, secret
    case int(ClosedRange<Int>? = nil)
    case double(ClosedRange<Double>? = nil)
    /// A string that must be one of these.
    case choice([String])
    /// A nested map of options.
    case object(OptionSchema)

    /// `.int` without a range (so `OptionField("n", .int, ...)` reads naturally).
    public static var int: OptionType { .int(nil) }
    /// `.double` without a range.
    public static var double: OptionType { .double(nil) }

    /// For help text and error messages: "duration", "int 1...65535", "one of h264, vp8", "object".
    public var displayName: String {
        switch self {
        case .string: "string"
        case .bool: "bool"
        case .duration: "duration"
        case .bitrate: "bitrate"
        case .secret: "secret"
        case .int(let range): range.map { "int \($0.lowerBound)...\($0.upperBound)" } ?? "int"
        case .double(let range): range.map { "double \($0.lowerBound)...\($0.upperBound)" } ?? "double"
        case .choice(let values): "one of " + values.joined(separator: ", ")
        case .object: "object"
        }
    }
}

/// One option of a component.
public struct OptionField: Sendable, Hashable {
    public var name: String
    public var type: OptionType
    /// Filled in when the file does not set the option. For `.object` fields a default (usually `.object(.init())`)
    /// means "present unless told otherwise", and the nested fields' defaults are filled into it.
    public var defaultValue: OptionValue?
    public var isRequired: Bool
    public var help: String

    public init(_ name: String, _ type: OptionType, default: OptionValue? = nil, required: Bool = false, help: String) {
        self.name = name
        self.type = type
        self.defaultValue = `default`
        self.isRequired = required
        self.help = help
    }
}

/// The options a component kind accepts. `name` is reserved (every component may carry `name:`).
public struct OptionSchema: Sendable, Hashable {
    public var fields: [OptionField]
    /// The field a scalar component value sets: `gst: "audioecho delay=500000000"` sets `description`.
    public var shorthand: String?

    public init(_ fields: [OptionField], shorthand: String? = nil) {
        self.fields = fields
        self.shorthand = shorthand
    }

    /// A schema with no options.
    public static var empty: OptionSchema { OptionSchema([]) }

    public func field(_ name: String) -> OptionField? {
        fields.first { $0.name == name }
    }
}

/// A validated option value.
public enum OptionValue: Sendable, Hashable, CustomStringConvertible {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case duration(Duration)
    case bitrate(Bitrate)
    case secret(Secret)
    case object(OptionValues)

    /// Config text ("10s", "2500k", "true"); secrets print "****"; objects "{a: 1, b: 2}".
    public var description: String {
        switch self {
        case .string(let s): s
        case .int(let i): String(i)
        case .double(let d): String(d)
        case .bool(let b): String(b)
        case .duration(let d): d.configText
        case .bitrate(let b): b.description
        case .secret(let s): s.description
        case .object(let o): "{" + o.names.map { "\($0): \(o[$0]!)" }.joined(separator: ", ") + "}"
        }
    }
}

/// The options of one component (or of one `.object` option), by name.
public struct OptionValues: Sendable, Hashable, CustomStringConvertible {
    private var entries: [String: OptionValue]

    public init(_ entries: [String: OptionValue] = [:]) {
        self.entries = entries
    }

    public subscript(_ name: String) -> OptionValue? {
        get { entries[name] }
        set { entries[name] = newValue }
    }

    /// The names that have a value, sorted.
    public var names: [String] { entries.keys.sorted() }
    public var isEmpty: Bool { entries.isEmpty }
    public var count: Int { entries.count }

    public var description: String { OptionValue.object(self).description }

    /// Every secret in these values, nested objects included, in name order.
    var allSecrets: [Secret] {
        names.flatMap { name -> [Secret] in
            switch entries[name]! {
            case .secret(let s): [s]
            case .object(let o): o.allSecrets
            default: []
            }
        }
    }
}
