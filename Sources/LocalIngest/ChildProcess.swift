import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Errors from starting or running a `ChildProcess`.
public enum ChildProcessError: Error, Sendable, CustomStringConvertible {
    case notFound(String)
    case spawnFailed(executable: String, errno: Int32)
    case alreadyStarted
    case timedOut(command: String, after: Duration)

    public var description: String {
        switch self {
        case .notFound(let name): return "\(name): program not found in PATH, /usr/sbin or /sbin"
        case .spawnFailed(let exe, let err): return "could not start \(exe): \(String(cString: strerror(err)))"
        case .alreadyStarted: return "the process was already started"
        case .timedOut(let cmd, let after): return "\(cmd) did not finish within \(after)"
        }
    }
}

/// A child process for tests and the ingest: output to files or captured, killed for sure.
///
/// A `final class` (`Sendable`, all mutable state behind one `Mutex`) rather than an
/// actor: `pid`, `isRunning`, `standardOutput` and `signal(_:)` must be usable synchronously
/// (from `deinit`, from clean-up code in tests, from an actor's synchronous getters) and the
/// state is tiny, so a lock is simpler and cheaper than actor hops.
///
/// Processes are spawned with `posix_spawn` (stdin is /dev/null, no descriptors leak besides
/// 0/1/2, signal mask and dispositions reset). Unless `parentDeathSignal` is nil they are started
/// through util-linux `setpriv --pdeathsig` (which `exec`s the program, so `pid` is the program's
/// own pid) from one dedicated, never-exiting spawner thread: if our process dies, even by
/// SIGKILL, the kernel sends the signal to the child. When `setpriv` is missing this protection
/// is silently skipped. A `ChildProcess` that is deallocated while running is SIGKILLed and reaped.
public final class ChildProcess: Sendable {
    public let executable: String
    public let arguments: [String]
    public let environment: [String: String]?
    public let workingDirectory: String?
    public let stdoutPath: String?
    public let stderrPath: String?
    /// Signal delivered to the child when this process dies (nil: none).
    public let parentDeathSignal: Int32?

    private struct State {
        var pid: Int32 = 0
        var status: Int32?
        var outData = Data()
        var errData = Data()
        var openReaders = 0
    }
    private let state = Mutex(State())

    /// `stdoutPath`/`stderrPath`: files opened for appending (created if needed); nil: captured in memory.
    public init(executable: String, arguments: [String], environment: [String: String]? = nil,
                workingDirectory: String? = nil, stdoutPath: String? = nil, stderrPath: String? = nil,
                parentDeathSignal: Int32? = SIGKILL) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.stdoutPath = stdoutPath
        self.stderrPath = stderrPath
        self.parentDeathSignal = parentDeathSignal
    }

    deinit {
        // Killed for sure: never leave a child behind because its owner forgot it.
        let (pid, reaped) = state.withLock { ($0.pid, $0.status != nil) }
        if pid > 0 && !reaped {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
        }
    }

    /// Search PATH, then /usr/local/sbin, /usr/sbin, /sbin, /usr/bin, /bin. A name containing "/"
    /// is returned as is when it is executable.
    public static func which(_ name: String) -> String? {
        if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
        var dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        dirs += ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        for dir in dirs where !dir.isEmpty {
            let candidate = dir + "/" + name
            var st = stat()
            if stat(candidate, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, access(candidate, X_OK) == 0 {
                return candidate
            }
        }
        return nil
    }

    public var pid: Int32 { state.withLock { $0.pid } }

    public var isRunning: Bool {
        let started = state.withLock { $0.pid > 0 }
        return started && reap() == nil
    }

    /// Exit status once the process has been reaped (128+signal for signals), else nil.
    public var exitStatus: Int32? { reap() }

    public var standardOutput: String { String(decoding: state.withLock { $0.outData }, as: UTF8.self) }
    public var standardError: String { String(decoding: state.withLock { $0.errData }, as: UTF8.self) }

    public func start() throws {
        guard state.withLock({ $0.pid == 0 }) else { throw ChildProcessError.alreadyStarted }
        guard let exePath = Self.which(executable) else { throw ChildProcessError.notFound(executable) }

        var argv = [exePath] + arguments
        var spawnPath = exePath
        if let sig = parentDeathSignal, let name = Self.signalNames[sig], let setpriv = Self.setprivPath {
            spawnPath = setpriv
            argv = ["setpriv", "--pdeathsig", name, "--"] + argv
        }
        var envList: [String]?
        if let environment { envList = environment.map { "\($0.key)=\($0.value)" } }

        let request = SpawnRequest(path: spawnPath, argv: argv, env: envList, cwd: workingDirectory,
                                   stdoutPath: stdoutPath, stderrPath: stderrPath)
        // Pipes are made on the spawner thread too, so no concurrent spawn of ours inherits them.
        let result = SpawnThread.shared.run { request.spawn() }
        guard result.error == 0 else {
            throw ChildProcessError.spawnFailed(executable: exePath, errno: result.error)
        }
        let outPipe = [result.stdoutFD], errPipe = [result.stderrFD]
        state.withLock { $0.pid = result.pid }
        if outPipe[0] >= 0 { startReader(fd: outPipe[0], isStdout: true) }
        if errPipe[0] >= 0 { startReader(fd: errPipe[0], isStdout: false) }
    }

    /// Sends `sig` unless the process has already been reaped (so a recycled pid is never hit).
    public func signal(_ sig: Int32) {
        state.withLock { state in
            if state.pid > 0 && state.status == nil { kill(state.pid, sig) }
        }
    }

    /// Exit status (128+signal for signals), nil on timeout. -1 if it was never started.
    public func waitForExit(timeout: Duration) async -> Int32? {
        if state.withLock({ $0.pid == 0 }) { return -1 }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        var delay = Duration.milliseconds(5)
        while true {
            if let status = reap() { return status }
            if clock.now >= deadline { return nil }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .milliseconds(50))
        }
    }

    /// SIGTERM, wait up to `grace`, then SIGKILL. Returns the exit status (-1 if never started).
    @discardableResult
    public func terminate(grace: Duration = .seconds(3)) async -> Int32 {
        if state.withLock({ $0.pid == 0 }) { return -1 }
        if let status = reap() { return status }
        signal(SIGTERM)
        if let status = await waitForExit(timeout: grace) { return status }
        signal(SIGKILL)
        return await waitForExit(timeout: .seconds(10)) ?? -1
    }

    /// Waits (up to `timeout`) until captured stdout/stderr reached end of file.
    public func waitForOutput(timeout: Duration = .seconds(2)) async {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while state.withLock({ $0.openReaders > 0 }) && clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Runs a one-shot command to completion with captured output. On timeout the process is
    /// killed and `ChildProcessError.timedOut` is thrown. `environment` is added to this process's.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                           timeout: Duration = .seconds(30)) async throws -> (status: Int32, stdout: String, stderr: String) {
        let process = ChildProcess(executable: executable, arguments: arguments,
                                   environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 })
        try process.start()
        guard let status = await process.waitForExit(timeout: timeout) else {
            await process.terminate(grace: .milliseconds(500))
            throw ChildProcessError.timedOut(command: ([executable] + arguments).joined(separator: " "), after: timeout)
        }
        await process.waitForOutput()
        return (status, process.standardOutput, process.standardError)
    }

    // MARK: - Internals

    /// Non-blocking waitpid; records and returns the decoded status once the child has exited.
    private func reap() -> Int32? {
        state.withLock { state in
            if let s = state.status { return s }
            guard state.pid > 0 else { return nil }
            var raw: Int32 = 0
            let r = waitpid(state.pid, &raw, WNOHANG)
            if r == state.pid {
                let sig = raw & 0x7f
                state.status = sig == 0 ? (raw >> 8) & 0xff : 128 + sig
            } else if r == -1 && errno == ECHILD {
                state.status = 255  // reaped by someone else; status unknown
            }
            return state.status
        }
    }

    private func startReader(fd: Int32, isStdout: Bool) {
        state.withLock { $0.openReaders += 1 }
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 16384)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    state.withLock { state in
                        if isStdout { state.outData.append(contentsOf: buffer[0..<n]) } else { state.errData.append(contentsOf: buffer[0..<n]) }
                    }
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            close(fd)
            state.withLock { $0.openReaders -= 1 }
        }
        thread.name = "castline.child-output"
        thread.start()
    }

    private static let setprivPath: String? = {
        for candidate in ["/usr/bin/setpriv", "/bin/setpriv", "/usr/sbin/setpriv"] where access(candidate, X_OK) == 0 {
            return candidate
        }
        return nil
    }()

    private static let signalNames: [Int32: String] = [
        SIGKILL: "KILL", SIGTERM: "TERM", SIGINT: "INT", SIGHUP: "HUP", SIGQUIT: "QUIT",
    ]
}

/// Everything `posix_spawn` needs, built on the spawner thread.
private struct SpawnRequest: Sendable {
    let path: String
    let argv: [String]
    let env: [String]?
    let cwd: String?
    let stdoutPath: String?
    let stderrPath: String?

    struct Result: Sendable {
        var pid: Int32 = 0
        var error: Int32 = 0
        var stdoutFD: Int32 = -1   // read ends of the capture pipes, -1 when writing to a file
        var stderrFD: Int32 = -1
    }

    func spawn() -> Result {
        var outPipe: [Int32] = [-1, -1], errPipe: [Int32] = [-1, -1]
        func closeAll() { for fd in outPipe + errPipe where fd >= 0 { close(fd) } }
        if stdoutPath == nil && !Self.cloexecPipe(&outPipe) { return Result(error: errno) }
        if stderrPath == nil && !Self.cloexecPipe(&errPipe) { let e = errno; closeAll(); return Result(error: e) }
        let stdoutFD = outPipe[1], stderrFD = errPipe[1]

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let stdoutPath {
            posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        } else {
            posix_spawn_file_actions_adddup2(&actions, stdoutFD, 1)
        }
        if let stderrPath {
            posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        } else {
            posix_spawn_file_actions_adddup2(&actions, stderrFD, 2)
        }
        if let closeFrom = GlibcExtensions.addCloseFrom { _ = closeFrom(&actions, 3) }
        if let cwd, let addChdir = GlibcExtensions.addChdir { _ = addChdir(&actions, cwd) }

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attr, &mask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for sig in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM] {
            sigaddset(&defaults, sig)
        }
        posix_spawnattr_setsigdefault(&attr, &defaults)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let cArgv: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { cArgv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc: Int32
        if let env {
            let cEnv: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) } + [nil]
            defer { cEnv.forEach { free($0) } }
            rc = posix_spawn(&pid, path, &actions, &attr, cArgv, cEnv)
        } else {
            rc = posix_spawn(&pid, path, &actions, &attr, cArgv, environ)
        }
        if outPipe[1] >= 0 { close(outPipe[1]) }
        if errPipe[1] >= 0 { close(errPipe[1]) }
        guard rc == 0 else {
            if outPipe[0] >= 0 { close(outPipe[0]) }
            if errPipe[0] >= 0 { close(errPipe[0]) }
            return Result(error: rc)
        }
        return Result(pid: pid, error: 0, stdoutFD: outPipe[0], stderrFD: errPipe[0])
    }

    /// pipe() + FD_CLOEXEC (Glibc's pipe2 is not visible to Swift without _GNU_SOURCE).
    private static func cloexecPipe(_ fds: inout [Int32]) -> Bool {
        let ok = fds.withUnsafeMutableBufferPointer { pipe($0.baseAddress!) } == 0
        if ok { for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) } }
        return ok
    }
}

/// glibc GNU extensions (2.29/2.34+) that Swift's Glibc module does not expose without _GNU_SOURCE.
private enum GlibcExtensions {
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    static let addCloseFrom: AddCloseFrom? = {
        guard let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(sym, to: AddCloseFrom.self)
    }()

    static let addChdir: AddChdir? = {
        guard let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np") else { return nil }
        return unsafeBitCast(sym, to: AddChdir.self)
    }()
}

/// One thread that lives as long as the process and performs every spawn. PR_SET_PDEATHSIG fires
/// when the *thread* that created the child exits, and Swift concurrency / Dispatch worker threads
/// come and go, so spawning from them would kill children at random moments.
private final class SpawnThread: @unchecked Sendable {
    static let shared = SpawnThread()

    private let condition = NSCondition()  // a condition, not a Mutex: the spawner thread sleeps until a job comes
    private var jobs: [@Sendable () -> Void] = []

    private init() {
        let thread = Thread { [self] in
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let job = jobs.removeFirst()
                condition.unlock()
                job()
            }
        }
        thread.name = "castline.spawner"
        thread.start()
    }

    func run<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        condition.lock()
        jobs.append {
            box.value = body()
            done.signal()
        }
        condition.signal()
        condition.unlock()
        done.wait()
        return box.value!
    }
}

private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
