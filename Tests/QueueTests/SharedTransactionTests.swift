import Foundation
import Jobs
import PostgresNIO
import Testing

@testable import IntegrationSupport

@Suite("Jobs sharing a transaction")
struct SharedTransactionTests {
    struct Arguments: Codable { var fails = false }

    /// Writes the job's id with the id of the transaction it ran in, then fails if told to, else completes.
    struct ProbeHandler: TransactionalJobHandler {
        let kind = "probe"
        let jobsPerTransaction: Int
        let client: PostgresClient

        func run(_ execution: JobExecution) async throws {
            try await client.withTransaction(logger: TestDatabase.logger) { try await run(execution, on: $0) }
        }

        func run(_ execution: JobExecution, on connection: PostgresConnection) async throws {
            let id = execution.job.id
            try await connection.query("INSERT INTO probe_writes VALUES (\(id), txid_current())", logger: TestDatabase.logger)
            if try execution.job.decodeArguments(as: Arguments.self).fails { throw ProbeFailure() }
            try await execution.complete(on: connection)
        }
    }

    struct ProbeFailure: Error {}

    /// Runs a worker of 8 slots over `jobs` probes enqueued before it starts (one claim takes them all) until every
    /// one has completed or failed, and returns the probes' writes: job id → transaction id.
    func run(_ jobs: [Arguments], jobsPerTransaction: Int, harness: StorekeeperHarness) async throws -> [Int64: Int64] {
        let queue = harness.components.queue
        try await harness.client.query("CREATE TABLE probe_writes (job_id bigint, transaction_id bigint)", logger: TestDatabase.logger)
        _ = try await queue.client.withConnection {
            try await queue.enqueue(try jobs.map { try NewJob(kind: "probe", arguments: $0, maxAttempts: 1) }, on: $0)
        }
        let handler = ProbeHandler(jobsPerTransaction: jobsPerTransaction, client: harness.client)
        let worker = JobWorker(
            queue: queue, handlers: [handler], options: .init(concurrency: 8, pollInterval: .milliseconds(100)), logger: TestDatabase.logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await worker.run() }
            defer { group.cancelAll() }
            try await eventually(timeout: .seconds(10), "every probe to leave the queue") {
                try await harness.count("SELECT count(*) FROM jobs WHERE state <> 'failed'") == 0
            }
        }
        let rows = try await harness.client.query("SELECT job_id, transaction_id FROM probe_writes", logger: TestDatabase.logger)
        var writes: [Int64: Int64] = [:]
        for try await (job, transaction) in rows.decode((Int64, Int64).self) {
            #expect(writes.updateValue(transaction, forKey: job) == nil, "job \(job) wrote twice")
        }
        return writes
    }

    @Test("jobs claimed together share transactions of at most jobsPerTransaction, and all complete")
    func shared() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let writes = try await run(Array(repeating: Arguments(), count: 6), jobsPerTransaction: 4, harness: harness)
            #expect(writes.count == 6)
            let sizes = Dictionary(grouping: writes.values, by: { $0 }).values.map(\.count).sorted()
            #expect(sizes == [2, 4], "transactions of \(sizes) jobs")
            #expect(try await harness.count("SELECT count(*) FROM job_history WHERE state = 'completed'") == 6)
        }
    }

    @Test("when one job of a shared transaction throws, nothing of it stands and each job runs alone with its own outcome")
    func oneFails() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let jobs = [Arguments(), Arguments(), Arguments(fails: true), Arguments()]
            let writes = try await run(jobs, jobsPerTransaction: 4, harness: harness)
            // The failing job's write rolled back each time; each other job's write is from a transaction of its own.
            #expect(writes.count == 3)
            #expect(Set(writes.values).count == 3, "the shared transaction's writes stood: \(writes)")
            #expect(try await harness.count("SELECT count(*) FROM job_history WHERE state = 'completed'") == 3)
            #expect(try await harness.count("SELECT count(*) FROM jobs WHERE state = 'failed' AND attempt = 1") == 1)
        }
    }

    @Test("jobsPerTransaction 1: every job in a transaction of its own")
    func alone() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let writes = try await run(Array(repeating: Arguments(), count: 4), jobsPerTransaction: 1, harness: harness)
            #expect(writes.count == 4 && Set(writes.values).count == 4)
        }
    }
}
