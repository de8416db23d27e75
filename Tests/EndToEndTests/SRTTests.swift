import Foundation
import LocalIngest
import Testing
import TestSupport

/// The `srt` sink against ffmpeg's SRT listener, the usual peer of a caller.
@Suite("SRT out and in, end to end", .serialized, .timeLimit(.minutes(2)))
struct SRTTests {
    static let passphrase = "srt-test-passphrase-\(UInt16.random(in: 1000...9999))"

    /// ffmpeg listening on `port` with `passphrase`, writing what it takes to `file`.
    static func listener(port: Int, passphrase: String, into file: String) throws -> ChildProcess {
        let listener = ChildProcess(executable: "/usr/bin/ffmpeg", arguments: [
            "-nostdin", "-v", "error", "-y", "-i", "srt://127.0.0.1:\(port)?mode=listener&passphrase=\(passphrase)",
            "-c", "copy", "-flush_packets", "1", "-f", "mpegts", file,
        ])
        try listener.start()
        return listener
    }

    /// ffmpeg sending H.264 and AAC in MPEG-TS for `seconds` (a keyframe a second) as an SRT
    /// listener on `port` with the passphrase, which takes a single caller; nobody calling, it gives up after 15 s.
    static func sender(port: Int, seconds: Int) -> ChildProcess {
        ChildProcess(executable: "/usr/bin/ffmpeg", arguments: [
            "-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i", "sine=f=1000:r=48000", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=30",
            "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-c:a", "aac", "-t", "\(seconds)", "-f", "mpegts",
            "srt://127.0.0.1:\(port)?mode=listener&listen_timeout=15000000&passphrase=\(passphrase)",
        ])
    }

    /// Whether `file` holds media yet.
    static func holdsMedia(_ file: String) -> Bool {
        ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0) > 0
    }

    /// The ACK packets a publisher's summary line (`  srt0: 1.20 MB sent, 240 ACKs received`) counts.
    static func acksReceived(_ stderr: String, sink: String = "srt0") -> Int? {
        guard let line = stderr.split(separator: "\n").first(where: { $0.hasPrefix("  \(sink): ") && $0.hasSuffix(" ACKs received") }),
              let count = line.split(separator: ",").last?.split(separator: " ").first else { return nil }
        return Int(count)
    }

    /// A small test signal, encoded, to an srt sink calling 127.0.0.1:`port` with the passphrase from SRT_PASSPHRASE.
    static func pipelineFile(port: Int, in scratch: Scratch) throws -> String {
        let file = scratch.file("srt.yaml")
        try """
            version: 1
            name: srt
            source: { test: { video: { width: 320, height: 240 }, audio: {} } }
            stages: [ { encode: {} } ]
            sinks: [ { srt: { url: "srt://127.0.0.1:\(port)", passphrase: "${SRT_PASSPHRASE}" } } ]
            """.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test("a listener with another passphrase: one clear line and exit 1, the passphrase never shown")
    func refusedPassphrase() async throws {
        let scratch = try Scratch()
        let port = try FreePort.find(datagram: true)
        let file = try Self.pipelineFile(port: port, in: scratch)
        let other = try Self.listener(port: port, passphrase: "another-passphrase", into: scratch.file("other.ts"))
        defer { Task { _ = await other.terminate() } }
        // A caller coming before ffmpeg has bound its port would be told nothing could be sent.
        #expect(await FreePort.waitUntilTaken(datagram: port, timeout: .seconds(10)), "ffmpeg never bound \(port)")
        let refused = try await Castline.run(["run", file, "--duration", "4s"], environment: ["SRT_PASSPHRASE": Self.passphrase],
                                             timeout: .seconds(20))
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("error: the SRT peer at srt://127.0.0.1:\(port) did not take the connection"), "\(refused.stderr)")
        #expect(refused.stderr.contains("with the same passphrase?"), "\(refused.stderr)")
        #expect(!refused.stderr.contains(Self.passphrase))
    }

    @Test("""
        listen srt:// calling ffmpeg's listener, which takes one caller: played from the connection its streams are read \
        from; when that sender ends and another takes the port, reconnecting, then reconnected; quiet for --end-after, \
        the stream has ended (exit 0); H.264 and AAC of both recorded; libsrt's figures of the link once a second; the \
        passphrase never shows
        """)
    func listenToSingleCallerListeners() async throws {
        let scratch = try Scratch()
        let port = try FreePort.find(datagram: true)
        // One sender after the other, 2 s each.
        let first = Self.sender(port: port, seconds: 2), second = Self.sender(port: port, seconds: 2)
        try first.start()
        defer { first.signal(SIGKILL); second.signal(SIGKILL) }
        #expect(await FreePort.waitUntilTaken(datagram: port, timeout: .seconds(10)), "ffmpeg never bound \(port)")
        let secondStarted = Task {
            _ = await first.waitForExit(timeout: .seconds(20))
            try second.start()
        }
        let recording = scratch.file("called.mkv")
        let listen = try await Castline.run([
            "listen", "srt://127.0.0.1:\(port)", "--passphrase-env", "SRT_PASSPHRASE", "--output", "null",
            "--record", recording, "--end-after", "3s", "--stats-json", "-",
        ], environment: ["SRT_PASSPHRASE": Self.passphrase], timeout: .seconds(30))
        try await secondStarted.value
        #expect(listen.status == 0, "\(listen.stderr)")
        #expect(listen.stderr.contains("reconnected after") && listen.stderr.contains("summary:") && listen.stderr.contains("reconnects 2"),
                "\(listen.stderr)")
        let lines = jsonLines(listen.stdout)
        #expect(lines.contains { $0["event"] as? String == "stream-ended" }, "\(listen.stdout)")
        let link = lines.filter { $0["event"] as? String == "stats" && $0["packets_received"] != nil }
        #expect(link.count >= 4 && link.allSatisfy { $0["packets_lost"] as? Double == 0 && ($0["rtt_ms"] as? Double ?? 99) < 50 },
                "\(link)")
        let media = try await ProbedMedia.probe(recording)
        #expect(media.stream("video")?.codec == "h264" && media.stream("audio")?.codec == "aac", "\(media)")
        // 2 s from each sender, less the wait for each one's first keyframe.
        #expect(media.duration >= 2.5, "recorded \(media.duration) s")
        #expect(!listen.stderr.contains(Self.passphrase) && !listen.stdout.contains(Self.passphrase))
    }

    @Test("""
        a swap that replaces an srt:// source calling a listener that takes one caller: the new source plays on from the \
        running connection (reloaded at once, libsrt's count of packets going on) with its own end-after; the kept recording holds both
        """)
    func swapPlaysOnFromTheConnection() async throws {
        let scratch = try Scratch()
        let port = try FreePort.find(datagram: true)
        let sender = Self.sender(port: port, seconds: 6)
        try sender.start()
        defer { sender.signal(SIGKILL) }
        #expect(await FreePort.waitUntilTaken(datagram: port, timeout: .seconds(10)), "ffmpeg never bound \(port)")
        let recording = scratch.file("swapped.mkv")
        func pipeline(endAfter: String) -> String {
            """
            version: 1
            name: srt-swap
            source: { uri: { uri: "srt://127.0.0.1:\(port)", passphrase: "${SRT_PASSPHRASE}", end-after: \(endAfter) } }
            sinks: [ { file: { path: "\(recording)" } } ]
            """
        }
        let file = try scratch.write("srt.yaml", pipeline(endAfter: "10s"))
        let process = try Castline.start(["run", file, "--watch", "--stats-json", "-"], environment: ["SRT_PASSPHRASE": Self.passphrase])
        defer { process.signal(SIGKILL) }
        #expect(await Castline.waitFor("\nplaying", in: process, timeout: .seconds(15)), "\(process.standardError)")
        try SwapEndToEndTests.save(pipeline(endAfter: "1s"), to: file)
        // A second caller would wait for the first to go, up to the 15 s a stream is looked for.
        #expect(await Castline.waitFor("reloaded", in: process, timeout: .seconds(3)), "\(process.standardError)")
        // The sender's end is the stream's, 1 s later: the new source's end-after, from the same connection.
        let status = await process.waitForExit(timeout: .seconds(10))
        #expect(status == 0, "\(process.standardError)")
        let lines = jsonLines(process.standardOutput)
        #expect(lines.contains { $0["event"] as? String == "stream-ended" && $0["reason"] as? String == "no new media for 1s" },
                "\(process.standardOutput)")
        // libsrt counts each connection's packets from 0: the count goes on rising across the swap.
        let reload = lines.firstIndex { $0["event"] as? String == "reloaded" } ?? lines.count
        let received = lines.compactMap { $0["packets_received"] as? Double }
        let after = lines[reload...].compactMap { $0["packets_received"] as? Double }
        #expect(after.count >= 2 && zip(received, received.dropFirst()).allSatisfy { $0 < $1 }, "\(process.standardOutput)")
        let media = try await ProbedMedia.probe(recording)
        #expect(media.stream("video")?.codec == "h264" && media.stream("audio")?.codec == "aac", "\(media)")
        // 6 s sent, less the wait for the first keyframe and the swap's own.
        #expect(media.duration >= 4.5, "recorded \(media.duration) s")
        #expect(!process.standardError.contains(Self.passphrase) && !process.standardOutput.contains(Self.passphrase))
    }

    @Test("H.264 and AAC in MPEG-TS to a listener with the passphrase; when it goes away and another takes its port, the publish says so, reconnects to it (counted) and ends cleanly; the passphrase never shows")
    func reconnectsToANewListener() async throws {
        let scratch = try Scratch()
        let port = try FreePort.find(datagram: true)
        let file = try Self.pipelineFile(port: port, in: scratch)
        let firstFile = scratch.file("first.ts")
        let first = try Self.listener(port: port, passphrase: Self.passphrase, into: firstFile)
        #expect(await FreePort.waitUntilTaken(datagram: port, timeout: .seconds(10)), "ffmpeg never bound \(port)")
        let run = try Castline.start(["run", file, "--duration", "10s", "--stats-json", "-"], environment: ["SRT_PASSPHRASE": Self.passphrase])
        // The first listener goes once media has reached it; castline notices the loss before the second comes.
        #expect(await waitUntil(.seconds(15)) { Self.holdsMedia(firstFile) }, "nothing reached the first listener: \(run.standardError)")
        _ = await first.terminate()
        #expect(await Castline.waitFor("connection lost", in: run, timeout: .seconds(15)), "\(run.standardError)")
        let received = scratch.file("second.ts")
        let second = try Self.listener(port: port, passphrase: Self.passphrase, into: received)
        let status = await run.waitForExit(timeout: .seconds(25))
        _ = await second.waitForExit(timeout: .seconds(5))
        _ = await second.terminate()
        #expect(status == 0, "\(run.standardError)")
        #expect(run.standardError.contains("connection lost"), "\(run.standardError)")
        #expect(run.standardError.contains("reconnects: 1"), "\(run.standardError)")
        // SRT's receiver acknowledges packets, not bytes: the summary counts its ACKs.
        let summary = run.standardError.split(separator: "\n").first { $0.hasPrefix("  srt0: ") }
        #expect(summary.map { $0.contains(" MB sent, ") && !$0.hasPrefix("  srt0: 0.00") } == true, "\(run.standardError)")
        #expect((Self.acksReceived(run.standardError) ?? 0) > 0, "\(run.standardError)")
        #expect(!run.standardError.contains(Self.passphrase))
        // libsrt's own figures of the link, on loopback: a round trip under 50 ms.
        let link = jsonLines(run.standardOutput).filter { $0["stage"] as? String == "srt0" && $0["rtt_ms"] != nil }
        #expect(!link.isEmpty && link.allSatisfy { ($0["rtt_ms"] as? Double ?? 99) < 50 && $0["packets_retransmitted"] != nil }, "\(link)")
        #expect(link.contains { ($0["bandwidth_mbps"] as? Double ?? 0) > 0 }, "\(link)")
        let media = try await ProbedMedia.probe(received)
        #expect(media.streams.map(\.codec).sorted() == ["aac", "h264"], "\(media.streams.map(\.codec))")
        #expect(media.duration >= 3, "the second listener took \(media.duration) s")
    }

    @Test("a stream ID as people write it (?streamid=#!::r=live/test,m=publish): ffmpeg's SRT listener reads it from castline's call")
    func streamID() async throws {
        let port = try FreePort.find(datagram: true)
        // At debug level ffmpeg's listener says what each caller asked for: "accept streamid [ID]".
        let receiver = ChildProcess(executable: "/usr/bin/ffmpeg",
                                    arguments: ["-nostdin", "-v", "debug", "-i", "srt://127.0.0.1:\(port)?mode=listener", "-f", "null", "-"])
        try receiver.start()
        defer { Task { await receiver.terminate() } }
        try #require(await FreePort.waitUntilTaken(datagram: port, timeout: .seconds(10)), "\(receiver.standardError)")
        let published = try await Castline.run(["broadcast", "srt://127.0.0.1:\(port)?streamid=#!::r=live/test,m=publish",
                                                "--size", "320x240", "--duration", "3s"], timeout: .seconds(30))
        #expect(published.status == 0, "\(published.stderr)")
        #expect(receiver.standardError.contains("accept streamid [#!::r=live/test,m=publish]"),
                "\(receiver.standardError.split(separator: "\n").filter { $0.contains("streamid") })")
    }
}
