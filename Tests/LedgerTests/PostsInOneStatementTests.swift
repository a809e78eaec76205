import Credits
import Foundation
import Persistence
import PostgresNIO
import Subscriptions
import TestSupport
import Testing

@testable import IntegrationSupport

/// `post_credit_operations` (sql/0061) inserts a list's buckets in one statement and its ledger rows in one more, where
/// it inserted them one operation at a time; a list that ends a window still runs the loop. The two must leave the
/// same database: generated lists (buckets opened once or twice, posts to buckets opened before or earlier in the list,
/// zero deltas, keys posted before or twice in the list, both kinds of owner) are posted once each way — the loop forced
/// by a window end of a bucket that does not exist, which changes nothing — each in a namespace of its own, and the
/// keys answered, the ledger rows in id order, the buckets and the kept balances are compared.
@Suite("Credit posts in one statement leave what the loop left, on real PostgreSQL")
struct PostsInOneStatementTests {
    /// An operation before it is given a namespace.
    enum Draft {
        case post(key: Int, bucket: Int, delta: Int64, opening: Opening?)
    }

    struct Opening {
        var topUp: Bool
        var from: Int
        var days: Int?
        var price: Int64?
    }

    static let start = Date(timeIntervalSince1970: 1_790_000_000)

    static func operations(_ drafts: [Draft], in space: String) -> [LedgerOperation] {
        drafts.map { draft in
            switch draft {
            case .post(let key, let bucket, let delta, let opening):
                let bucketKey = "\(space):b\(bucket)"
                let entry = LedgerEntry(operationKey: "\(space):k\(key)", bucket: bucketKey, delta: delta, reason: delta > 0 ? "cycle" : "usage")
                return .post(
                    entry,
                    opening: opening.map { opening in
                        CreditBucket(
                            key: bucketKey, meter: "ai_requests", kind: opening.topUp ? .topUp : .cycle,
                            originalTransactionId: opening.topUp ? nil : "\(space):s", billingPeriod: opening.topUp ? nil : "\(space):p\(bucket)",
                            accountId: opening.topUp ? AccountID("\(space):a") : nil,
                            validFrom: start.addingTimeInterval(Double(opening.from) * 3_600),
                            validUntil: opening.days.map { start.addingTimeInterval(Double($0) * 86_400) }, price: opening.price)
                    })
            }
        }
    }

    /// A list of 1–12 operations over four buckets: none posts to a bucket before the list or an earlier operation
    /// opens it (the loop fails such a list on the kept balance's key; the rules never write one).
    static func drafts(using generator: inout SplitMix64, opened: inout Set<Int>, keys: inout Int) -> [Draft] {
        (0..<Int.random(in: 1...12, using: &generator)).map { _ in
            let bucket = Int.random(in: 0..<4, using: &generator)
            let opens = !opened.contains(bucket) || Int.random(in: 0..<4, using: &generator) == 0
            opened.insert(bucket)
            let key: Int
            if keys > 0, Int.random(in: 0..<5, using: &generator) == 0 {
                key = Int.random(in: 0..<keys, using: &generator)  // posted already, before the list or in it
            } else {
                key = keys
                keys += 1
            }
            let delta: Int64 = [0, -1, -3, 2, 10, 100][Int.random(in: 0..<6, using: &generator)]
            let opening =
                opens
                ? Opening(
                    topUp: Bool.random(using: &generator), from: Int.random(in: -48...48, using: &generator),
                    days: Bool.random(using: &generator) ? Int.random(in: 1...60, using: &generator) : nil,
                    price: Bool.random(using: &generator) ? Int64.random(in: 1...9_990_000, using: &generator) : nil)
                : nil
            return .post(key: key, bucket: bucket, delta: delta, opening: opening)
        }
    }

    @Test(
        "generated lists leave the same keys answered, ledger rows in the same order, the same buckets and balances, posted in one statement or one at a time"
    )
    func sameAsTheLoop() async throws {
        let seed = ProcessInfo.processInfo.environment["STOREKEEPER_TEST_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        var generator = SplitMix64(state: seed)
        // Two lists a history: the second finds the first's buckets and keys there already.
        let histories = (0..<40).map { _ in
            var opened: Set<Int> = []
            var keys = 0
            return (0..<2).map { _ in Self.drafts(using: &generator, opened: &opened, keys: &keys) }
        }
        try await TestDatabase.withMigratedClient(maximumConnections: 1) { client in
            let ledger = CreditLedger(catalogue: try TierCatalogue.load(path: "config/tiers.yml").get(), logger: TestDatabase.logger)
            var listsPosted = 0
            var rowsCompared = 0
            for (history, lists) in histories.enumerated() {
                var answered: [String: [Set<String>]] = [:]
                for way in ["one", "loop"] {
                    let space = "h\(history)-\(seed % 100_000)-\(way)"
                    for list in lists {
                        var operations = Self.operations(list, in: space)
                        if way == "loop" { operations.append(.setWindowEnd(bucket: "\(space):none", end: nil)) }
                        let posted = try await client.withTransaction(logger: TestDatabase.logger) { connection in
                            try await ledger.post(operations, at: Self.start, on: connection).posted
                        }
                        answered[way, default: []].append(Set(posted.map { $0.replacingOccurrences(of: space, with: "") }))
                    }
                }
                #expect(answered["one"] == answered["loop"], "keys answered, history \(history), seed \(seed)")
                let one = try await Self.stored(in: "h\(history)-\(seed % 100_000)-one", client: client)
                let loop = try await Self.stored(in: "h\(history)-\(seed % 100_000)-loop", client: client)
                #expect(one.ledger == loop.ledger, "ledger rows, history \(history), seed \(seed)")
                #expect(one.buckets == loop.buckets, "buckets, history \(history), seed \(seed)")
                #expect(one.balances == loop.balances, "balances, history \(history), seed \(seed)")
                listsPosted += 2
                rowsCompared += one.ledger.count
            }
            #expect(rowsCompared > 100, "the lists wrote rows to compare: \(rowsCompared)")
            print("PostsInOneStatementTests: seed \(seed), \(listsPosted) lists each way, \(rowsCompared) ledger rows compared")
        }
    }

    @Test(
        "one list worked by hand: a key posted twice is written once, a bucket opened twice keeps its first window, a zero delta opens a bucket and writes no row, a row before its bucket's opening is taken, nothing posted reads the status alone"
    )
    func byHand() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 1) { client in
            let ledger = CreditLedger(catalogue: try TierCatalogue.load(path: "config/tiers.yml").get(), logger: TestDatabase.logger)
            let space = "hand-\(UUID().uuidString.prefix(8))"
            let month = Opening(topUp: false, from: 0, days: 30, price: 9_990)
            let posted = try await client.withTransaction(logger: TestDatabase.logger) { connection in
                try await ledger.post(
                    Self.operations(
                        [
                            .post(key: 0, bucket: 0, delta: 10, opening: month),
                            .post(key: 0, bucket: 1, delta: 5, opening: Opening(topUp: true, from: 0, days: nil, price: nil)),
                            .post(key: 1, bucket: 0, delta: -3, opening: Opening(topUp: false, from: 1, days: 60, price: 1)),
                            .post(key: 2, bucket: 2, delta: 0, opening: Opening(topUp: true, from: 0, days: nil, price: nil)),
                            .post(key: 3, bucket: 3, delta: 4, opening: nil),
                            .post(key: 4, bucket: 3, delta: 1, opening: Opening(topUp: true, from: 0, days: nil, price: nil)),
                        ], in: space), at: Self.start, on: connection
                ).posted
            }
            #expect(posted == ["\(space):k0", "\(space):k1", "\(space):k3", "\(space):k4"])
            let stored = try await Self.stored(in: space, client: client)
            let at = Self.start.timeIntervalSince1970
            #expect(stored.ledger == [":k0 :b0 10 cycle \(at)", ":k1 :b0 -3 usage \(at)", ":k3 :b3 4 cycle \(at)", ":k4 :b3 1 cycle \(at)"])
            #expect(stored.buckets.map(\.key) == [":b0", ":b1", ":b2", ":b3"], "the duplicate key's opening is made: the loop made it too")
            #expect(stored.buckets.first?.description == "ai_requests cycle :s :p0 - \(at) 9990", "the first opening stands")
            #expect(stored.buckets.first?.validUntil == at + 30 * 86_400)
            #expect(stored.balances == [":b0 7", ":b3 5"])

            let statusAlone = try await client.withTransaction(logger: TestDatabase.logger) { connection in
                try await ledger.post([], readingStatusOf: [AccountID(UUID())], at: Self.start, on: connection)
            }
            #expect(statusAlone.posted.isEmpty && statusAlone.statuses.count == 1)
        }
    }

    @Test(
        "a list that ends a window it opened still ends it, and an end listed before its bucket's opening does nothing: the loop runs, and the rows it posts are answered"
    )
    func windowEnds() async throws {
        try await TestDatabase.withMigratedClient(maximumConnections: 1) { client in
            let ledger = CreditLedger(catalogue: try TierCatalogue.load(path: "config/tiers.yml").get(), logger: TestDatabase.logger)
            let space = "end-\(UUID().uuidString.prefix(8))"
            let end = Self.start.addingTimeInterval(86_400)
            let operations =
                Self.operations([.post(key: 0, bucket: 0, delta: 10, opening: Opening(topUp: false, from: 0, days: 30, price: nil))], in: space)
                + [.setWindowEnd(bucket: "\(space):b0", end: end)]
                + Self.operations([.post(key: 1, bucket: 0, delta: -4, opening: nil)], in: space)
            let posted = try await client.withTransaction(logger: TestDatabase.logger) {
                try await ledger.post(operations, at: Self.start, on: $0).posted
            }
            #expect(posted == ["\(space):k0", "\(space):k1"])
            let stored = try await Self.stored(in: space, client: client)
            #expect(stored.buckets.map(\.validUntil) == [end.timeIntervalSince1970], "the window ends where the list says")
            #expect(stored.balances == [":b0 6"])

            let early = try await client.withTransaction(logger: TestDatabase.logger) {
                let month = Opening(topUp: false, from: 0, days: 30, price: nil)
                let opening = Self.operations([.post(key: 2, bucket: 1, delta: 5, opening: month)], in: space)
                return try await ledger.post([.setWindowEnd(bucket: "\(space):b1", end: end)] + opening, at: Self.start, on: $0).posted
            }
            #expect(early == ["\(space):k2"])
            let after = try await Self.stored(in: space, client: client)
            #expect(after.buckets.last?.key == ":b1" && after.buckets.last?.validUntil == Self.start.timeIntervalSince1970 + 30 * 86_400)
        }
    }

    struct Stored {
        var ledger: [String]
        var buckets: [Bucket]
        var balances: [String]
    }

    struct Bucket: Equatable {
        var key: String
        var description: String
        var validUntil: Double?
    }

    /// What namespace `space` holds, its name taken out of every key.
    static func stored(in space: String, client: PostgresClient) async throws -> Stored {
        let strip = { (text: String) in text.replacingOccurrences(of: space, with: "") }
        let pattern = space + ":%"
        var ledger: [String] = []
        for try await (key, bucket, delta, reason, created) in try await client.query(
            "SELECT operation_key, bucket, delta, reason, created_at FROM credit_ledger WHERE operation_key LIKE \(pattern) ORDER BY id",
            logger: TestDatabase.logger
        ).decode((String, String, Int64, String, Date).self) {
            ledger.append("\(strip(key)) \(strip(bucket)) \(delta) \(reason) \(created.timeIntervalSince1970)")
        }
        var buckets: [Bucket] = []
        for try await (key, meter, kind, subscription, period, account, from, until, price) in try await client.query(
            """
            SELECT key, meter, kind, original_transaction_id, billing_period, account_id, valid_from, valid_until, price
            FROM credit_buckets WHERE key LIKE \(pattern) ORDER BY key
            """,
            logger: TestDatabase.logger
        ).decode((String, String, String, String?, String?, String?, Date, Date?, Int64?).self) {
            buckets.append(
                Bucket(
                    key: strip(key),
                    description: "\(meter) \(kind) \(subscription.map(strip) ?? "-") \(period.map(strip) ?? "-") \(account.map(strip) ?? "-") "
                        + "\(from.timeIntervalSince1970) \(price.map(String.init) ?? "-")",
                    validUntil: until?.timeIntervalSince1970))
        }
        var balances: [String] = []
        for try await (bucket, balance) in try await client.query(
            "SELECT bucket, balance FROM credit_bucket_balances WHERE bucket LIKE \(pattern) ORDER BY bucket", logger: TestDatabase.logger
        ).decode((String, Int64).self) {
            balances.append("\(strip(bucket)) \(balance)")
        }
        return Stored(ledger: ledger, buckets: buckets, balances: balances)
    }
}
