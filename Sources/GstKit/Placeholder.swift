import CGStreamer
import CGStreamerShim
public enum GstPlaceholder { public static func version() -> String { String(cString: gst_version_string()) } }
