import Foundation

/// Whether Linux's autogroup scheduling was on for a run (`kernel.sched_autogroup_enabled`), which a benchmark of
/// `serve`, `work` and PostgreSQL on shared cores prints beside its figures: the kernel then shares the CPU equally
/// between sessions, and PostgreSQL starts every backend in a session of its own, so each busy backend weighs as much
/// as `serve`, `work` and the load generator together (started from one shell, they are one session), and
/// `STOREKEEPER_WORKER_NICE` orders `work` only against `serve`. The steady intake's p99 moved with it alone
/// (docs/capacity.md, "Sessions, not services").
enum Autogroups {
    /// On, off, or nil where the kernel has no such setting.
    static var enabled: Bool? {
        guard let text = try? String(contentsOfFile: "/proc/sys/kernel/sched_autogroup_enabled", encoding: .utf8) else { return nil }
        return text.trimmingCharacters(in: .whitespacesAndNewlines) != "0"
    }

    /// The report's line.
    static var line: String {
        switch enabled {
        case true?:
            return "  scheduler: autogroups on (kernel.sched_autogroup_enabled = 1): each PostgreSQL backend is a session weighing as "
                + "much as serve, work and this benchmark together (docs/operations.md, \"serve, work and PostgreSQL on one host\")"
        case false?: return "  scheduler: autogroups off (kernel.sched_autogroup_enabled = 0)"
        case nil: return "  scheduler: no autogroup setting on this machine"
        }
    }

    /// The report's JSON field: "on", "off" or null.
    static var field: (String, BenchmarkReport.BenchmarkValue) {
        ("autogroups", enabled.map { .text($0 ? "on" : "off") } ?? .null)
    }
}
