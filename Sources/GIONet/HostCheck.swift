import CGStreamer

/// Whether a host name resolves, without connecting: a probe connection would use up a server
/// that takes one connection (`ffmpeg -listen 1`), and a refused one is reported by the publish itself.
public enum HostCheck {
    /// Throws `GIONetError` with GIO's reason ("Name or service not known", ...).
    public static func resolve(_ host: String, cancellable: Cancellable? = nil) throws(GIONetError) {
        guard let resolver = g_resolver_get_default() else { throw GIONetError("cannot get the system resolver") }
        defer { g_object_unref(resolver) }
        var error: UnsafeMutablePointer<GError>?
        if let addresses = g_resolver_lookup_by_name(resolver, host, cancellable?.pointer, &error) {
            g_resolver_free_addresses(addresses)
            return
        }
        throw GIONetError(error.map(takeError) ?? "no address")
    }
}
