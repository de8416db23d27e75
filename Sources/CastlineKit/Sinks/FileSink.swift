import Foundation
import GstKit
import Synchronization
import PipelineConfig

/// A recording. The container follows the extension. Media is written to
/// `PATH.partial` and renamed only after a clean end, so a file that looks
/// complete is complete.
public final class FileSink: SinkComponent {
    public static let kind = "file"
    public static let summary = "record to a file: .wav (audio), .mkv, .mp4, .ts (audio and video)"
    public static let path = ConfigOption<String?>("path", required: true, help: "output file; the extension picks the container")
    public static let overwrite = ConfigOption<Bool>("overwrite", default: false, help: "replace an existing file")
    public static let sync = ConfigOption<Bool>("sync", default: false,
                                   help: "write at the pace of the clock (record what is heard) instead of as fast as media comes")
    public static let schema = OptionSchema(path, overwrite, sync, shorthand: "path")

    enum Container: String, CaseIterable {
        case wav, mkv, mp4, ts

        var muxer: String {
            switch self {
            case .wav: "wavenc"
            case .mkv: "matroskamux"
            case .mp4: "mp4mux"
            case .ts: "mpegtsmux"
            }
        }

        func requirement(for stream: StreamKind) -> FormRequirement? {
            switch (self, stream) {
            case (.wav, .audio): .raw
            case (.wav, .video): nil
            case (.mkv, .audio): .encoded([.aac, .opus, .mp3, .vorbis, .flac])
            case (.mkv, .video): .encoded([.h264, .h265, .vp8, .vp9])
            case (.mp4, .audio): .encoded([.aac, .mp3, .opus])
            case (.mp4, .video): .encoded([.h264, .h265])
            case (.ts, .audio): .encoded([.aac, .mp3])
            case (.ts, .video): .encoded([.h264, .h265])
            }
        }
    }

    let path: String
    let partialPath: String
    let sync: Bool
    let container: Container
    /// What reached the muxer: a recording that got none says so, not "wrote".
    private let writing: RecordingFormatGuard
    /// Up when the muxer's end reached the file: the file is whole, however the run ended.
    private let fileEnded = OnceFlag()
    /// Whether `partialPath` has been renamed to `path`: at the file's own end when a change of
    /// format ended it while the run goes on, else at `finish`. One rename, under one lock.
    private let naming = FileNaming()
    /// What paces the streams (`sync`), in the bin last made (one per run: a swap keeps a sink whose options stay).
    private let pacers = Mutex<[Element]>([])

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        let keyPath = "\(spec.keyPath).path"
        path = spec.options[Self.path] ?? ""
        partialPath = path + ".partial"
        sync = spec.options[Self.sync]
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
            // Never written over, with or without overwrite: a recording replaces a file, not a folder and all in it.
            throw BuildError("\"\(path)\" is a folder, not a file (give a file in it, e.g. \((path as NSString).appendingPathComponent("recording.mkv")))",
                             at: keyPath)
        }
        let ext = (path as NSString).pathExtension.lowercased()
        guard let container = Container(rawValue: ext == "mka" ? "mkv" : ext) else {
            let known = Container.allCases.map { ".\($0.rawValue)" }.joined(separator: ", ")
            throw BuildError("cannot tell the container from \"\(path)\" (end it in \(known))", at: keyPath)
        }
        self.container = container
        let owner = spec.keyPath, shown = path
        writing = RecordingFormatGuard(endsOnFormatChange: container != .ts) { [events = context.events] stream in
            events.emit(.warning("\(owner): the \(stream) changed format (another size or encoding), which a "
                + ".\(container.rawValue) file cannot take mid-file: \(shown) ends here (record to .ts to keep one file through such changes)"))
        }
        // Missing folders are made when the run starts; the nearest one that exists must be writable.
        var folder = (path as NSString).deletingLastPathComponent
        if folder.isEmpty { folder = "." }
        var isDirectory: ObjCBool = false
        while !FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) {
            folder = (folder as NSString).deletingLastPathComponent
            if folder.isEmpty { folder = "." }
        }
        guard isDirectory.boolValue else {
            throw BuildError("cannot write \"\(path)\": \"\(folder)\" is a file, not a folder (pick another path)", at: keyPath)
        }
        guard FileManager.default.isWritableFile(atPath: folder) else {
            throw BuildError("cannot write \"\(path)\": folder \"\(folder)\" is not writable (pick another path)", at: keyPath)
        }
        if FileManager.default.fileExists(atPath: path), !spec.options[Self.overwrite] {
            throw BuildError("\"\(path)\" exists (remove it, or set overwrite: true; --overwrite with --record)", at: keyPath)
        }
    }

    public var rendersAtTheClock: Bool { sync }

    /// Paced, it writes what is still queued at once: the file holds all that came (what the
    /// stats counted), not only what was heard by the stop.
    public var takesTheRestAtOnce: Bool { sync }

    public func stopPacing() {
        for pacer in pacers.withLock({ $0 }) { try? pacer.set("sync", false) }
    }

    public func requirement(for stream: StreamKind) -> FormRequirement? {
        container.requirement(for: stream)
    }

    public func makeBin(inputs: [StreamKind: StreamForm], name: String) throws -> Bin {
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        let bin = Bin(name: name)
        pacers.withLock { $0 = [] }
        let muxer = try ElementCatalog.make(container.muxer)
        let output = try ElementCatalog.make("filesink")
        try output.set("location", text: partialPath)
        try bin.add(muxer, output)
        try muxer.link(output)
        output.staticPad("sink")?.notifyEndOfStream { [fileEnded, writing, naming, partialPath, path] in
            // Whole now, while the run goes on: it is not left looking cut short until the run ends.
            if writing.endedAtFormatChange { try? naming.rename(partialPath, to: path) }
            fileEnded.trip()
        }
        for stream in inputs.keys.sorted() {
            guard let pad = container == .wav ? muxer.staticPad("sink") : muxer.requestPad(Self.padTemplate(container, stream)) else {
                throw BuildError("internal: \(container.muxer) gave no input for \(stream)")
            }
            if sync {
                // Paced before the muxer: a synced filesink would hang on the muxer's closing
                // header rewrite (a seek back, in bytes).
                let pacer = try ElementCatalog.make("clocksync")
                pacers.withLock { $0.append(pacer) }
                try bin.add(pacer)
                try pacer.staticPad("src").map { try $0.link(pad) }
                try bin.ghost(pacer.staticPad("sink"), as: stream.rawValue)
            } else {
                try bin.ghost(pad, as: stream.rawValue)
            }
            if let entry = bin.staticPad(stream.rawValue) { writing.install(on: entry, muxerPad: pad, stream: stream) }
        }
        return bin
    }

    /// Whether an MP4 file has its `moov` box (ISO/IEC 14496-12 §4.2: top-level boxes, each a
    /// 32-bit size, or 1 and a 64-bit one after the type, or 0 for "to the end").
    static func hasMovieBox(_ file: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: file) else { return false }
        defer { try? handle.close() }
        var offset: UInt64 = 0
        while let header = try? handle.read(upToCount: 16), header.count >= 8 {
            let bytes = [UInt8](header)
            let size32 = bytes[0..<4].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if String(decoding: bytes[4..<8], as: UTF8.self) == "moov" { return true }
            let size = size32 == 1 && bytes.count >= 16 ? bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } : size32
            let (next, overflow) = offset.addingReportingOverflow(size)
            guard size >= 8, !overflow else { return false }
            offset = next
            guard (try? handle.seek(toOffset: offset)) != nil else { return false }
        }
        return false
    }

    static func padTemplate(_ container: Container, _ stream: StreamKind) -> String {
        container == .ts ? "sink_%d" : "\(stream.rawValue)_%u"
    }

    nonisolated(nonsending) public func finish(completed: Bool) async -> SinkVerdict {
        let manager = FileManager.default
        guard manager.fileExists(atPath: partialPath) || naming.isDone else { return .quiet }
        guard writing.wroteMedia else {
            try? manager.removeItem(atPath: partialPath)
            return .failed("nothing was recorded to \(path): no media reached it before the end")
        }
        // Observed, not inferred from the run: a publish that failed beside it leaves this file whole;
        // an MP4 whose index (written last) never reached the disk, a full one, is not.
        let written = naming.isDone ? path : partialPath
        guard fileEnded.isTripped, container != .mp4 || Self.hasMovieBox(written) else {
            // An MP4's index is written at its end: without it nothing plays.
            guard container != .mp4 else {
                return .failed("recording cut short: \(written) holds what was written, but an .mp4 plays only once finished "
                               + "(record to .mkv or .ts to keep a recording cut short playable)")
            }
            return .done("recording cut short: \(partialPath) holds what was written")
        }
        do {
            try naming.rename(partialPath, to: path)
            let size = (try? manager.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            let wrote = String(format: "wrote %@ (%.2f MB)", path, Double(size) / 1_000_000)
            // Whole and playable, but not the run: a recording asked for is not what was made.
            guard !writing.endedAtFormatChange else {
                return .failed("\(wrote), but only up to where a stream changed format, which a .\(container.rawValue) file "
                    + "cannot take mid-file (record to .ts to keep one file through such changes)")
            }
            return .done(wrote)
        } catch {
            return .failed("could not rename \(partialPath) to \(path): \(error)")
        }
    }
}

/// The one rename of a finished recording to its name (replacing any file of that name), from
/// whichever comes first: the file's own end, or the run's.
final class FileNaming: Sendable {
    private let done = Mutex(false)

    var isDone: Bool { done.withLock { $0 } }

    func rename(_ partialPath: String, to path: String) throws {
        try done.withLock { done in
            guard !done else { return }
            // rename(2): one step, and it replaces a file only (a folder made meanwhile stays, and the rename fails).
            guard Foundation.rename(partialPath, path) == 0 else { throw BuildError(String(cString: strerror(errno))) }
            done = true
        }
    }
}
