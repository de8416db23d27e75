import Foundation
import LocalIngest
import Testing

/// A recording cut by SIGKILL (no clean end, no rename) is still there as `PATH.partial`
/// and readable up to its last seconds in the streamable containers: WAV, Matroska,
/// MPEG-TS. (MP4 is not: its index is written at the end; README says so.) A full disk
/// stops the run with one line that says so, and leaves what fitted readable.
@Suite("recordings cut by SIGKILL or a full disk", .serialized, .timeLimit(.minutes(3)))
struct RecordingCutTests {
    @Test("listen --record, killed mid-stream: PATH.partial plays up to its last seconds, PATH is not made",
          arguments: ["wav", "mkv", "ts"])
    func killedRecordingReadable(_ container: String) async throws {
        let scratch = try Scratch()
        try await HLSFixtures.vod("tone", in: scratch.path, seconds: 30, video: false)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        let path = scratch.file("cut.\(container)")
        let partial = path + ".partial"
        let listener = try Castline.start(["listen", server.url("tone.m3u8"), "--audio-only", "--output", "null", "--record", path])
        // Played at the pace of the clock: wait until the file holds a few seconds (128 kb/s AAC, or PCM).
        let enough = container == "wav" ? 3 * 192_000 : 3 * 16_000
        let deadline = ContinuousClock.now + .seconds(30)
        func size() -> Int { ((try? FileManager.default.attributesOfItem(atPath: partial))?[.size] as? Int) ?? 0 }
        while ContinuousClock.now < deadline, listener.exitStatus == nil, size() < enough {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(size() >= enough, "\(partial): \(size()) bytes; \(listener.standardError)")
        listener.signal(SIGKILL)
        _ = await listener.waitForExit(timeout: .seconds(5))
        #expect(!FileManager.default.fileExists(atPath: path), "a cut recording looks complete")
        let probe = try await ChildProcess.run("/usr/bin/ffprobe", [
            "-v", "error", "-select_streams", "a", "-count_packets", "-show_entries", "stream=nb_read_packets,codec_name",
            "-of", "csv=p=0", partial,
        ])
        let fields = probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
        let packets = fields.last.flatMap { Int($0) } ?? 0
        // PCM packets are not frames: WAV is judged by its bytes of 48 kHz stereo S16.
        let seconds = container == "wav" ? Double(size() - 44) / 192_000 : Double(packets) * 1024 / 48_000
        print("killed \(container): \(partial) \(size()) bytes, \(packets) audio packets read, \(seconds) s (\(probe.stderr))")
        #expect(probe.status == 0 && packets > 0, "ffprobe: \(probe.stdout) \(probe.stderr)")
        #expect(seconds >= 2, "\(container): \(seconds) s readable")
    }

    @Test("a disk that fills up: one line that says so, exit 1, what fitted is readable in PATH.partial; an MP4 left without its index is not said written")
    func fullDisk() async throws {
        let scratch = try Scratch()
        let disk = scratch.file("disk")
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        let pipeline = try scratch.write("record.yaml", """
            version: 1
            name: full-disk
            source:
              test:
                audio: { tone: 440 }
            sinks:
              - file: \(disk)/tone.wav
            """)
        // A 300 kB disk of its own: a tmpfs mounted in a mount namespace of castline's own
        // (unshare -r maps the user to root there, so this needs no privilege).
        let result = try await ChildProcess.run("/usr/bin/unshare", [
            "-rm", "/bin/sh", "-c", """
            mount -t tmpfs -o size=300k tmpfs '\(disk)' || exit 99
            '\(Castline.executable)' run '\(pipeline)' 2>&1; status=$?
            /usr/bin/ffprobe -v error -show_entries format=duration -of csv=p=0 '\(disk)/tone.wav.partial' | sed 's/^/probed: /'
            exit $status
            """,
        ], timeout: .seconds(30))
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(result.status == 1, "\(result.stdout)")
        #expect(lines.filter { $0.hasPrefix("error:") }
                == ["error: sinks[0].file (filesink0): the disk is full (free some space, or write to another disk)"],
                "\(result.stdout)")
        #expect(lines.contains("recording cut short: \(disk)/tone.wav.partial holds what was written"), "\(result.stdout)")
        #expect(lines.contains { $0.hasPrefix("summary:") }, "\(result.stdout)")
        // 300 kB of 48 kHz stereo S16 is 1.6 s; the tmpfs's own blocks take some.
        let probed = lines.first { $0.hasPrefix("probed: ") }.flatMap { Double($0.dropFirst("probed: ".count)) } ?? 0
        #expect(probed > 0.5, "\(result.stdout)")

        // An MP4 writes its index last: on a full disk it never gets one, and is not said to be written.
        let mp4 = try scratch.write("record-mp4.yaml", """
            version: 1
            source: { test: { audio: { tone: 440 } } }
            sinks: [ { file: \(disk)/tone.mp4 } ]
            """)
        let indexless = try await ChildProcess.run("/usr/bin/unshare", [
            "-rm", "/bin/sh", "-c", "mount -t tmpfs -o size=40k tmpfs '\(disk)' || exit 99; '\(Castline.executable)' run '\(mp4)' --duration 10s 2>&1",
        ], timeout: .seconds(30))
        #expect(indexless.status == 1 && !indexless.stdout.contains("wrote ")
                && indexless.stdout.contains("recording cut short: \(disk)/tone.mp4.partial holds what was written, but an .mp4 plays only once finished"),
                "\(indexless.stdout)")
    }
}
