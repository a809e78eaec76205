import Foundation
import PostgresNIO
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport
@testable import Jobs
@testable import StatementFencing

@Suite("Statements on a connection that closes, on real PostgreSQL")
struct ClosedConnectionWatchTests {
    struct AddOne: PostgresPreparedStatement {
        static let sql = "SELECT $1::int8 + 1"
        typealias Row = Int64
        let value: Int64
        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(value)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int64.self) }
    }

    /// Two statements whose full type names share their first 63 bytes, as PostgreSQL keeps of a name.
    enum StatementsWithALongCommonPrefixInTheirFullTypeNames {
        enum NumberOneOfTwo: PreparedSQL { static let sql = "SELECT 1::int8" }
        enum NumberTwoOfTwo: PreparedSQL { static let sql = "SELECT 2::int8" }
    }

    @Test("prepared queries whose type names differ only after 63 bytes are two statements on one connection")
    func longNamesStayDistinct() async throws {
        typealias Long = StatementsWithALongCommonPrefixInTheirFullTypeNames
        #expect(PreparedQuery<Long.NumberOneOfTwo>.name.utf8.count <= 63)
        #expect(PreparedQuery<Long.NumberOneOfTwo>.name != PreparedQuery<Long.NumberTwoOfTwo>.name)
        try await withClient { client in
            try await client.withConnection { connection in
                for _ in 0..<2 {
                    let one = try await connection.run(PreparedQuery<Long.NumberOneOfTwo>(), logger: TestDatabase.logger)
                    let two = try await connection.run(PreparedQuery<Long.NumberTwoOfTwo>(), logger: TestDatabase.logger)
                    #expect(try one.map { try $0.decode(Int64.self) } == [1])
                    #expect(try two.map { try $0.decode(Int64.self) } == [2])
                }
            }
        }
    }

    @Test("run executes a prepared statement and returns its rows, again and again on one connection")
    func runReturnsRows() async throws {
        try await withClient { client in
            try await client.withConnection { connection in
                for value in Int64(0)..<3 {
                    let rows = try await connection.run(AddOne(value: value), logger: TestDatabase.logger)
                    #expect(rows == [value + 1])
                }
            }
        }
    }

    @Test("an operation still waiting when its connection closes fails with ConnectionClosedError instead of hanging")
    func closedConnectionFailsWaitingOperation() async throws {
        let watch = ClosedConnectionWatch(interval: .milliseconds(50))
        let (never, keepOpen) = AsyncStream<Void>.makeStream()
        defer { keepOpen.finish() }
        try await withClient { client in
            try await client.withConnection { connection in
                // Stands in for postgres-nio's lost answer: an operation that would never finish by itself.
                let outcome = Task { try await watch.fence(connection) { for await _ in never {} } }
                try await connection.close()
                await #expect {
                    try await outcome.value
                } throws: { error in
                    error is ConnectionClosedError
                }
            }
        }
    }

    /// How a fenced lease runs its body.
    enum FencedLease: CaseIterable, Sendable {
        /// A transaction whose body has a task of its own (every transaction but the groups').
        case transaction
        /// A transaction whose body runs inside the fence's task on the connection's loop (the spends' and holds' groups).
        case transactionOnConnectionLoop
        /// A connection lease without a transaction (`withFencedConnection`).
        case connection
    }

    @Test(
        "a fenced transaction or lease whose connection closes under it fails with ConnectionClosedError instead of hanging with its lease, as a commit group's BEGIN or COMMIT must (helper-143); the pool's next lease works",
        arguments: FencedLease.allCases
    )
    func closedConnectionFailsFencedLease(_ lease: FencedLease) async throws {
        let watch = ClosedConnectionWatch(interval: .milliseconds(50))
        let (never, keepOpen) = AsyncStream<Void>.makeStream()
        defer { keepOpen.finish() }
        let body: @Sendable (PostgresConnection) async throws -> Void = { connection in
            try await connection.close()
            // Stands in for postgres-nio's lost answer to a statement written to the closed connection.
            for await _ in never {}
        }
        try await withClient { client in
            await #expect {
                // A hang would fail the test as DeadlineExceeded, not stop it.
                try await withDeadline(.seconds(10)) {
                    switch lease {
                    case .transaction: try await client.withFencedTransaction(logger: TestDatabase.logger, watch: watch, body)
                    case .transactionOnConnectionLoop:
                        try await client.withFencedTransaction(logger: TestDatabase.logger, onConnectionLoop: true, watch: watch, body)
                    case .connection: try await client.withFencedConnection(watch: watch, body)
                    }
                }
            } throws: { error in
                error is ConnectionClosedError
            }
            // The pool hands out a working connection afterwards.
            let rows = try await client.withFencedConnection { connection in
                try await connection.run(AddOne(value: 1), logger: TestDatabase.logger)
            }
            #expect(rows == [2])
        }
    }

    @Test(
        "a fenced transaction's caller, cancelled, cancels what the body awaits, as an unfenced transaction's caller does: a job's deadline still stops an HTTP call made inside its transaction"
    )
    func cancelledCallerCancelsFencedBody() async throws {
        let (opened, signal) = AsyncStream<Void>.makeStream()
        try await withClient { client in
            let started = ContinuousClock.now
            let call = Task {
                try await client.withFencedTransaction(logger: TestDatabase.logger) { connection in
                    _ = try await connection.run(AddOne(value: 1), logger: TestDatabase.logger)
                    signal.yield()
                    // Stands in for a slow call inside the transaction; it ends early only when cancelled.
                    try await Task.sleep(for: .seconds(60))
                }
            }
            for await _ in opened { break }
            call.cancel()
            await #expect {
                try await call.value
            } throws: { error in
                (error as? PostgresTransactionError)?.closureError is CancellationError
            }
            #expect(ContinuousClock.now - started < .seconds(30))
        }
    }

    @Test("a fenced connection's caller, cancelled, cancels what its body awaits")
    func cancelledCallerCancelsFencedConnectionBody() async throws {
        let (opened, signal) = AsyncStream<Void>.makeStream()
        try await withClient { client in
            let started = ContinuousClock.now
            let call = Task {
                try await client.withFencedConnection { connection in
                    _ = try await connection.run(AddOne(value: 1), logger: TestDatabase.logger)
                    signal.yield()
                    try await Task.sleep(for: .seconds(60))
                }
            }
            for await _ in opened { break }
            call.cancel()
            await #expect(throws: CancellationError.self) { try await call.value }
            #expect(ContinuousClock.now - started < .seconds(30))
        }
    }

    @Test("a fenced query returns its rows, decoded as postgres-nio's own sequence is, and PostgreSQL's error as PostgreSQL's")
    func fencedQueryReturnsRowsAndErrors() async throws {
        try await withClient { client in
            let rows = try await client.fencedQuery("SELECT n, 'row ' || n FROM generate_series(1, \(3)) AS n", logger: TestDatabase.logger)
            var decoded: [String] = []
            for try await (number, text) in rows.decode((Int, String).self) { decoded.append("\(number): \(text)") }
            #expect(decoded == ["1: row 1", "2: row 2", "3: row 3"])
            #expect(try await client.fencedQuery("SELECT 1 WHERE false").rows.isEmpty)
            await #expect {
                try await client.fencedQuery("SELECT 1 / 0")
            } throws: { error in
                (error as? PSQLError)?.serverInfo?[.sqlState] == "22012"
            }
        }
    }

    @Test("a statement whose backend the server terminates fails; the connection's next lease works")
    func terminatedBackendFails() async throws {
        try await withClient { client in
            await #expect(throws: (any Error).self) {
                try await client.withConnection { connection in
                    let pid = try await connection.run(BackendPID(), logger: TestDatabase.logger).first ?? 0
                    async let sleeping: [Void] = connection.run(Sleep(seconds: 60), logger: TestDatabase.logger)
                    try await eventually("the backend sleeping") {
                        try await client.withConnection { other in
                            try await other.run(IsSleeping(pid: pid), logger: TestDatabase.logger) == [true]
                        }
                    }
                    try await client.withConnection { other in
                        _ = try await other.query("SELECT pg_terminate_backend(\(pid))", logger: TestDatabase.logger)
                    }
                    _ = try await sleeping
                }
            }
            // Under load postgres-nio can lease the terminated connection once more before it has seen it close (that
            // lease fails at once, with an error); the pool must then hand out one that works.
            var failedLeases = 0
            try await eventually("a lease after the termination to work") {
                do {
                    let rows = try await client.withConnection { connection in
                        try await connection.run(AddOne(value: 41), logger: TestDatabase.logger)
                    }
                    return rows == [42]
                } catch {
                    failedLeases += 1
                    return false
                }
            }
            #expect(failedLeases <= 1)
        }
    }

    struct BackendPID: PostgresPreparedStatement {
        static let sql = "SELECT pg_backend_pid()"
        typealias Row = Int32
        func makeBindings() throws -> PostgresBindings { PostgresBindings() }
        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int32.self) }
    }

    struct Sleep: PostgresPreparedStatement {
        static let sql = "SELECT pg_sleep($1)"
        typealias Row = ()
        let seconds: Double
        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(seconds)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Row {}
    }

    struct IsSleeping: PostgresPreparedStatement {
        static let sql = "SELECT count(*) = 1 FROM pg_stat_activity WHERE pid = $1 AND query LIKE '%pg_sleep%' AND state = 'active'"
        typealias Row = Bool
        let pid: Int32
        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(pid)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Bool.self) }
    }

    private func withClient(_ body: @escaping @Sendable (PostgresClient) async throws -> Void) async throws {
        let url = try TestDatabase.adminURL()
        try await PostgresClient.withRunning(url.clientConfiguration(maximumConnections: 4), logger: TestDatabase.logger, body)
    }
}
