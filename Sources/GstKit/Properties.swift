import CGStreamer
import CGStreamerShim
import GLibSupport

/// A Swift value that can be stored into a GObject property; conversion to the
/// property's own type (with range checks) happens in `Element.set(_:_:)`.
public protocol PropertyValue: Sendable {
    var propertyStorage: PropertyStorage { get }
}

/// The Swift-side forms a typed property value can take.
public enum PropertyStorage: Sendable {
    case bool(Bool), int(Int64), uint(UInt64), double(Double), string(String), caps(Caps), structure(Structure)
}

extension Bool: PropertyValue { public var propertyStorage: PropertyStorage { .bool(self) } }
extension Int: PropertyValue { public var propertyStorage: PropertyStorage { .int(Int64(self)) } }
extension Int32: PropertyValue { public var propertyStorage: PropertyStorage { .int(Int64(self)) } }
extension Int64: PropertyValue { public var propertyStorage: PropertyStorage { .int(self) } }
extension UInt: PropertyValue { public var propertyStorage: PropertyStorage { .uint(UInt64(self)) } }
extension UInt32: PropertyValue { public var propertyStorage: PropertyStorage { .uint(UInt64(self)) } }
extension UInt64: PropertyValue { public var propertyStorage: PropertyStorage { .uint(self) } }
extension Double: PropertyValue { public var propertyStorage: PropertyStorage { .double(self) } }
extension Float: PropertyValue { public var propertyStorage: PropertyStorage { .double(Double(self)) } }
extension String: PropertyValue { public var propertyStorage: PropertyStorage { .string(self) } }
extension Caps: PropertyValue { public var propertyStorage: PropertyStorage { .caps(self) } }
extension Structure: PropertyValue { public var propertyStorage: PropertyStorage { .structure(self) } }
extension ClockTime: PropertyValue { public var propertyStorage: PropertyStorage { .uint(nanoseconds) } }

extension Element {
    public func hasProperty(_ name: String) -> Bool { castline_find_property(pointer, name) != nil }

    private func writableSpec(_ property: String, value: String) throws(GstError) -> UnsafeMutablePointer<GParamSpec> {
        guard let spec = castline_find_property(pointer, property) else {
            throw .unknownProperty(element: name, property: property)
        }
        guard spec.pointee.flags.rawValue & G_PARAM_WRITABLE.rawValue != 0 else {
            throw .other("property \"\(property)\" of element \"\(name)\" is not writable")
        }
        return spec
    }

    /// Sets a property from text, parsed by the property's own type (enum nicks, caps strings, numbers...).
    /// This is what gst_util_set_object_arg does internally, but done here so a value that does
    /// not parse, or is out of the property's range, is an error instead of a silent no-op.
    public func set(_ property: String, text: String) throws(GstError) {
        let spec = try writableSpec(property, value: text)
        var value = GValue()
        g_value_init(&value, spec.pointee.value_type)
        defer { g_value_unset(&value) }
        guard gst_value_deserialize_with_pspec(&value, text, spec) != 0 else {
            throw .invalidPropertyValue(element: name, property: property, value: text)
        }
        try store(spec, &value, described: text)
    }

    /// Sets a property from a typed Swift value, converted (range-checked) to the property's type.
    public func set(_ property: String, _ newValue: some PropertyValue) throws(GstError) {
        let storage = newValue.propertyStorage
        let text = "\(newValue)"
        let spec = try writableSpec(property, value: text)
        let type = spec.pointee.value_type
        var value = GValue()
        g_value_init(&value, type)
        defer { g_value_unset(&value) }
        let invalid = GstError.invalidPropertyValue(element: name, property: property, value: text)
        switch (castline_type_fundamental(type), storage) {
        case (castline_type_boolean(), .bool(let b)): g_value_set_boolean(&value, b ? 1 : 0)
        case (castline_type_string(), .string(let s)): g_value_set_string(&value, s)
        case (castline_type_double(), _), (castline_type_float(), _):
            let d: Double
            switch storage {
            case .double(let x): d = x
            case .int(let x): d = Double(x)
            case .uint(let x): d = Double(x)
            default: throw invalid
            }
            if castline_type_fundamental(type) == castline_type_double() { g_value_set_double(&value, d) } else { g_value_set_float(&value, Float(d)) }
        case (castline_type_int(), _), (castline_type_uint(), _), (castline_type_long(), _), (castline_type_ulong(), _),
             (castline_type_int64(), _), (castline_type_uint64(), _), (castline_type_enum(), _), (castline_type_flags(), _):
            let wide: Int64?, unsignedWide: UInt64?
            switch storage {
            case .int(let x): wide = x; unsignedWide = x >= 0 ? UInt64(x) : nil
            case .uint(let x): wide = Int64(exactly: x); unsignedWide = x
            default: throw invalid
            }
            switch castline_type_fundamental(type) {
            case castline_type_int(): guard let v = wide.flatMap(gint.init(exactly:)) else { throw invalid }; g_value_set_int(&value, v)
            case castline_type_uint(): guard let v = unsignedWide.flatMap(guint.init(exactly:)) else { throw invalid }; g_value_set_uint(&value, v)
            case castline_type_long(): guard let v = wide.flatMap(glong.init(exactly:)) else { throw invalid }; g_value_set_long(&value, v)
            case castline_type_ulong(): guard let v = unsignedWide.flatMap(gulong.init(exactly:)) else { throw invalid }; g_value_set_ulong(&value, v)
            case castline_type_int64(): guard let v = wide else { throw invalid }; g_value_set_int64(&value, gint64(v))
            case castline_type_uint64(): guard let v = unsignedWide else { throw invalid }; g_value_set_uint64(&value, guint64(v))
            case castline_type_enum():
                guard let v = wide.flatMap(gint.init(exactly:)), isValidEnum(type, v) else { throw invalid }
                g_value_set_enum(&value, v)
            default: guard let v = unsignedWide.flatMap(guint.init(exactly:)) else { throw invalid }; g_value_set_flags(&value, v)
            }
        case (_, .caps(let caps)) where type == gst_caps_get_type(): g_value_set_boxed(&value, caps.pointer)
        case (_, .structure(let s)) where type == gst_structure_get_type(): g_value_set_boxed(&value, s.pointer)
        case (_, .string(let s)):
            // Anything else given as a string: parse it by the property's type, as set(_:text:) does.
            guard gst_value_deserialize_with_pspec(&value, s, spec) != 0 else { throw invalid }
        default:
            throw invalid
        }
        try store(spec, &value, described: text)
    }

    private func isValidEnum(_ type: GType, _ v: gint) -> Bool {
        guard let enumClass = g_type_class_ref(type) else { return false }
        defer { g_type_class_unref(enumClass) }
        return g_enum_get_value(enumClass.assumingMemoryBound(to: GEnumClass.self), v) != nil
    }

    /// Rejects out-of-range values (g_param_value_validate would clamp them silently) and sets.
    private func store(_ spec: UnsafeMutablePointer<GParamSpec>, _ value: inout GValue, described text: String) throws(GstError) {
        if g_param_value_validate(spec, &value) != 0 {
            throw .invalidPropertyValue(element: name, property: String(cString: spec.pointee.name), value: text)
        }
        g_object_set_property(cast(pointer, to: GObject.self), spec.pointee.name, &value)
    }

    private func withValue<R>(_ property: String, _ body: (UnsafePointer<GValue>) -> R?) -> R? {
        readProperty(property, of: pointer, body)
    }

    /// String properties as they are; other types serialized as GStreamer would write them (enum nicks, caps text).
    public func string(_ property: String) -> String? {
        withValue(property) { v in
            if v.pointee.g_type == castline_type_string() { return g_value_get_string(v).map { String(cString: $0) } }
            return takeString(gst_value_serialize(v))
        }
    }
    /// int/uint/long/int64/uint64/enum/flags properties.
    public func int(_ property: String) -> Int? { withValue(property, GValueReader.int) }
    public func double(_ property: String) -> Double? { withValue(property, GValueReader.double) }
    public func bool(_ property: String) -> Bool? {
        withValue(property) { v in v.pointee.g_type == castline_type_boolean() ? g_value_get_boolean(v) != 0 : nil }
    }
    /// A GstStructure-typed property (e.g. rtmp2sink's "stats"), copied.
    public func structure(_ property: String) -> Structure? {
        withValue(property) { v in
            guard v.pointee.g_type == gst_structure_get_type(), let s = gst_value_get_structure(v) else { return nil }
            return Structure(copying: s)
        }
    }
    public func caps(_ property: String) -> Caps? {
        withValue(property) { v in
            guard v.pointee.g_type == gst_caps_get_type(), let c = gst_value_get_caps(v) else { return nil }
            return Caps(borrowing: UnsafeMutablePointer(mutating: c))
        }
    }
    /// An object-typed property that holds an element (e.g. a bin's "video-sink").
    public func element(_ property: String) -> Element? {
        withValue(property) { v in
            guard castline_type_fundamental(v.pointee.g_type) == castline_type_object(),
                  let object = g_value_get_object(v), castline_is_a(object, gst_element_get_type()) != 0 else { return nil }
            return Element.wrap(borrowing: object.assumingMemoryBound(to: GstElement.self))
        }
    }
}

extension Pad {
    /// int/uint/long/int64/uint64/enum/flags pad properties (e.g. multiqueue's "current-level-time").
    public func int(_ property: String) -> Int? { readProperty(property, of: pointer, GValueReader.int) }
}

/// Reads a GObject's property into a GValue of its own type.
private func readProperty<R>(_ property: String, of object: UnsafeMutableRawPointer,
                             _ body: (UnsafePointer<GValue>) -> R?) -> R? {
    guard let spec = castline_find_property(object, property),
          spec.pointee.flags.rawValue & G_PARAM_READABLE.rawValue != 0 else { return nil }
    var value = GValue()
    g_value_init(&value, spec.pointee.value_type)
    defer { g_value_unset(&value) }
    g_object_get_property(object.assumingMemoryBound(to: GObject.self), spec.pointee.name, &value)
    return withUnsafePointer(to: &value) { body($0) }
}
