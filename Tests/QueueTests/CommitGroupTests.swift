import Jobs
import NIOCore
import NIOPosix
import StatementFencing
import Synchronization
import Testing

@testable import IntegrationSupport

@Suite("Group commit")
struct CommitGroupTests {
    struct Refused: Error {}

    @Test("callers arriving during a commit share the next one, and each gets its own outcome")
    func callersShareCommits() async throws {
        let groupSizes = Mutex<[Int]>([])
        let group = CommitGroup<Int, Int>(maximumBatch: 16) { items in
            groupSizes.withLock { $0.append(items.count) }
            try await Task.sleep(for: .milliseconds(5))  // a commit's round trips and fsync
            return items.map { $0 * 2 }
        }
        let results = try await withThrowingTaskGroup(of: (Int, Int).self) { tasks in
            for item in 0..<200 { tasks.addTask { (item, try await group.submit(item)) } }
            return try await tasks.reduce(into: [Int: Int]()) { $0[$1.0] = $1.1 }
        }
        #expect(results.count == 200)
        #expect(results.allSatisfy { $0.value == $0.key * 2 })
        let sizes = groupSizes.withLock { $0 }
        #expect(sizes.reduce(0, +) == 200)
        #expect(sizes.allSatisfy { $0 <= 16 })
        #expect(sizes.count < 200, "no group formed: \(sizes)")
    }

    @Test("an item the commit refuses fails only its own caller; the rest of its group is committed")
    func refusedItemFailsAlone() async throws {
        let group = CommitGroup<Int, Int>(maximumBatch: 64) { items in
            try await Task.sleep(for: .milliseconds(2))
            guard !items.contains(13) else { throw Refused() }
            return items
        }
        let results = await withTaskGroup(of: (Int, Result<Int, any Error>).self) { tasks in
            for item in 0..<50 {
                tasks.addTask { (item, await Result { try await group.submit(item) }) }
            }
            return await tasks.reduce(into: [Int: Result<Int, any Error>]()) { $0[$1.0] = $1.1 }
        }
        for (item, result) in results {
            if item == 13 {
                #expect(throws: Refused.self) { try result.get() }
            } else {
                #expect(try result.get() == item)
            }
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

@Suite("Group commit on an event loop")
struct CommitGroupExecutorTests {
    @Test("with an executor, every commit runs on its event loop, also after awaiting an answer from another thread")
    func commitsRunOnTheLoop() async throws {
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let (database, other) = (loops.next(), loops.next())
        #expect(database !== other)
        let onLoop = Mutex<[Bool]>([])
        let group = CommitGroup<Int, Int>(maximumBatch: 8, executor: EventLoopTaskExecutor(database)) { items in
            onLoop.withLock { $0.append(database.inEventLoop) }
            // An answer completed on another event loop, as a statement's would be on a connection elsewhere.
            try await other.scheduleTask(in: .milliseconds(1)) {}.futureResult.get()
            onLoop.withLock { $0.append(database.inEventLoop) }
            return items
        }
        let results = try await withThrowingTaskGroup(of: Int.self) { tasks in
            for item in 0..<40 { tasks.addTask { try await group.submit(item) } }
            return try await tasks.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(results.sorted() == Array(0..<40))
        let checks = onLoop.withLock { $0 }
        #expect(!checks.isEmpty && checks.allSatisfy { $0 }, "\(checks)")
        try await loops.shutdownGracefully()
    }
}
