import CGStreamer
import CGStreamerShim
import Foundation
import Synchronization
import GLibSupport

/// A loopback relay that carries RTMP over GIO's TLS, so rtmp2sink can publish plain RTMP to
/// `rtmp://127.0.0.1:localPort/app/key` while the relay validates the real server with `--ca-file` or
/// `--fingerprint` (rtmp2sink itself only trusts the system store and ignores SSL_CERT_FILE).
///
/// Each accepted local connection gets its own TCP connect + TLS handshake to the remote server, then the
/// two are spliced both ways (g_io_stream_splice_async). Everything is asynchronous on one GMainContext run
/// by the relay's own thread, so any number of connections (rtmp2sink reconnects) proceed independently.
public final class TLSRelay: @unchecked Sendable {  // mutable state is the locked `running` and `failureHandler`
    private let remoteHost: String
    private let remotePort: Int
    private let serverName: String?
    private let trust: TLSTrust
    private let failureHandler = Protected<(@Sendable (String) -> Void)?>(nil)
    private let running = Protected<RunningRelay?>(nil)

    /// remote: the RTMPS server; serverName: SNI and the name to validate (default remoteHost).
    public init(remoteHost: String, remotePort: Int, serverName: String? = nil, trust: TLSTrust) {
        self.remoteHost = remoteHost
        self.remotePort = remotePort
        self.serverName = serverName
        self.trust = trust
    }

    deinit { stop() }

    /// Listens on 127.0.0.1 on a free port and returns it. Runs its own GMainContext on a dedicated thread.
    /// Calling it again while running returns the same port.
    public func start() throws(GIONetError) -> Int {
        let result = running.withLock { (current: inout RunningRelay?) -> Result<Int, GIONetError> in
            if let current { return .success(current.core.port) }
            do throws(GIONetError) {
                let setup = try TLSClientSetup(host: remoteHost, port: remotePort, serverName: serverName,
                                               policy: CertificatePolicy(trust))
                let core = try RelayCore(setup: setup, failureHandler: failureHandler)
                var error: UnsafeMutablePointer<GError>?
                let data = Unmanaged.passRetained(core).toOpaque()
                guard let thread = g_thread_try_new("castline-tls-relay", relayThreadMain, data, &error) else {
                    Unmanaged<RelayCore>.fromOpaque(data).release()
                    throw GIONetError("cannot start the TLS relay thread: \(error.map(takeError) ?? "unknown error")")
                }
                current = RunningRelay(core: core, thread: thread)
                return .success(core.port)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    public var localPort: Int? { running.withLock { $0?.core.port } }

    /// Stops listening and closes every relayed connection. Idempotent; also done in deinit.
    /// Waits for the relay thread to end, unless called on that thread (from `onFailure`).
    public func stop() {
        guard let relay = running.withLock({ current -> RunningRelay? in
            defer { current = nil }
            return current
        }) else { return }
        relay.core.requestStop()
        if g_thread_self() == relay.thread {
            g_thread_unref(relay.thread)  // detaches; the thread finishes as soon as this callback returns
        } else {
            _ = g_thread_join(relay.thread)  // consumes the reference
        }
    }

    /// Called (on the relay's thread) when a relayed connection fails to connect or handshake, with one
    /// line a user can act on.
    public func onFailure(_ handler: @escaping @Sendable (String) -> Void) {
        failureHandler.withLock { $0 = handler }
    }

    /// Connects once, completes the handshake, closes: the same checks as a relayed connection.
    /// Throws GIONetError(the line for the user).
    public static func check(remoteHost: String, remotePort: Int, serverName: String? = nil, trust: TLSTrust,
                             timeout: Duration = .seconds(10), cancellable: Cancellable? = nil) throws(GIONetError) {
        let setup = try TLSClientSetup(host: remoteHost, port: remotePort, serverName: serverName, policy: CertificatePolicy(trust))
        _ = try setup.handshakeOnce(timeout: timeout, cancellable: cancellable)
    }

    /// SHA-256 fingerprint ("AB:CD:...") of the server's leaf certificate, without validating it.
    public static func fetchFingerprint(remoteHost: String, remotePort: Int, serverName: String? = nil,
                                        timeout: Duration = .seconds(10)) throws(GIONetError) -> String {
        let setup = try TLSClientSetup(host: remoteHost, port: remotePort, serverName: serverName, policy: .acceptAny)
        guard let fingerprint = try setup.handshakeOnce(timeout: timeout) else {
            throw GIONetError("TLS server \(setup.label) sent no certificate")
        }
        return fingerprint
    }
}

/// The relay thread and what it runs; owned by TLSRelay while started.
private struct RunningRelay: @unchecked Sendable {  // the GThread is joined or unreffed once, by whoever takes it out of `running`
    let core: RelayCore
    let thread: UnsafeMutablePointer<GThread>
}

private let relayThreadMain: GThreadFunc = { data in
    guard let data else { return nil }
    castline_set_current_thread_name("castline-tls")  // for top/gdb; GLib 2.74 here does not name its threads
    Unmanaged<RelayCore>.fromOpaque(data).takeRetainedValue().run()
    return nil
}

/// The listening socket, the GMainContext and the per-connection work.
/// `pending` and the callbacks are touched only on the relay thread (every async operation is started there,
/// so GIO delivers its callback there); `stopRequested` is atomic; the rest is immutable after init.
final class RelayCore: @unchecked Sendable {
    let setup: TLSClientSetup
    private(set) var port = 0  // set once in init (a var so that deinit also runs when init throws)
    let cancellable: UnsafeMutablePointer<GCancellable>
    let client: UnsafeMutablePointer<GSocketClient>
    private let context: OpaquePointer
    private let listener: UnsafeMutablePointer<GSocketListener>
    private let failureHandler: Protected<(@Sendable (String) -> Void)?>
    private let stopRequested = Atomic<Bool>(false)
    /// Async operations started and not yet called back; each holds a retained reference to its object.
    var pending = 0

    init(setup: TLSClientSetup, failureHandler: Protected<(@Sendable (String) -> Void)?>) throws(GIONetError) {
        self.setup = setup
        self.failureHandler = failureHandler
        guard let client = g_socket_client_new() else { throw GIONetError("cannot create a GSocketClient") }
        guard let cancellable = g_cancellable_new(), let context = g_main_context_new(), let listener = g_socket_listener_new() else {
            g_object_unref(client)  // (GLib aborts on out-of-memory, so this is theoretical)
            throw GIONetError("cannot create the TLS relay's GCancellable, GMainContext or GSocketListener")
        }
        g_socket_client_set_timeout(client, 10)  // connect + handshake; lifted once a connection is relaying
        self.client = client
        self.cancellable = cancellable
        self.context = context
        self.listener = listener
        // From here on deinit releases them all (also when throwing below).
        guard let loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4) else { throw GIONetError("cannot make the address 127.0.0.1") }
        defer { g_object_unref(loopback) }
        guard let address = g_inet_socket_address_new(loopback, 0) else { throw GIONetError("cannot make the address 127.0.0.1") }
        defer { g_object_unref(address) }
        var effective: UnsafeMutablePointer<GSocketAddress>?
        var error: UnsafeMutablePointer<GError>?
        guard g_socket_listener_add_address(listener, address, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, nil,
                                            &effective, &error) != 0, let effective else {
            throw GIONetError("cannot listen on 127.0.0.1: \(error.map(takeError) ?? "unknown error")")
        }
        port = Int(g_inet_socket_address_get_port(cast(effective, to: GInetSocketAddress.self)))
        g_object_unref(effective)
    }

    deinit {
        g_socket_listener_close(listener)
        g_object_unref(listener)
        g_object_unref(client)
        g_object_unref(cancellable)
        g_main_context_unref(context)
    }

    /// The relay thread's body: accept and relay until stop, then let every cancelled operation call back.
    func run() {
        g_main_context_push_thread_default(context)
        acceptNext()
        while !stopRequested.load(ordering: .acquiring) {
            g_main_context_iteration(context, 1)
        }
        // Cancelled operations call back (closing their streams) within a few iterations; bounded anyway.
        let deadline = ContinuousClock.now + .seconds(5)
        while pending > 0 && ContinuousClock.now < deadline {
            if g_main_context_iteration(context, 0) == 0 { usleep(2_000) }
        }
        g_socket_listener_close(listener)
        g_main_context_pop_thread_default(context)
    }

    /// Any thread: cancels everything and wakes the loop.
    func requestStop() {
        stopRequested.store(true, ordering: .releasing)
        g_cancellable_cancel(cancellable)
        g_main_context_wakeup(context)
    }

    var isStopping: Bool { stopRequested.load(ordering: .acquiring) }

    /// Retains `object` for an async operation's user_data and counts it as pending.
    func begin(_ object: AnyObject) -> gpointer {
        pending += 1
        return Unmanaged.passRetained(object).toOpaque()
    }

    func report(_ line: String) {
        guard !isStopping, let handler = failureHandler.withLock({ $0 }) else { return }
        handler(line)
    }

    private func acceptNext() {
        guard !isStopping else { return }
        g_socket_listener_accept_async(listener, cancellable, acceptDone, begin(self))
    }

    fileprivate func accepted(_ result: OpaquePointer?) {
        var error: UnsafeMutablePointer<GError>?
        let connection = g_socket_listener_accept_finish(listener, result, nil, &error)
        if let error {
            let message = takeError(error)
            if !isStopping {
                // Transient (e.g. out of file descriptors): say so and try again shortly.
                report("the TLS relay could not accept a connection: \(message)")
                let source = g_timeout_source_new(100)
                g_source_set_callback(source, retryAccept, begin(self), releaseCore)
                g_source_attach(source, context)
                g_source_unref(source)
            }
        } else {
            acceptNext()
        }
        guard let connection else { return }
        RelayedConnection(core: self, local: connection).connectUpstream()
    }

    fileprivate func retriedAccept() {
        pending -= 1
        acceptNext()
    }
}

private let acceptDone: GAsyncReadyCallback = { _, result, data in
    guard let data else { return }
    let core = Unmanaged<RelayCore>.fromOpaque(data).takeRetainedValue()
    core.pending -= 1
    core.accepted(result)
}
private let retryAccept: GSourceFunc = { data in
    guard let data else { return 0 }
    Unmanaged<RelayCore>.fromOpaque(data).takeUnretainedValue().retriedAccept()
    return 0  // G_SOURCE_REMOVE; the destroy notify releases the core
}
private let releaseCore: GDestroyNotify = { data in
    guard let data else { return }
    Unmanaged<RelayCore>.fromOpaque(data).release()
}

/// One local connection from rtmp2sink and its TLS connection to the server. Lives as long as an async
/// operation holds it; the GObjects are released (and so closed) in deinit, on the relay thread.
private final class RelayedConnection {
    let core: RelayCore
    let local: UnsafeMutablePointer<GSocketConnection>
    var upstream: UnsafeMutablePointer<GSocketConnection>?
    var tls: UnsafeMutablePointer<GIOStream>?
    let watch: HandshakeWatch

    init(core: RelayCore, local: UnsafeMutablePointer<GSocketConnection>) {
        self.core = core
        self.local = local
        self.watch = HandshakeWatch(policy: core.setup.policy)
    }

    deinit {
        if let tls { g_object_unref(tls) }
        // Close explicitly: a GSocketConnection disposed without it leaves the fd to its GSocket's finalize,
        // which waits for every other ref (the TLS connection's streams, GIO's tasks) to go.
        for connection in [upstream, local].compactMap({ $0 }) {
            g_io_stream_close(cast(connection, to: GIOStream.self), nil, nil)
            g_object_unref(connection)
        }
    }

    func connectUpstream() {
        guard let connectable = core.setup.makeConnectable() else {
            core.report("invalid host \(core.setup.host)")
            return
        }
        g_socket_client_connect_async(core.client, connectable, core.cancellable, connectDone, core.begin(self))
        g_object_unref(UnsafeMutableRawPointer(connectable))
    }

    func connected(_ result: OpaquePointer?) {
        var error: UnsafeMutablePointer<GError>?
        guard let upstream = g_socket_client_connect_finish(core.client, result, &error) else {
            core.report(core.setup.cannotConnect(error))
            if let error { g_error_free(error) }
            return
        }
        self.upstream = upstream
        let tls: UnsafeMutablePointer<GIOStream>
        do {
            tls = try core.setup.wrap(upstream, watch: watch)
        } catch {
            core.report(error.description)
            return
        }
        self.tls = tls
        g_tls_connection_handshake_async(cast(tls, to: GTlsConnection.self), G_PRIORITY_DEFAULT, core.cancellable,
                                         handshakeDone, core.begin(self))
    }

    func handshaken(_ result: OpaquePointer?) {
        guard let tls, let upstream else { return }
        var error: UnsafeMutablePointer<GError>?
        let done = g_tls_connection_handshake_finish(cast(tls, to: GTlsConnection.self), result, &error)
        let line = core.setup.verdict(tls: tls, error: done != 0 ? nil : error, watch: watch)
        if let error { g_error_free(error) }
        if let line {
            core.report(line)
            return
        }
        // Relaying: no I/O timeout (the server may stay silent for long), no Nagle delay.
        for connection in [upstream, local] {
            if let socket = g_socket_connection_get_socket(connection) {
                g_socket_set_timeout(socket, 0)
                g_socket_set_option(socket, gint(IPPROTO_TCP), gint(TCP_NODELAY), 1, nil)
            }
        }
        let flags = GIOStreamSpliceFlags(rawValue: G_IO_STREAM_SPLICE_CLOSE_STREAM1.rawValue | G_IO_STREAM_SPLICE_CLOSE_STREAM2.rawValue)
        g_io_stream_splice_async(cast(local, to: GIOStream.self), tls, flags, G_PRIORITY_DEFAULT, core.cancellable,
                                 spliceDone, core.begin(self))
    }
}

private func takeConnection(_ data: gpointer?) -> RelayedConnection? {
    guard let data else { return nil }
    let connection = Unmanaged<RelayedConnection>.fromOpaque(data).takeRetainedValue()
    connection.core.pending -= 1
    return connection
}
private let connectDone: GAsyncReadyCallback = { _, result, data in takeConnection(data)?.connected(result) }
private let handshakeDone: GAsyncReadyCallback = { _, result, data in takeConnection(data)?.handshaken(result) }
private let spliceDone: GAsyncReadyCallback = { _, result, data in
    guard takeConnection(data) != nil else { return }
    var error: UnsafeMutablePointer<GError>?
    _ = g_io_stream_splice_finish(result, &error)  // either side closed, or stop(): both are closed now
    if let error { g_error_free(error) }
}
