import Application
import Foundation
import Jobs
import Persistence
import PostgresNIO

extension StorekeeperComponents {
    /// What `storekeeper dev`'s clock does when `simulate advance` moves it: jobs waiting for a later time come that
    /// much earlier; the retention jobs cut off by the dev clock (the idempotency window's among them), which run on the
    /// real clock's hourly slots, run once at once, as the skipped hours would have run them (one run of a kind at a
    /// time); and the offset is kept with the facts it dated, so a restarted `dev` resumes there.
    func devClockMoved(_ devClock: DevClock?) -> @Sendable (TimeInterval) async throws -> Void {
        let retentionKinds = devClock == nil ? [] : jobHandlers().schedules.map(\.kind).filter(RetentionJob.kinds.contains)
        let offsets = DevClockOffset(client: client, logger: logger)
        return { [queue, client] seconds in
            try await queue.bringForward(by: seconds)
            let move = devClock?.offsetMilliseconds ?? 0
            let runs = retentionKinds.map { NewJob(kind: $0, argumentsJSON: "{}", uniqueKey: "dev-clock-moved:\($0):\(move)", concurrencyKey: $0) }
            try await client.withFencedConnection { _ = try await queue.enqueue(runs, on: $0) }
            if let devClock { try await offsets.record(devClock.offsetMilliseconds) }
        }
    }
}
