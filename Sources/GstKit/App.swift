import CGStreamer
import CGStreamerShim
import GLibSupport

/// A buffer with its caps, as appsink hands it out.
public final class Sample: @unchecked Sendable {  // one GstSample ref, never mutated
    let pointer: OpaquePointer  // GstSample*
    init(owning pointer: OpaquePointer) { self.pointer = pointer }
    deinit { gst_sample_unref(pointer) }

    private var buffer: UnsafeMutablePointer<GstBuffer>? { gst_sample_get_buffer(pointer) }

    public var caps: Caps? { gst_sample_get_caps(pointer).map(Caps.init(borrowing:)) }
    public var pts: ClockTime? { buffer.flatMap { ClockTime(raw: $0.pointee.pts) } }
    public var dts: ClockTime? { buffer.flatMap { ClockTime(raw: $0.pointee.dts) } }
    public var duration: ClockTime? { buffer.flatMap { ClockTime(raw: $0.pointee.duration) } }
    public var size: Int { buffer.map { Int(gst_buffer_get_size($0)) } ?? 0 }
    /// Not a keyframe (GST_BUFFER_FLAG_DELTA_UNIT).
    public var isDelta: Bool { buffer.map { castline_buffer_flag_is_set($0, bufferFlagDelta) != 0 } ?? false }
    /// A copy of the bytes.
    public var data: [UInt8] { withUnsafeBytes { Array($0) } ?? [] }
    /// The buffer's pts as GStreamer's stream time in the sample's segment (a position in the
    /// stream, without the offset an encoder adds to its timestamps); nil outside the segment.
    public var streamTime: ClockTime? {
        guard let buffer, let segment = gst_sample_get_segment(pointer) else { return nil }
        return ClockTime(raw: gst_segment_to_stream_time(segment, GST_FORMAT_TIME, buffer.pointee.pts))
    }

    /// The buffer's pts and dts as running time in the sample's segment.
    public var runningTime: (pts: ClockTime?, dts: ClockTime?) {
        guard let buffer, let segment = gst_sample_get_segment(pointer) else { return (pts, dts) }
        return (ClockTime(raw: gst_segment_to_running_time(segment, GST_FORMAT_TIME, buffer.pointee.pts)),
                ClockTime(raw: gst_segment_to_running_time(segment, GST_FORMAT_TIME, buffer.pointee.dts)))
    }
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R? {
        buffer.flatMap { mapBuffer($0, body) }
    }
}

typealias SampleHandler = @Sendable (Sample) -> FlowResult

/// The handlers of one appsink: each sample, and the end of the stream.
struct AppSinkHandlers: Sendable {
    let sample: SampleHandler
    let endOfStream: (@Sendable () -> Void)?
}

public final class AppSink: @unchecked Sendable {  // immutable fields; appsink API is thread-safe
    public let element: Element
    var sink: UnsafeMutablePointer<GstAppSink> { cast(element.pointer) }

    public init(_ element: Element) throws(GstError) {
        guard castline_is_a(element.pointer, gst_app_sink_get_type()) != 0 else {
            throw .other("element \"\(element.name)\" is not an appsink")
        }
        self.element = element
    }
    public static func make(name: String? = nil) throws(GstError) -> AppSink {
        try AppSink(Element.make("appsink", name: name))
    }

    public var caps: Caps? {
        get { gst_app_sink_get_caps(sink).map(Caps.init(owning:)) }
        set { gst_app_sink_set_caps(sink, newValue?.pointer) }
    }
    public var isEOS: Bool { gst_app_sink_is_eos(sink) != 0 }

    /// Called on the streaming thread for each new sample, and at the end of the
    /// stream (replaces any previous handlers; released when replaced or when the appsink dies).
    public func onSample(_ handler: @escaping @Sendable (Sample) -> FlowResult,
                         endOfStream: (@Sendable () -> Void)? = nil) {
        var callbacks = GstAppSinkCallbacks()
        callbacks.new_sample = { sink, data in
            guard let sink, let handlers = CallbackBox<AppSinkHandlers>.from(data) else { return GST_FLOW_ERROR }
            guard let sample = gst_app_sink_pull_sample(sink) else { return GST_FLOW_EOS }
            return handlers.sample(Sample(owning: sample)).raw
        }
        callbacks.eos = { _, data in
            CallbackBox<AppSinkHandlers>.from(data)?.endOfStream?()
        }
        let handlers = AppSinkHandlers(sample: handler, endOfStream: endOfStream)
        gst_app_sink_set_callbacks(sink, &callbacks, CallbackBox<AppSinkHandlers>(handlers).retainedPointer(),
                                   { data in CallbackBox<AppSinkHandlers>.release(data) })
    }

    /// Waits for the next sample (nil timeout = until one arrives, EOS or flushing). Needs PLAYING.
    public func pullSample(timeout: Duration?) -> Sample? {
        gst_app_sink_try_pull_sample(sink, timeout.clockTimeout).map(Sample.init(owning:))
    }
}

/// need-data / enough-data handlers of one AppSrc.
final class AppSrcHandlers: Sendable {
    let needData: Protected<(@Sendable (Int) -> Void)?> = Protected(nil)
    let enoughData: Protected<(@Sendable () -> Void)?> = Protected(nil)
}

public final class AppSrc: @unchecked Sendable {  // immutable fields; appsrc API is thread-safe; handlers are lock-protected
    public let element: Element
    var src: UnsafeMutablePointer<GstAppSrc> { cast(element.pointer) }
    private let handlers = AppSrcHandlers()
    private let callbacksInstalled = Protected(false)

    public init(_ element: Element) throws(GstError) {
        guard castline_is_a(element.pointer, gst_app_src_get_type()) != 0 else {
            throw .other("element \"\(element.name)\" is not an appsrc")
        }
        self.element = element
    }
    public static func make(name: String? = nil) throws(GstError) -> AppSrc {
        try AppSrc(Element.make("appsrc", name: name))
    }

    public var caps: Caps? {
        get { gst_app_src_get_caps(src).map(Caps.init(owning:)) }
        set { gst_app_src_set_caps(src, newValue?.pointer) }
    }

    /// Live or not, GST_FORMAT_TIME (else bytes) segments, queue limit and whether push blocks when full.
    public func configure(isLive: Bool, format time: Bool = true, maxBytes: UInt64? = nil, block: Bool = false) {
        try? element.set("is-live", isLive)
        try? element.set("format", text: time ? "time" : "bytes")
        if let maxBytes { gst_app_src_set_max_bytes(src, guint64(maxBytes)) }
        try? element.set("block", block)
    }

    /// Copies the bytes into a new buffer and queues it.
    @discardableResult
    public func push(_ bytes: [UInt8], pts: ClockTime?, duration: ClockTime?, isDelta: Bool = false) -> FlowResult {
        bytes.withUnsafeBytes { push($0, pts: pts, dts: nil, duration: duration, isDelta: isDelta, discont: false) }
    }

    /// Copies the bytes into a new buffer with these timestamps and queues it;
    /// `discont` marks the first buffer after a jump.
    @discardableResult
    public func push(_ bytes: UnsafeRawBufferPointer, pts: ClockTime?, dts: ClockTime?, duration: ClockTime?,
                     isDelta: Bool, discont: Bool) -> FlowResult {
        guard let buffer = bytes.isEmpty ? gst_buffer_new() : gst_buffer_new_memdup(bytes.baseAddress, gsize(bytes.count))
        else { return .error }
        buffer.pointee.pts = pts.raw
        buffer.pointee.dts = dts.raw
        buffer.pointee.duration = duration.raw
        if isDelta { castline_buffer_flag_set(buffer, bufferFlagDelta, 1) }
        if discont { castline_buffer_flag_set(buffer, bufferFlagDiscont, 1) }
        return FlowResult(gst_app_src_push_buffer(src, buffer))  // takes the buffer
    }

    /// Queues a sample's buffer (a shallow copy: the memory is shared) with its
    /// timestamps turned into running time in the sample's segment, so media
    /// from another pipeline keeps its place on the time line whatever segment
    /// it carried (x264enc's, for one, starts at 1000 hours). The sample's caps
    /// become appsrc's caps when they differ.
    @discardableResult
    public func pushInRunningTime(_ sample: Sample) -> FlowResult {
        guard let buffer = gst_sample_get_buffer(sample.pointer), let copy = gst_buffer_copy(buffer) else { return .error }
        let running = sample.runningTime
        copy.pointee.pts = running.pts.raw
        copy.pointee.dts = running.dts.raw
        if let caps = gst_sample_get_caps(sample.pointer) {
            let current = gst_app_src_get_caps(src)
            if current.map({ gst_caps_is_equal($0, caps) == 0 }) ?? true { gst_app_src_set_caps(src, caps) }
            if let current { gst_caps_unref(current) }
        }
        return FlowResult(gst_app_src_push_buffer(src, copy))  // takes the copy
    }

    /// Queues a sample's buffer (memory shared) without its timestamps: a live appsrc with
    /// do-timestamp stamps it with this pipeline's running time as it enters. `discont`: the
    /// first after a gap.
    @discardableResult
    public func pushUnstamped(_ sample: Sample, discont: Bool = false) -> FlowResult {
        guard let buffer = gst_sample_get_buffer(sample.pointer), let copy = gst_buffer_copy(buffer) else { return .error }
        copy.pointee.pts = ClockTime?.none.raw
        copy.pointee.dts = ClockTime?.none.raw
        if discont { castline_buffer_flag_set(copy, bufferFlagDiscont, 1) }
        return FlowResult(gst_app_src_push_buffer(src, copy))  // takes the copy
    }

    /// Bytes queued, not yet pushed downstream.
    public var queuedBytes: UInt64 { UInt64(gst_app_src_get_current_level_bytes(src)) }

    @discardableResult
    public func endOfStream() -> FlowResult { FlowResult(gst_app_src_end_of_stream(src)) }

    /// Called (streaming thread) when appsrc wants more data; the argument is a byte hint (-1 = any).
    public func onNeedData(_ handler: @escaping @Sendable (Int) -> Void) {
        handlers.needData.withLock { $0 = handler }
        installCallbacks()
    }
    public func onEnoughData(_ handler: @escaping @Sendable () -> Void) {
        handlers.enoughData.withLock { $0 = handler }
        installCallbacks()
    }

    /// Once per wrapper: both callbacks go through one box, released by appsrc's destroy notify.
    private func installCallbacks() {
        guard callbacksInstalled.withLock({ installed in defer { installed = true }; return !installed }) else { return }
        var callbacks = GstAppSrcCallbacks()
        callbacks.need_data = { _, length, data in
            guard let handlers = CallbackBox<AppSrcHandlers>.from(data) else { return }
            let hint = length == guint.max ? -1 : Int(length)
            handlers.needData.withLock { $0 }?(hint)
        }
        callbacks.enough_data = { _, data in
            guard let handlers = CallbackBox<AppSrcHandlers>.from(data) else { return }
            handlers.enoughData.withLock { $0 }?()
        }
        gst_app_src_set_callbacks(src, &callbacks, CallbackBox<AppSrcHandlers>(handlers).retainedPointer(),
                                  { data in CallbackBox<AppSrcHandlers>.release(data) })
    }
}
