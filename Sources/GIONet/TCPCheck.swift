import CGStreamer

/// Whether a TCP server answers: resolves and connects once, then closes.
public enum TCPCheck {
    /// Throws `GIONetError` with GIO's reason ("Connection refused", "Name or service not known", ...).
    public static func connect(host: String, port: Int, timeout: Duration) throws(GIONetError) {
        guard let client = g_socket_client_new() else { throw GIONetError("cannot create a socket client") }
        defer { g_object_unref(UnsafeMutableRawPointer(client)) }
        g_socket_client_set_timeout(client, guint(max(1, timeout.components.seconds)))
        var error: UnsafeMutablePointer<GError>?
        let connection = g_socket_client_connect_to_host(client, host, guint16(clamping: port), nil, &error)
        if let connection {
            g_io_stream_close(UnsafeMutablePointer(OpaquePointer(connection)), nil, nil)
            g_object_unref(UnsafeMutableRawPointer(connection))
            return
        }
        var reason = "no answer"
        if let error {
            if let message = error.pointee.message { reason = String(cString: message) }
            g_error_free(error)
        }
        throw GIONetError(reason)
    }
}
