import Foundation

/// Runs a program to completion with `posix_spawn` and `waitpid`, its standard output and error going to a file.
/// (Foundation's `Process.waitUntilExit()` can miss a child's exit when called from a concurrency thread on Linux.)
public enum ChildProcess {
    public struct Result: Sendable {
        public let status: Int32
        public let output: String
    }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    /// Runs `executable` with `arguments` (and `environment` added to this process's) and waits for it.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws(Failure) -> Result {
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-\(UUID().uuidString).out").path
        defer { unlink(outputPath) }
        let descriptor = open(outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw Failure(description: "cannot create \(outputPath)") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, descriptor, 1)
        posix_spawn_file_actions_adddup2(&actions, descriptor, 2)
        posix_spawn_file_actions_addclose(&actions, descriptor)

        var merged = ProcessInfo.processInfo.environment
        merged.merge(environment) { _, new in new }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        close(descriptor)
        guard spawned == 0 else { throw Failure(description: "cannot run \(executable): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { throw Failure(description: "waiting for \(executable) failed") }
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // WIFEXITED / WEXITSTATUS, spelled out (they are C macros).
        let exitStatus: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Result(status: exitStatus, output: output)
    }
}
