import Foundation

/// Runs programs with `posix_spawn` and `waitpid`, standard output and error going to a file.
/// (Foundation's `Process.waitUntilExit()` can miss a child's exit when called from a concurrency thread on Linux.)
public enum ChildProcess {
    public struct Result: Sendable {
        public let status: Int32
        public let output: String
    }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    /// What `/proc/<pid>/stat` says of any process of this machine: its parent, the CPU seconds (user and system) it has
    /// used, and those of its children that ended and were waited for; `nil` once it is gone.
    public static func cpuTimes(of pid: pid_t) -> (parent: pid_t, seconds: Double, endedChildren: Double)? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else {
            return nil
        }
        // After the command name (which may hold spaces and parentheses): state, ppid, …; utime, stime, cutime and cstime
        // are the 12th to 15th from there, in clock ticks.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 14, let parent = pid_t(fields[1]) else { return nil }
        let ticks = fields[11...14].compactMap { Double($0) }
        guard ticks.count == 4 else { return nil }
        let perSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (parent, (ticks[0] + ticks[1]) / perSecond, (ticks[2] + ticks[3]) / perSecond)
    }

    /// A started program.
    public final class Running: Sendable {
        public let pid: pid_t
        public let arguments: [String]
        let outputPath: String
        let executable: String

        init(pid: pid_t, arguments: [String], outputPath: String, executable: String) {
            self.pid = pid
            self.arguments = arguments
            self.outputPath = outputPath
            self.executable = executable
        }

        public func signal(_ signal: Int32) { kill(pid, signal) }

        /// What the process has written to its standard output and error so far.
        public var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

        /// CPU time it has used, user and system, while it runs.
        public var cpuSeconds: Double? { ChildProcess.cpuTimes(of: pid)?.seconds }

        /// Its resident set now (`VmRSS`), while it runs.
        public var residentBytes: Int? { statusField("VmRSS:") }

        /// Its resident-set high-water mark (`VmHWM`), while it runs.
        public var peakResidentBytes: Int? { statusField("VmHWM:") }

        /// A kilobyte field of `/proc/<pid>/status`, in bytes.
        private func statusField(_ name: String) -> Int? {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name) }),
                let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
            else { return nil }
            return kilobytes * 1024
        }

        /// Whether it has exited (it is a zombie waiting for ``wait()``, or gone).
        public var hasExited: Bool {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let state = stat.split(separator: ")").last?.split(separator: " ").first
            else { return true }
            return state == "Z" || state == "X"
        }

        /// Waits for it to exit (blocking) and returns its status and output; the output file is removed.
        public func wait() throws(Failure) -> Result {
            defer { unlink(outputPath) }
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

    /// Starts `executable` with `arguments` (and `environment` added to this process's).
    public static func spawn(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws(Failure) -> Running {
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-\(UUID().uuidString).out").path
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
            for pointer in argv + envp { free(pointer) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        close(descriptor)
        guard spawned == 0 else {
            unlink(outputPath)
            throw Failure(description: "cannot run \(executable): \(String(cString: strerror(spawned)))")
        }
        return Running(pid: pid, arguments: arguments, outputPath: outputPath, executable: executable)
    }

    /// Runs `executable` to completion.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws(Failure) -> Result {
        try spawn(executable, arguments, environment: environment).wait()
    }
}
