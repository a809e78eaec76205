import Foundation

/// Whether Linux's autogroup scheduling acted on a run, which a benchmark of `serve`, `work` and PostgreSQL on shared
/// cores prints beside its figures. With `kernel.sched_autogroup_enabled = 1` the kernel shares the CPU equally between
/// sessions before their threads, for processes whose CPU control group is the root one; PostgreSQL starts every
/// backend in a session of its own, and the benchmark's `serve` and `work` share its session. The steady intake's p99
/// was 19.5–32.2 ms that way and 7.8–20.6 ms with the setting off (docs/capacity.md, "Sessions, not services").
enum Autogroups {
    enum State {
        case on, off
        /// The setting is on, but this process's CPU control group is not the root one, where it does not act.
        case inactive(group: String)
        /// The kernel has no such setting.
        case unknown
    }

    /// Read once: a run does not change it.
    static let state = read()

    private static func read() -> State {
        guard let setting = try? String(contentsOfFile: "/proc/sys/kernel/sched_autogroup_enabled", encoding: .utf8) else {
            return .unknown
        }
        guard setting.trimmingCharacters(in: .whitespacesAndNewlines) != "0" else { return .off }
        let group = cpuGroup()
        return group == "/" ? .on : .inactive(group: group)
    }

    /// This process's CPU control group: the `cpu` hierarchy's path (cgroup v1), else the unified path when the root
    /// hands the `cpu` controller down (cgroup v2), else the root. Inside a container's cgroup namespace its own group
    /// reads as the root: there "on" may not be acting either.
    private static func cpuGroup() -> String {
        let lines = ((try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)) ?? "").split(separator: "\n")
        for line in lines {
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            if parts[1].split(separator: ",").contains("cpu") { return String(parts[2]) }
        }
        let controlled = (try? String(contentsOfFile: "/sys/fs/cgroup/cgroup.subtree_control", encoding: .utf8))?.split(separator: " ")
            .contains { $0.trimmingCharacters(in: .whitespacesAndNewlines) == "cpu" }
        guard controlled == true, let unified = lines.first(where: { $0.hasPrefix("0::") }) else { return "/" }
        return String(unified.dropFirst(3))
    }

    /// The report's line.
    static var line: String {
        switch state {
        case .on:
            return "  scheduler: autogroups on (kernel.sched_autogroup_enabled = 1; docs/operations.md, \"serve, work and PostgreSQL on one host\")"
        case .off: return "  scheduler: autogroups off (kernel.sched_autogroup_enabled = 0)"
        case .inactive(let group): return "  scheduler: autogroups on but not acting here (this process's CPU control group is \(group))"
        case .unknown: return "  scheduler: no autogroup setting on this machine"
        }
    }

    /// The report's JSON field: "on", "off", "inactive" or null.
    static var field: (String, BenchmarkReport.BenchmarkValue) {
        let name: String? =
            switch state {
            case .on: "on"
            case .off: "off"
            case .inactive: "inactive"
            case .unknown: nil
            }
        return ("autogroups", name.map { .text($0) } ?? .null)
    }
}
