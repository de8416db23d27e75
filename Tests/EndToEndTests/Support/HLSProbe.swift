import Foundation
import LocalIngest

/// What nginx-rtmp wrote for one stream key, read as a player (ffprobe) reads it.
struct PublishedHLS {
    let playlistURL: String
    let directory: String
    let key: String

    var segments: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasPrefix(key + "-") && $0.hasSuffix(".ts") }
            .sorted { segmentNumber($0) < segmentNumber($1) }
    }

    private func segmentNumber(_ name: String) -> Int {
        Int(name.dropFirst(key.count + 1).dropLast(3)) ?? -1
    }

    /// Video packet times and keyframe flags across every segment, in order. Read from
    /// the segment files: ffprobe on a live playlist (no ENDLIST) waits for more forever.
    func videoPackets() async throws -> [(time: Double, isKey: Bool)] {
        var packets: [(time: Double, isKey: Bool)] = []
        for segment in segments {
            let result = try await ChildProcess.run("/usr/bin/ffprobe", [
                "-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time,flags", "-of", "csv=p=0",
                directory + "/" + segment,
            ])
            packets += result.stdout.split(separator: "\n").compactMap { line in
                let fields = line.split(separator: ",")
                guard fields.count >= 2, let time = Double(fields[0]) else { return nil }
                return (time, fields[1].contains("K"))
            }
        }
        return packets
    }

    /// Waits until the playlist lists at least `count` segments.
    func waitForSegments(_ count: Int, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if segments.count >= count { return true }
            try? await Task.sleep(for: .milliseconds(250))
        }
        return false
    }
}

/// A local ingest for one test: started on free ports, always stopped.
func withIngest<T>(
    _ options: IngestOptions = IngestOptions(), _ body: (IngestServer, IngestEndpoints) async throws -> T
) async throws -> T {
    let server = IngestServer(options: options)
    let endpoints = try await server.start()
    do {
        let result = try await body(server, endpoints)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

extension IngestEndpoints {
    func published(key: String) -> PublishedHLS {
        PublishedHLS(playlistURL: hlsPlaylistURL(key: key), directory: hlsDirectory, key: key)
    }
}
