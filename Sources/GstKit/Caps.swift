import CGStreamer
import CGStreamerShim
import GLibSupport

/// Media capabilities ("audio/x-raw, rate=48000").
public final class Caps: @unchecked Sendable, CustomStringConvertible, Equatable {  // holds one GstCaps ref and never mutates it; caps refcounting is atomic
    let pointer: UnsafeMutablePointer<GstCaps>

    /// Takes over a reference the caller owns.
    init(owning pointer: UnsafeMutablePointer<GstCaps>) { self.pointer = pointer }
    /// Adds a reference of our own.
    convenience init(borrowing pointer: UnsafeMutablePointer<GstCaps>) { self.init(owning: gst_caps_ref(pointer)) }
    deinit { gst_caps_unref(pointer) }

    public init(_ string: String) throws(GstError) {
        Gst.initialize()
        guard let parsed = gst_caps_from_string(string) else { throw .caps("cannot parse caps \"\(string)\"") }
        pointer = parsed
    }

    public static var any: Caps { Gst.initialize(); return Caps(owning: gst_caps_new_any()) }
    public static var empty: Caps { Gst.initialize(); return Caps(owning: gst_caps_new_empty()) }

    public var description: String { takeString(gst_caps_to_string(pointer)) ?? "" }
    public var isFixed: Bool { gst_caps_is_fixed(pointer) != 0 }
    public var isAny: Bool { gst_caps_is_any(pointer) != 0 }
    public var isEmpty: Bool { gst_caps_is_empty(pointer) != 0 }
    public var count: Int { Int(gst_caps_get_size(pointer)) }

    /// A copy of the structure at `index`.
    public func structure(at index: Int) -> Structure? {
        guard index >= 0, index < count, let s = gst_caps_get_structure(pointer, guint(index)) else { return nil }
        return Structure(copying: s)
    }

    /// Name of the first structure, e.g. "audio/x-raw".
    public var mediaType: String? {
        guard count > 0, let s = gst_caps_get_structure(pointer, 0) else { return nil }
        return gst_structure_get_name(s).map { String(cString: $0) }
    }

    public func intersects(_ other: Caps) -> Bool { gst_caps_can_intersect(pointer, other.pointer) != 0 }
    public func intersection(_ other: Caps) -> Caps { Caps(owning: gst_caps_intersect(pointer, other.pointer)) }
    public func isSubset(of other: Caps) -> Bool { gst_caps_is_subset(pointer, other.pointer) != 0 }

    public static func == (a: Caps, b: Caps) -> Bool { gst_caps_is_equal(a.pointer, b.pointer) != 0 }
}

/// A named set of typed fields; owns its own copy, so it is independent of where it came from.
public final class Structure: @unchecked Sendable, CustomStringConvertible {  // owns a private GstStructure copy that is never mutated after init
    let pointer: UnsafeMutablePointer<GstStructure>

    init(owning pointer: UnsafeMutablePointer<GstStructure>) { self.pointer = pointer }
    convenience init(copying pointer: UnsafePointer<GstStructure>) { self.init(owning: gst_structure_copy(pointer)) }
    deinit { gst_structure_free(pointer) }

    /// e.g. `Structure("castline-mark, id=(int)3")`
    public init(_ string: String) throws(GstError) {
        Gst.initialize()
        guard let parsed = gst_structure_from_string(string, nil) else {
            throw .other("cannot parse structure \"\(string)\"")
        }
        pointer = parsed
    }

    public var name: String { gst_structure_get_name(pointer).map { String(cString: $0) } ?? "" }
    public var description: String { takeString(gst_structure_to_string(pointer)) ?? "" }
    public func has(_ field: String) -> Bool { gst_structure_has_field(pointer, field) != 0 }

    public var fieldNames: [String] {
        (0..<max(0, gst_structure_n_fields(pointer))).compactMap { index in
            gst_structure_nth_field_name(pointer, guint(index)).map { String(cString: $0) }
        }
    }

    private func value(_ field: String) -> UnsafePointer<GValue>? { gst_structure_get_value(pointer, field) }

    public func string(_ field: String) -> String? {
        gst_structure_get_string(pointer, field).map { String(cString: $0) }
    }
    /// Any integer-typed field (int, uint, int64, uint64) that fits in Int.
    public func int(_ field: String) -> Int? { value(field).flatMap(GValueReader.int) }
    public func uint64(_ field: String) -> UInt64? {
        guard let v = value(field) else { return nil }
        if v.pointee.g_type == castline_type_uint64() { return UInt64(g_value_get_uint64(v)) }
        return GValueReader.int(v).flatMap { $0 >= 0 ? UInt64($0) : nil }
    }
    /// Double, float or integer fields as Double.
    public func double(_ field: String) -> Double? { value(field).flatMap(GValueReader.double) }
    public func bool(_ field: String) -> Bool? {
        var result: gboolean = 0
        return gst_structure_get_boolean(pointer, field, &result) != 0 ? result != 0 : nil
    }
    /// A caps-typed field (a missing-plugin message's `detail`, for one).
    public func caps(_ field: String) -> Caps? {
        guard let v = value(field), v.pointee.g_type == gst_caps_get_type(),
              let caps = gst_value_get_caps(v) else { return nil }
        return Caps(borrowing: UnsafeMutablePointer(mutating: caps))
    }
    /// A buffer-typed field's bytes, copied (a caps' `codec_data`).
    public func bytes(_ field: String) -> [UInt8]? {
        guard let v = value(field), v.pointee.g_type == gst_buffer_get_type(),
              let boxed = g_value_get_boxed(v) else { return nil }
        return mapBuffer(boxed.assumingMemoryBound(to: GstBuffer.self)) { Array($0) }
    }
    /// nil when missing or GST_CLOCK_TIME_NONE.
    public func clockTime(_ field: String) -> ClockTime? {
        var result: GstClockTime = 0
        guard gst_structure_get_clock_time(pointer, field, &result) != 0 else { return nil }
        return ClockTime(raw: result)
    }
    public func fraction(_ field: String) -> (Int, Int)? {
        var n: gint = 0, d: gint = 0
        guard gst_structure_get_fraction(pointer, field, &n, &d) != 0 else { return nil }
        return (Int(n), Int(d))
    }
    /// A GValueArray, GstValueList or GstValueArray of numbers (e.g. `level`'s rms/peak/decay).
    public func doubles(_ field: String) -> [Double]? {
        guard let v = value(field) else { return nil }
        let type = v.pointee.g_type
        var items: [UnsafePointer<GValue>] = []
        if type == castline_type_value_array() {
            let n = castline_value_array_count(v)
            for i in 0..<n { if let item = castline_value_array_nth(v, i) { items.append(item) } }
        } else if type == gst_value_list_get_type() {
            for i in 0..<gst_value_list_get_size(v) { if let item = gst_value_list_get_value(v, i) { items.append(item) } }
        } else if type == gst_value_array_get_type() {
            for i in 0..<gst_value_array_get_size(v) { if let item = gst_value_array_get_value(v, i) { items.append(item) } }
        } else {
            return nil
        }
        var result: [Double] = []
        for item in items {
            guard let d = GValueReader.double(item) else { return nil }
            result.append(d)
        }
        return result
    }
    /// A GValueArray of structures (srtsink's `callers`), each copied; nil when the field is missing or not one.
    public func structures(_ field: String) -> [Structure]? {
        guard let v = value(field), v.pointee.g_type == castline_type_value_array() else { return nil }
        return (0..<castline_value_array_count(v)).compactMap { index in
            guard let item = castline_value_array_nth(v, index), item.pointee.g_type == gst_structure_get_type(),
                  let nested = gst_value_get_structure(item) else { return nil }
            return Structure(copying: nested)
        }
    }
    /// A nested structure field, copied.
    public func structure(_ field: String) -> Structure? {
        guard let v = value(field), v.pointee.g_type == gst_structure_get_type(),
              let nested = gst_value_get_structure(v) else { return nil }
        return Structure(copying: nested)
    }
}

/// Reads numbers out of GValues of any numeric type.
enum GValueReader {
    static func int(_ v: UnsafePointer<GValue>) -> Int? {
        let type = v.pointee.g_type
        switch castline_type_fundamental(type) {
        case castline_type_int(): return Int(g_value_get_int(v))
        case castline_type_uint(): return Int(g_value_get_uint(v))
        case castline_type_long(): return Int(g_value_get_long(v))
        case castline_type_ulong(): return Int(exactly: g_value_get_ulong(v))
        case castline_type_int64(): return Int(g_value_get_int64(v))
        case castline_type_uint64(): return Int(exactly: g_value_get_uint64(v))
        case castline_type_enum(): return Int(g_value_get_enum(v))
        case castline_type_flags(): return Int(g_value_get_flags(v))
        default: return nil
        }
    }
    static func double(_ v: UnsafePointer<GValue>) -> Double? {
        switch castline_type_fundamental(v.pointee.g_type) {
        case castline_type_double(): return g_value_get_double(v)
        case castline_type_float(): return Double(g_value_get_float(v))
        default: return int(v).map(Double.init)
        }
    }
}
