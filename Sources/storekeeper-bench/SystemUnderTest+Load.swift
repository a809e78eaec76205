import AsyncHTTPClient
import Foundation
import NIOCore
import PostgresNIO
import StorekeeperRuntime

extension SystemUnderTest {
    /// What one sending phase measured.
    struct SendPhase {
        var sent = 0
        var accepted = 0
        var failed = 0
        var seconds = 0.0
        var latencies: [Double] = []

        func percentile(_ p: Double) -> Double { LoadPhase.percentile(p, of: latencies) }
    }

    /// POSTs every body to the intake over `clients` connections: as fast as answered, or paced at `rate` per second
    /// (``HTTPLoadGenerator/send(host:port:connections:count:rate:request:)``: an HTTP client with a pool and a task
    /// per request took a quarter of a core at 500/s from the processes measured).
    func send(_ bodies: [ByteBuffer], clients: Int, rate: Int?) async throws -> SendPhase {
        guard !bodies.isEmpty else { return SendPhase() }
        let head = "POST /notifications/apple HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\nContent-Length: "
        let phase = try await HTTPLoadGenerator.send(host: "127.0.0.1", ports: ports, connections: clients, count: bodies.count, rate: rate) {
            index in
            var body = bodies[index]
            var request = ByteBuffer()
            request.reserveCapacity(head.utf8.count + 12 + body.readableBytes)
            request.writeString(head + "\(body.readableBytes)\r\n\r\n")
            request.writeBuffer(&body)
            return request
        }
        return SendPhase(sent: bodies.count, accepted: phase.answered, failed: phase.failed, seconds: phase.seconds, latencies: phase.latencies)
    }

    /// Sends whole prebuilt HTTP/1.1 requests (each with its own headers: a Stripe event's signature), as ``send(_:clients:rate:)``.
    func send(requests: [ByteBuffer], clients: Int, rate: Int?) async throws -> SendPhase {
        guard !requests.isEmpty else { return SendPhase() }
        let phase = try await HTTPLoadGenerator.send(host: "127.0.0.1", ports: ports, connections: clients, count: requests.count, rate: rate) {
            requests[$0]
        }
        return SendPhase(sent: requests.count, accepted: phase.answered, failed: phase.failed, seconds: phase.seconds, latencies: phase.latencies)
    }

    /// Subscribes `count` new accounts to pro.monthly (1,000 credits each) through signed notifications and waits until
    /// they are applied (`serve` and a worker running); returns the accounts.
    func subscribeAccounts(_ count: Int, clients: Int) async throws -> [UUID] {
        let accounts = (0..<count).map { _ in UUID() }
        let started = Date()
        let bodies = try accounts.enumerated().map { index, account in
            try subscribe(index, account: account, at: started.addingTimeInterval(Double(index) / 1000)).body
        }
        _ = try await send(bodies, clients: min(clients, 16), rate: nil)
        _ = try await waitUntilApplied(count, receivedSince: started)
        return accounts
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

extension SystemUnderTest {
    /// Status reads counted by `serve` (`storekeeper_status_reads_total`): from its cache, from the primary, or from
    /// the read replica (`STOREKEEPER_REPLICA_URL`).
    struct StatusReads {
        var cache = 0
        var database = 0
        var replica = 0

        var all: Int { cache + database + replica }

        /// The share of the reads since `earlier` answered from the cache (0 when there were none).
        func cacheShare(since earlier: StatusReads) -> Double {
            let all = self.all - earlier.all
            return all == 0 ? 0 : Double(cache - earlier.cache) / Double(all)
        }

        /// The share of the reads since `earlier` answered by the replica (0 when there were none).
        func replicaShare(since earlier: StatusReads) -> Double {
            let all = self.all - earlier.all
            return all == 0 ? 0 : Double(replica - earlier.replica) / Double(all)
        }
    }

    /// `serve`'s status reads so far, summed over the serve processes' `/metrics`: what shows a "warm" phase was
    /// served from the cache and a "cold" one from the database.
    func statusReads() async -> StatusReads {
        var reads = StatusReads()
        for port in ports {
            guard let response = try? await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(10)),
                let body = try? await response.body.collect(upTo: 1 << 22)
            else { continue }
            for line in String(buffer: body).split(separator: "\n") where line.hasPrefix("storekeeper_status_reads_total{") {
                let value = Int(Double(line.split(separator: " ").last ?? "") ?? 0)
                if line.contains(#"source="cache""#) {
                    reads.cache += value
                } else if line.contains(#"source="database""#) {
                    reads.database += value
                } else if line.contains(#"source="replica""#) {
                    reads.replica += value
                }
            }
        }
        return reads
    }
}
