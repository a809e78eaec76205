import Foundation
import Jobs
import PostgresNIO
import Synchronization
import Testing

@testable import IntegrationSupport

@Suite("The intake's worker notifier, on real PostgreSQL")
struct WorkerNotifierTests {
    final class Received: Sendable { let count = Atomic<Int>(0) }

    @Test("a signal NOTIFYs at once; signals soon after share one NOTIFY at the end of the interval")
    func coalescesWithinInterval() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let queue = harness.components.queue
            let interval = Duration.seconds(1)
            let notifier = WorkerNotifier(queue: queue, minimumInterval: interval)
            let received = Received()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await queue.client.withConnection { connection in
                        try await connection.listen(on: PostgresJobQueue.wakeUpChannel) { notifications in
                            for try await _ in notifications { received.count.add(1, ordering: .relaxed) }
                        }
                    }
                }
                defer { group.cancelAll() }
                try await harness.waitUntilListening()
                let clock = ContinuousClock()
                let start = clock.now
                notifier.signal()
                try await eventually("the first NOTIFY") { received.count.load(ordering: .relaxed) == 1 }
                for _ in 0..<50 { notifier.signal() }
                try await eventually("the coalesced NOTIFY") { received.count.load(ordering: .relaxed) == 2 }
                #expect(clock.now - start >= interval, "the second NOTIFY waits for the end of the interval")
            }
        }
    }
}
