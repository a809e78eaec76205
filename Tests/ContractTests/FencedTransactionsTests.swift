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
}
