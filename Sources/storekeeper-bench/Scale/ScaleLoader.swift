import Foundation
import Logging
import PostgresNIO
import StorekeeperRuntime

/// Runs `load.sql` (a resource of this target): server-side `INSERT … SELECT` from `generate_series`, one transaction,
/// then VACUUM ANALYZE and a CHECKPOINT. Every row is what the server would have written for N subscribers; subscriber
/// n's account is a UUIDv7-shaped id with n where v7 keeps its time (so account-keyed indexes fill in order) and its
/// original transaction id is `9000000000000 + n` (n from 1). The benchmark picks its accounts from `subscriptions`.
struct ScaleLoader {
    let statements: [String]

    static func fromBundle() throws -> ScaleLoader {
        guard let url = Bundle.module.url(forResource: "load", withExtension: "sql") else {
            throw CommandFailure("load.sql is missing from storekeeper-bench's resources")
        }
        let text = try String(contentsOf: url, encoding: .utf8)
        let statements = text.components(separatedBy: "\n-- statement\n").dropFirst()
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
        return ScaleLoader(statements: statements)
    }

    /// What a load took, in seconds: the inserts, VACUUM ANALYZE, and the CHECKPOINT after it (load.sql's last
    /// statements).
    struct Durations {
        var load: Double
        var vacuum: Double
        var checkpoint: Double
    }

    /// Loads `subscribers` and returns what each part took.
    func load(subscribers: Int, now: Date, url: DatabaseURL, logger: Logger) async throws -> Durations {
        try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            try await client.withConnection { connection in
                try await connection.query("CREATE TEMP TABLE scale_parameters (subscribers int, seed int, now timestamptz)", logger: logger)
                try await connection.query("INSERT INTO scale_parameters VALUES (\(subscribers), 1, \(now))", logger: logger)
                let started = ContinuousClock.now
                var vacuumStarted: ContinuousClock.Instant?
                var checkpointStarted: ContinuousClock.Instant?
                for statement in statements {
                    let code = statement.split(separator: "\n").filter { !$0.hasPrefix("--") }.joined(separator: "\n").uppercased()
                    if vacuumStarted == nil && code.hasPrefix("VACUUM") { vacuumStarted = ContinuousClock.now }
                    if checkpointStarted == nil && code.hasPrefix("CHECKPOINT") { checkpointStarted = ContinuousClock.now }
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                let ended = ContinuousClock.now
                let checkpoint = checkpointStarted ?? ended
                let vacuum = vacuumStarted ?? checkpoint
                return Durations(load: (vacuum - started).seconds, vacuum: (checkpoint - vacuum).seconds, checkpoint: (ended - checkpoint).seconds)
            }
        }
    }

    /// Account ids of `count` generated subscribers in `state`s (at random), for the hot-path phases; of products
    /// whose id starts with `productPrefix` only, when given.
    static func accounts(states: [String], productPrefix: String = "", count: Int, url: DatabaseURL, logger: Logger) async throws -> [String] {
        try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 1), logger: logger) { client in
            let rows = try await client.query(
                """
                SELECT account_id::text FROM subscriptions
                WHERE status = ANY(\(states)) AND account_id IS NOT NULL AND starts_with(product_id, \(productPrefix))
                ORDER BY random() LIMIT \(count)
                """,
                logger: logger)
            var accounts: [String] = []
            for try await account in rows.decode(String.self) { accounts.append(account) }
            return accounts
        }
    }
}
