import Foundation

/// The CPU priority of this process. `work` runs at a lower priority than `serve` (`STOREKEEPER_WORKER_NICE`): when
/// they share cores, Apple's requests are answered first and applying — which only has to keep up on average — takes
/// what is left.
public enum ProcessPriority {
    /// Sets the nice value of every thread of this process (on Linux a nice value belongs to a thread; threads
    /// started later inherit it from the thread that starts them). Returns the threads that could not be changed.
    @discardableResult
    public static func lower(toNice nice: Int32) -> [pid_t] {
        guard nice > 0 else { return [] }
        let threads =
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task"))?.compactMap { pid_t($0) }
            ?? [getpid()]
        return threads.filter { setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t($0), nice) != 0 }
    }

    /// Keeps every thread at `nice` until cancelled, re-applying it each `interval`: libdispatch starts pool threads
    /// later that do not always inherit it.
    public static func hold(nice: Int32, interval: Duration = .seconds(1)) async {
        guard nice > 0 else { return }
        while !Task.isCancelled {
            lower(toNice: nice)
            try? await Task.sleep(for: interval)
        }
    }

    /// The nice value of the calling thread.
    public static var currentNice: Int32 {
        errno = 0
        return getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
    }
}
