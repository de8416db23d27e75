import CastlineKit
import Foundation

/// One load-test viewer in K (`load --decode K`) played through the normal pipeline, as
/// `listen --output null` plays the same stream, in this process: what the load counts for it is
/// what its own run shows. Its first frame is when the run first plays, a stall each time the
/// run goes buffering or reconnecting, its latency the figure its source measures.
struct DecodedViewer {
    let number: Int
    let listen: ListenShortcut
    let tally: LoadTally

    func run() async {
        let began = ContinuousClock.now
        let beganDate = Date()
        tally.started(number, at: began)
        defer { tally.finished(number) }
        let plan: PipelinePlan
        switch PipelineFiles.load(origin: "viewer \(number)", { environment, deferring throws(ConfigError) in
            try listen.spec(environment: environment, deferringUnsetSecrets: deferring)
        }) {
        case .success(let made): plan = made
        case .failure(let failure):
            tally.failed(number, reason: failure.lines.joined(separator: "; "), httpError: false)
            return
        }
        let runner = PipelineRunner(plan: plan)
        // Times from the events themselves: when the run changed state, not when this task looked.
        let watching = Task { [number, tally] in
            for await event in runner.events {
                let time = event.time.timeIntervalSince(beganDate)
                switch event.kind {
                case .stateChanged(_, let to):
                    tally.decoded(number, entered: to, at: time)
                case .failure(let line):
                    tally.failed(number, reason: line, httpError: false)
                case .stats(let sample):
                    if let behind = sample.behindLive {
                        tally.decoded(number, latency: behind, at: time)
                    }
                default:
                    break
                }
            }
        }
        await withTaskCancellationHandler {
            do {
                try await runner.start()
                _ = await runner.wait()
            } catch {
                tally.failed(number, reason: "\(error)", httpError: false)
            }
        } onCancel: {
            Task { await runner.stop() }
        }
        await watching.value
    }
}
