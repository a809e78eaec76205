import Foundation
import Jobs
import PostgresNIO
import Synchronization

/// The expiry jobs of holds: one per second in which holds expire (`hold-expiry:<epoch second>`, run at that second's
/// end), not one per hold, so that taking a hold rarely writes a job and an expiry releases every hold due at once
/// (``HoldExpiryJob``). A process remembers the seconds it scheduled and enqueues each once; another process's
/// enqueue of the same second is skipped by the job's unique key.
final class HoldExpirySchedule: Sendable {
    private let queue: any JobScheduling
    private let scheduled = Mutex(Set<Int64>())

    init(queue: any JobScheduling) { self.queue = queue }

    /// Enqueues the jobs of `expiries`' seconds this process has not scheduled yet, on the group's transaction;
    /// returns them, for ``committed(_:)`` once that transaction committed. (A group that commits after its second's
    /// job looked leaves its holds to the periodic sweep, ``HoldExpiryJob/schedule``.)
    func schedule(_ expiries: [Date], on connection: PostgresConnection) async throws -> Set<Int64> {
        let seconds = Set(expiries.map { Int64($0.timeIntervalSince1970.rounded(.up)) })
        let missing = scheduled.withLock { known in seconds.subtracting(known) }
        for second in missing.sorted() {
            _ = try await queue.enqueue(
                try NewJob(
                    kind: HoldExpiryJob.jobKind, arguments: HoldExpiryJob.Arguments(at: Date(timeIntervalSince1970: Double(second))),
                    runAt: Date(timeIntervalSince1970: Double(second)), uniqueKey: "hold-expiry:\(second)",
                    // One sweep at a time: each releases every hold due, so two at once would only wait for each
                    // other's account locks over the same holds (a worker with 100 seconds' jobs due ran them all).
                    concurrencyKey: HoldExpiryJob.jobKind),
                on: connection)
        }
        return missing
    }

    /// Remembers seconds whose job is stored, and forgets those before the earliest of them (their jobs ran or run now).
    func committed(_ seconds: Set<Int64>) {
        guard let earliest = seconds.min() else { return }
        scheduled.withLock { known in
            known.formUnion(seconds)
            known = known.filter { $0 >= earliest }
        }
    }
}
