import Foundation
import TestSupport
import Testing

/// postgres-nio sends a transaction's `BEGIN` and `COMMIT` as plain queries, which a connection the database has just
/// dropped can lose for good (`ClosedConnectionWatch`). `PostgresClient.withFencedTransaction` fails such a transaction
/// within seconds; an unfenced one waits forever with its connection leased. A new `withTransaction` in `Sources`
/// fails here until it is fenced or listed with its reason.
@Suite("Every transaction of the sources is fenced")
struct FencedTransactionsTests {
    /// Files allowed to open a transaction postgres-nio's way, and why.
    static let unfenced: [String: String] = [
        // The fence itself.
        "Sources/StatementFencing/PostgresClient+FencedTransaction.swift": "wraps postgres-nio's transaction",
        // `migrate` is run by an operator, who sees a hang, under a `lock_timeout` of its own and on a connection it
        // opened for itself (not the pool's), which it closes when it stops.
        "Sources/Persistence/Migrations/SchemaMigrator+Apply.swift": "migrate's own connection",
    ]

    @Test("no `withTransaction(` outside the fence and the listed files, documentation comments apart")
    func everyTransactionIsFenced() throws {
        let sources = AppleSamples.repository.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var unfencedCalls: [String] = []
        var scanned = 0
        for case let file as URL in files where file.pathExtension == "swift" {
            let path = "Sources" + file.path.dropFirst(sources.path.count)
            scanned += 1
            guard Self.unfenced[path] == nil else { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains("withTransaction(") && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                unfencedCalls.append("\(path):\(number + 1)")
            }
        }
        #expect(scanned > 100, "the sources were found")
        #expect(unfencedCalls == [], "use PostgresClient.withFencedTransaction")
    }

    /// Files allowed a connection leased postgres-nio's way, how many times, and why: each such body sends only
    /// statements fenced one by one (`PostgresConnection.run`), or holds a LISTEN, or is `migrate`'s own.
    static let unfencedConnections: [String: (count: Int, reason: String)] = [
        "Sources/StatementFencing/PostgresClient+FencedTransaction.swift": (3, "the fences themselves"),
        "Sources/Application/Accounts/AccountStatusQuery.swift": (1, "a status read: one statement by run, the hot path"),
        "Sources/Application/Accounts/SpendReadAhead.swift": (1, "a spend's read-ahead: one statement by run, the hot path"),
        "Sources/Application/Notifications/NotificationInbox.swift": (1, "the intake's group: one statement by run, the hot path"),
        "Sources/Jobs/PostgresJobQueue.swift": (3, "the wake-up, the claim and the next due time: one statement by run each"),
        "Sources/Jobs/JobWorker.swift": (1, "the worker's LISTEN, which ends when its connection does"),
        "Sources/StorekeeperRuntime/AccountChangeListener.swift": (1, "the status caches' LISTEN, which ends when its connection does"),
        "Sources/Persistence/Migrations/SchemaMigrator.swift": (1, "migrate's session, under its lock_timeout"),
        "Sources/Persistence/Migrations/KeyRangeBackfill.swift": (1, "migrate's backfill session"),
    ]

    /// A plain `query` written to a connection the database had just dropped is never answered; a pool connection
    /// leased to such a wait stays leased for good, and after enough restarts of the database the pool is gone.
    @Test("no `withConnection` or `client.query(` outside the fence and the listed files, the benchmark's own set-up apart")
    func everyConnectionIsFenced() throws {
        let sources = AppleSamples.repository.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var found: [String: Int] = [:]
        var plainQueries: [String] = []
        for case let file as URL in files where file.pathExtension == "swift" {
            let path = "Sources" + file.path.dropFirst(sources.path.count)
            guard !path.hasPrefix("Sources/storekeeper-bench/") else { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                if line.contains("withConnection {") || line.contains("withConnection({") { found[path, default: 0] += 1 }
                if line.contains("client.query(") || line.contains("replica.query(") { plainQueries.append("\(path):\(number + 1)") }
            }
        }
        let unlisted = found.filter { Self.unfencedConnections[$0.key]?.count != $0.value }.map { "\($0.key): \($0.value)" }.sorted()
        #expect(found.count >= 5, "the sources were found")
        #expect(unlisted == [], "use PostgresClient.withFencedConnection (or list the file with its reason)")
        #expect(plainQueries == [], "use PostgresClient.fencedQuery")
    }
}
