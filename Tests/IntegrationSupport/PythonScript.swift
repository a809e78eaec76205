import Foundation

/// Runs a Python script of an outside judge (an official library from PyPI) and waits for it without blocking a
/// thread: `waitUntilExit()` would hold one of the few cooperative threads, and a fake server in this process that the
/// script calls then cannot answer it.
enum PythonScript {
    static func run(_ python: String, _ script: String, arguments: [String]) async throws -> (status: Int32, lines: [String]) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (status, text.split(separator: "\n").map(String.init))
    }
}
