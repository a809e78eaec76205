import Foundation
import Jobs
import StorekeeperRuntime
import Synchronization
import Testing

@testable import IntegrationSupport

@Suite("Group commit, measured")
struct CommitGroupMetricsTests {
    @Test("a named group records each caller's wait, each commit and its size, in the process's registry")
    func namedGroupIsMeasured() async throws {
        let registry = StorekeeperMetrics.registry  // bootstraps the process's metrics, as `serve` does
        let name = "test-\(UUID().uuidString.prefix(8))"  // a series of its own: other tests record in parallel
        let group = CommitGroup<Int, Int>(maximumBatch: 16, name: name) { items in
            try await Task.sleep(for: .milliseconds(3))  // a commit's round trips and fsync
            return items
        }
        let results = try await withThrowingTaskGroup(of: Int.self) { tasks in
            for item in 0..<100 { tasks.addTask { try await group.submit(item) } }
            return try await tasks.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(results.sorted() == Array(0..<100))
        try await Self.lastDurationRecorded(group: name) { registry.emitToString() }
        let text = registry.emitToString()
        let value = Self.reader(text, group: name)
        let lines = text.split(separator: "\n")
        // One wait per caller; the sizes of the commits add up to the callers; one duration per commit.
        #expect(value("storekeeper_commit_group_wait_seconds_count") == 100)
        #expect(value("storekeeper_commit_group_size_sum") == 100)
        let commits = try #require(value("storekeeper_commit_group_size_count"))
        #expect(commits >= 1 && commits < 100, "groups did not form")
        #expect(value("storekeeper_commit_group_duration_seconds_count") == commits)
        // Each commit slept 3 ms: none took less. The finer buckets apply (a bucket at 0.25 ms, which the default
        // list does not have).
        #expect(try #require(value("storekeeper_commit_group_duration_seconds_sum")) >= commits * 0.003)
        #expect(lines.contains { $0.hasPrefix("storekeeper_commit_group_wait_seconds_bucket{group=\"\(name)\",le=\"0.00025\"}") })
    }

    @Test("a failed group is one commit, its one-by-one retries inside it; every caller's wait is still recorded once")
    func failedGroupIsOneCommit() async throws {
        let registry = StorekeeperMetrics.registry
        let name = "test-\(UUID().uuidString.prefix(8))"
        let calls = Mutex(0)  // the commit's runs: each group's, and each retry of a failed group's callers
        let group = CommitGroup<Int, Int>(maximumBatch: 64, name: name) { items in
            calls.withLock { $0 += 1 }
            try await Task.sleep(for: .milliseconds(2))
            guard !items.contains(13) else { throw CommitGroupTests.Refused() }
            return items
        }
        await withTaskGroup(of: Void.self) { tasks in
            for item in 0..<50 { tasks.addTask { _ = try? await group.submit(item) } }
        }
        try await Self.lastDurationRecorded(group: name) { registry.emitToString() }
        let read = Self.reader(registry.emitToString(), group: name)
        #expect(read("storekeeper_commit_group_wait_seconds_count") == 50)
        #expect(read("storekeeper_commit_group_size_sum") == 50)
        let commits = try #require(read("storekeeper_commit_group_size_count"))
        #expect(read("storekeeper_commit_group_duration_seconds_count") == commits)
        // A failed group of n took its own 2 ms and then 2 ms for each of its n callers, one by one: all of it is in
        // its one duration, so the durations add up to every run's 2 ms (with 13 in a group of more than one, more
        // than the commits' count of them).
        let runs = Double(calls.withLock { $0 })
        #expect(try #require(read("storekeeper_commit_group_duration_seconds_sum")) >= runs * 0.002)
    }

    /// Waits until every commit's duration is recorded: CommitGroup records it after answering the commit's callers
    /// (a `defer`), so a caller that reads the registry at once can miss the last one (seen in a CI run).
    static func lastDurationRecorded(group: String, emit: () -> String) async throws {
        try await eventually(timeout: .seconds(10), "the last commit's duration") {
            let read = reader(emit(), group: group)
            return read("storekeeper_commit_group_duration_seconds_count") == read("storekeeper_commit_group_size_count")
        }
    }

    /// The value of `series{group="<group>"…}` in the registry's `text`.
    static func reader(_ text: String, group: String) -> (String) -> Double? {
        let lines = text.split(separator: "\n")
        return { series in
            let prefix = "\(series){group=\"\(group)\""
            return lines.first { $0.hasPrefix(prefix) }.flatMap { Double($0.split(separator: " ").last ?? "") }
        }
    }
}
