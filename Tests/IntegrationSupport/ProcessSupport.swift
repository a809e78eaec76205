import Foundation

/// Runs a built executable of this package (`storekeeper`, `storekeeper-probe-worker`) as a child process.
final class TestProcess: @unchecked Sendable {
    let process = Process()
    let output: URL

    /// The directory the test binary lives in — where SwiftPM puts this package's executables.
    static let binDirectory: URL = {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        if FileManager.default.fileExists(atPath: beside.appendingPathComponent("storekeeper").path) { return beside }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug")
    }()

    init(_ executable: String, arguments: [String] = [], environment: [String: String], directory: URL? = nil) throws {
        // A built product by name; anything else (python3) by its absolute path.
        process.executableURL = executable.hasPrefix("/") ? URL(fileURLWithPath: executable) : Self.binDirectory.appendingPathComponent(executable)
        if let directory { process.currentDirectoryURL = directory }
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        merged.merge(environment) { _, new in new }
        process.environment = merged
        output = FileManager.default.temporaryDirectory.appendingPathComponent("sk-child-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let handle = try FileHandle(forWritingTo: output)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }
    var text: String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }

    func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Waits for exit (polling, bounded) and returns the status, or nil if it is still running.
    func waitForExit(timeout: Duration = .seconds(20)) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        return process.isRunning ? nil : process.terminationStatus
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: output)
    }

    /// Runs to completion and returns (status, output).
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String], directory: URL? = nil
    ) async throws -> (Int32, String) {
        let child = try TestProcess(executable, arguments: arguments, environment: environment, directory: directory)
        guard let status = await child.waitForExit(timeout: .seconds(60)) else { return (-1, child.text) }
        return (status, child.text)
    }
}
