import Foundation
import NIOCore
import PostgresNIO
import StorekeeperRuntime
import Synchronization

extension SystemUnderTest {
    /// What one sending phase measured.
    struct SendPhase {
        var sent = 0
        var accepted = 0
        var failed = 0
        var seconds = 0.0
        var latencies: [Double] = []

        func percentile(_ p: Double) -> Double {
            guard !latencies.isEmpty else { return 0 }
            let sorted = latencies.sorted()
            return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
        }
    }

    /// POSTs every body with `clients` concurrent clients: as fast as answered, or paced at `rate` per second.
    func send(_ bodies: [ByteBuffer], clients: Int, rate: Int?) async throws -> SendPhase {
        guard !bodies.isEmpty else { return SendPhase() }
        final class Cursor: Sendable { let next = Atomic<Int>(0) }
        let cursor = Cursor()
        let clock = ContinuousClock()
        let began = clock.now
        var total = try await withThrowingTaskGroup(of: SendPhase.self) { group in
            for _ in 0..<clients {
                group.addTask {
                    var phase = SendPhase()
                    while true {
                        let index = cursor.next.add(1, ordering: .relaxed).oldValue
                        guard index < bodies.count else { return phase }
                        if let rate { try await Task.sleep(until: began + .microseconds(Int64(index) * 1_000_000 / Int64(rate)), clock: clock) }
                        let sent = clock.now
                        phase.sent += 1
                        let (status, _) = await self.post(bodies[index])
                        if status != nil { phase.latencies.append((clock.now - sent).seconds * 1000) }
                        if status == 200 { phase.accepted += 1 } else { phase.failed += 1 }
                    }
                }
            }
            return try await group.reduce(into: SendPhase()) { total, phase in
                total.sent += phase.sent
                total.accepted += phase.accepted
                total.failed += phase.failed
                total.latencies += phase.latencies
            }
        }
        total.seconds = (clock.now - began).seconds
        return total
    }

    /// Waits until `count` notifications received since `receivedSince` are applied; returns the applied rate from the
    /// database's own timestamps (first received — or `since`, when applying started later — to last applied).
    func waitUntilApplied(_ count: Int, receivedSince: Date, since: Date? = nil) async throws -> Double {
        try await PostgresClient.withRunning(databaseURL.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            let deadline = ContinuousClock.now + .seconds(600)
            while ContinuousClock.now < deadline {
                // While any is left, the newest unapplied one is found at once (apply order is oldest first), so
                // polling takes next to nothing from the system measured; the counting scan runs once at the end.
                let pending = try await client.query(
                    """
                    SELECT EXISTS (SELECT FROM notifications WHERE received_at >= \(receivedSince) AND applied_at IS NULL)
                    """, logger: logger)
                if try await pending.decode(Bool.self).first(where: { _ in true }) == true {
                    try await Task.sleep(for: .milliseconds(100))
                    continue
                }
                let rows = try await client.query(
                    """
                    SELECT count(*) FILTER (WHERE applied_at IS NOT NULL)::bigint,
                        coalesce(extract(epoch FROM max(applied_at) - coalesce(\(since), min(received_at))), 0)::float8
                    FROM notifications WHERE received_at >= \(receivedSince)
                    """, logger: logger)
                for try await (applied, seconds) in rows.decode((Int64, Double).self) where applied >= count {
                    return seconds > 0 ? Double(applied) / seconds : 0
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            throw CommandFailure("notifications were not all applied within 600 s")
        }
    }

}
