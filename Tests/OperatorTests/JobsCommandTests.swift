import Foundation
import Jobs
import StorekeeperRuntime
import Testing

@testable import IntegrationSupport

@Suite("storekeeper jobs, as a process")
struct JobsCommandTests {
    struct Empty: Codable {}

    /// A job of kind `x` that failed for good ("it broke"), and one of kind `y` waiting to run.
    static func failedJob(beside harness: StorekeeperHarness) async throws -> ClaimedJob {
        let queue = harness.components.queue
        _ = try await queue.client.withConnection {
            try await queue.enqueue([try NewJob(kind: "x", arguments: Empty(), maxAttempts: 1), try NewJob(kind: "y", arguments: Empty())], on: $0)
        }
        let failing = try #require(try await queue.claim(limit: 1, workerID: UUID()).first)
        _ = try await queue.fail(failing, error: "it broke", retryAt: Date())
        return failing
    }

    @Test("stats, list, show, requeue and cancel work on a real database and fail with one line")
    func commands() async throws {
        try await StorekeeperHarness.run(worker: false) { harness in
            let failing = try await Self.failedJob(beside: harness)
            let environment = ["DATABASE_URL": harness.databaseURL.urlString]
            func storekeeper(_ arguments: String...) async throws -> (Int32, String) {
                try await TestProcess.run("storekeeper", arguments, environment: environment)
            }

            let (statsStatus, stats) = try await storekeeper("jobs", "stats")
            #expect(statsStatus == 0)
            #expect(stats.contains("failed") && stats.contains("available"))
            let (_, list) = try await storekeeper("jobs", "list", "--state", "failed")
            #expect(list.contains("it broke"))
            let (_, shown) = try await storekeeper("jobs", "show", String(failing.id))
            #expect(shown.contains("\"kind\" : \"x\""))
            // A usage error is one line, as every failure, naming the help to read; exit 64 (EX_USAGE).
            for arguments in [["jobs", "show"], ["jobs", "show", "not-a-number"], ["events", "show", "notauuid"]] {
                let (usage, usageText) = try await TestProcess.run("storekeeper", arguments, environment: environment)
                let lines = usageText.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "\n")
                #expect(
                    usage == 64 && lines.count == 1 && lines[0].hasPrefix("Error: ")
                        && lines[0].hasSuffix("(see 'storekeeper \(arguments.prefix(2).joined(separator: " ")) --help')"),
                    "\(arguments): \(usageText)")
            }
            let (dryStatus, dry) = try await storekeeper("jobs", "requeue", "--state", "failed", "--dry-run")
            #expect(dryStatus == 0 && dry.contains("would requeue 1 job"))
            // An id given twice is one job: requeued once, and not reported as one left over.
            let (requeueStatus, requeued) = try await storekeeper("jobs", "requeue", String(failing.id), String(failing.id))
            #expect(requeueStatus == 0 && requeued.contains("requeued 1 job"))
            let (cancelStatus, cancelled) = try await storekeeper("jobs", "cancel", String(failing.id))
            #expect(cancelStatus == 0 && cancelled.contains("cancelled 1 job"))

            // Expected failures: one line on stderr, exit 1, no stack trace.
            let (againStatus, again) = try await storekeeper("jobs", "cancel", String(failing.id))
            #expect(againStatus == 1)
            #expect(
                again.trimmingCharacters(in: .whitespacesAndNewlines) == "storekeeper: not cancelled (running, finished or unknown): \(failing.id)")
            let (unknownStatus, unknown) = try await storekeeper("jobs", "requeue", "987654")
            #expect(unknownStatus == 1)
            #expect(
                unknown.trimmingCharacters(in: .whitespacesAndNewlines) == "storekeeper: not requeued (not failed or cancelled, or unknown): 987654")
            let (missingStatus, missing) = try await storekeeper("jobs", "show", "987654")
            #expect(missingStatus == 1 && missing.trimmingCharacters(in: .whitespacesAndNewlines) == "storekeeper: no job 987654")
            let (badStatus, _) = try await storekeeper("jobs", "list", "--state", "bogus")
            #expect(badStatus != 0)
            // Outside a dev folder, no DATABASE_URL is one line; inside one, .storekeeper/dev.env names the database.
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sk-folder-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let (noDatabase, noDatabaseText) = try await TestProcess.run(
                "storekeeper", ["jobs", "stats"], environment: ["DATABASE_URL": ""], directory: folder)
            #expect(noDatabase == 1)
            #expect(noDatabaseText.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "\n").count == 1)
            try DevEnvironment(directory: folder.appendingPathComponent(".storekeeper")).writeSettings(["DATABASE_URL": harness.databaseURL.urlString]
            )
            let (devDatabase, devText) = try await TestProcess.run(
                "storekeeper", ["jobs", "stats"], environment: ["DATABASE_URL": ""], directory: folder)
            #expect(devDatabase == 0, "\(devText)")
            // A reader that has gone (`| head`, here `| true`, gone before anything is written): the command ends
            // quietly instead of trapping on the broken pipe.
            let binary = TestProcess.binDirectory.appendingPathComponent("storekeeper").path
            let shell = Process()
            shell.executableURL = URL(fileURLWithPath: "/bin/bash")
            shell.arguments = ["-c", "'\(binary)' jobs list 2>&1 | true; echo \"status ${PIPESTATUS[0]}\""]
            shell.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let output = Pipe()
            shell.standardOutput = output
            shell.standardError = output
            try shell.run()
            let pipedText = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            shell.waitUntilExit()
            let piped = shell.terminationStatus
            #expect(piped == 0 && pipedText.contains("status 0") && !pipedText.contains("Fatal error"), "\(pipedText)")
            let (unreachable, unreachableText) = try await TestProcess.run(
                "storekeeper", ["migrate"], environment: ["DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?sslmode=disable"])
            #expect(unreachable == 1)
            #expect(unreachableText.hasPrefix("storekeeper: "))
            // A server that answers but refuses the connection: the line says why, as the server put it.
            var absent = harness.databaseURL
            absent.database = "sk_no_such_database"
            let (refused, refusedText) = try await TestProcess.run("storekeeper", ["jobs", "stats"], environment: ["DATABASE_URL": absent.urlString])
            #expect(refused == 1, "\(refusedText)")
            #expect(
                refusedText.trimmingCharacters(in: .whitespacesAndNewlines).hasSuffix(": database \"sk_no_such_database\" does not exist"),
                "\(refusedText)")
            // migrate logs in the format serve and work use; a format it does not know is one line, before anything runs.
            let (badFormat, badFormatText) = try await TestProcess.run(
                "storekeeper", ["migrate"], environment: ["DATABASE_URL": harness.databaseURL.urlString, "STOREKEEPER_LOG_FORMAT": "xml"])
            #expect(badFormat == 1)
            #expect(
                badFormatText.trimmingCharacters(in: .whitespacesAndNewlines)
                    == "storekeeper: STOREKEEPER_LOG_FORMAT must be json or text, got \"xml\"")
            let (json, jsonText) = try await TestProcess.run(
                "storekeeper", ["migrate"], environment: ["DATABASE_URL": harness.databaseURL.urlString, "STOREKEEPER_LOG_FORMAT": "JSON"])
            #expect(json == 0 && jsonText.contains("database is up to date"), "\(jsonText)")
        }
    }
}
