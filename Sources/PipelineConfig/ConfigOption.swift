/// A Swift type an option's value can be read as.
public protocol OptionRepresentable: Sendable {
    /// The schema type it is declared with unless the declaration narrows it (a range, a choice).
    static var optionType: OptionType { get }
    init?(optionValue: OptionValue)
    /// nil for an absent value (an optional with nothing in it).
    var optionValue: OptionValue? { get }
}

/// One option of a component, declared once: its schema field (name, type, default,
/// help) and its typed read, `spec.options[Self.every]`. The default a component reads
/// is the one the schema fills in and `castline stages` shows, because it is this one.
public struct ConfigOption<Value: OptionRepresentable>: Sendable {
    public let field: OptionField
    public let defaultValue: Value

    public init(_ name: String, _ type: OptionType = Value.optionType, default: Value, help: String) {
        self.field = OptionField(name, type, default: `default`.optionValue, help: help)
        self.defaultValue = `default`
    }

    public var name: String { field.name }
}

extension ConfigOption where Value: ExpressibleByNilLiteral {
    /// An option with no default: absent unless the file sets it (or it is required).
    public init(_ name: String, _ type: OptionType = Value.optionType, required: Bool = false, help: String) {
        self.field = OptionField(name, type, default: nil, required: required, help: help)
        self.defaultValue = nil
    }
}

/// What a schema is made of: any `ConfigOption`, whatever its value type.
public protocol AnyConfigOption: Sendable {
    var field: OptionField { get }
}

extension ConfigOption: AnyConfigOption {}

extension OptionSchema {
    /// The schema of these declarations, in order.
    public init(_ options: any AnyConfigOption..., shorthand: String? = nil) {
        self.init(options.map(\.field), shorthand: shorthand)
    }
}

extension OptionValues {
    /// The option's value as the file set it, else its declared default.
    public subscript<Value>(_ option: ConfigOption<Value>) -> Value {
        self[option.name].flatMap(Value.init(optionValue:)) ?? option.defaultValue
    }

    /// Whether the file set this option (its default not filled in yet).
    public func isSet(_ option: some AnyConfigOption) -> Bool {
        self[option.field.name] != nil
    }
}

extension String: OptionRepresentable {
    public static var optionType: OptionType { .string }
    public init?(optionValue: OptionValue) {
        guard case .string(let value) = optionValue else { return nil }
        self = value
    }
    public var optionValue: OptionValue? { .string(self) }
}

extension Bool: OptionRepresentable {
    public static var optionType: OptionType { .bool }
    public init?(optionValue: OptionValue) {
        guard case .bool(let value) = optionValue else { return nil }
        self = value
    }
    public var optionValue: OptionValue? { .bool(self) }
}

extension Int: OptionRepresentable {
    public static var optionType: OptionType { .int }
    public init?(optionValue: OptionValue) {
        guard case .int(let value) = optionValue else { return nil }
        self = value
    }
    public var optionValue: OptionValue? { .int(self) }
}

extension Double: OptionRepresentable {
    public static var optionType: OptionType { .double }
    /// A file may write a whole number where a double is asked for.
    public init?(optionValue: OptionValue) {
        switch optionValue {
        case .double(let value): self = value
        case .int(let value): self = Double(value)
        default: return nil
        }
    }
    public var optionValue: OptionValue? { .double(self) }
}

extension Duration: OptionRepresentable {
    public static var optionType: OptionType { .duration }
    public init?(optionValue: OptionValue) {
        guard case .duration(let value) = optionValue else { return nil }
        self = value
    }
    public var optionValue: OptionValue? { .duration(self) }
}

extension Bitrate: OptionRepresentable {
    public static var optionType: OptionType { .bitrate }
    public init?(optionValue: OptionValue) {
        guard case .bitrate(let value) = optionValue else { return nil }
        self = value
    }
    public var optionValue: OptionValue? { .bitrate(self) }
}

extension Secret: OptionRepresentable {
    public static var optionType: OptionType { .secret }
    public init?(optionValue: OptionValue) {
        guard case .secret(let value) = optionValue else { return nil }
        self = value
    }
    public var optionValue: OptionValue? { .secret(self) }
}

/// A nested map (`video: { width: 640 }`); its schema is given with the declaration.
extension OptionValues: OptionRepresentable {
    public static var optionType: OptionType { .object(.empty) }
    public init?(optionValue: OptionValue) {
        guard case .object(let value) = optionValue else { return nil }
        self = value
    }
    public var optionValue: OptionValue? { .object(self) }
}

extension Optional: OptionRepresentable where Wrapped: OptionRepresentable {
    public static var optionType: OptionType { Wrapped.optionType }
    public init?(optionValue: OptionValue) {
        guard let value = Wrapped(optionValue: optionValue) else { return nil }
        self = .some(value)
    }
    public var optionValue: OptionValue? { self?.optionValue }
}

/// A choice read as its enum: `ConfigOption<RateControl>("rate-control", default: .cbr, ...)`.
extension OptionRepresentable where Self: RawRepresentable & CaseIterable, RawValue == String {
    public static var optionType: OptionType { .choice(allCases.map(\.rawValue)) }
    public init?(optionValue: OptionValue) {
        guard case .string(let text) = optionValue else { return nil }
        self.init(rawValue: text)
    }
    public var optionValue: OptionValue? { .string(rawValue) }
}
