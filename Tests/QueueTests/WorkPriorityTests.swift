import Foundation
import Testing

@testable import IntegrationSupport

@Suite("storekeeper work's CPU priority")
struct WorkPriorityTests {
    /// Name and nice value of every thread of `pid`, from `/proc/<pid>/task/*/comm` and `stat` (field 19).
    static func threadNiceValues(_ pid: Int32) -> [String: Int] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return Dictionary(
            uniqueKeysWithValues: tasks.compactMap { task -> (String, Int)? in
                guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                    let name = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8),
                    let fields = stat.split(separator: ")").last?.split(separator: " "), fields.count > 16, let nice = Int(fields[16])
                else { return nil }
                return ("\(task) \(name.trimmingCharacters(in: .whitespacesAndNewlines))", nice)
            })
    }

    /// The threads that run jobs — the main thread, NIO's event loops and the concurrency pool's — are lowered.
    /// (libdispatch may start an overcommit thread later at its own priority; none of the work runs there.)
    @Test("the job-running threads of `work` have STOREKEEPER_WORKER_NICE; it still stops cleanly on SIGTERM")
    func workRunsNiced() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            var environment = harness.processEnvironment
            environment["STOREKEEPER_WORKER_NICE"] = "7"
            let work = try TestProcess("storekeeper", arguments: ["work"], environment: environment)
            try await eventually("work started") { work.text.contains("worker started") }
            // Threads libdispatch starts later are lowered within a second.
            var values: [String: Int] = [:]
            try await eventually("every job-running thread at nice 7") {
                values = Self.threadNiceValues(work.pid).filter { thread, _ in
                    thread.hasSuffix(" storekeeper") || thread.contains("NIO-") || thread.hasSuffix("default-qos")
                }
                return values.count >= 4 && values.values.allSatisfy { $0 == 7 }
            }
            #expect(values.values.allSatisfy { $0 == 7 }, "\(values)")
            work.signal(SIGTERM)
            #expect(await work.waitForExit() == 0)
        }
    }

    @Test("a nice value out of range is a configuration error")
    func outOfRange() async throws {
        let (status, output) = try await TestProcess.run(
            "storekeeper", ["work"], environment: ["STOREKEEPER_WORKER_NICE": "20", "DATABASE_URL": "postgres://u@127.0.0.1:1/x"])
        #expect(status != 0)
        #expect(output.contains("STOREKEEPER_WORKER_NICE"), "\(output)")
    }
}
