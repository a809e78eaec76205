import HTTPAPI
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The process's open-file limit, raised to its hard limit at start: the soft limit is often 1,024, below the
/// connections a server should hold. When even the hard limit is too low for the configured connections (plus
/// descriptors for the database pool, logs and libraries), fewer connections are accepted and a warning says why.
public enum FileDescriptorLimit {
    /// Descriptors kept for everything but HTTP connections.
    static let reserve = 256

    /// Raises the soft limit to the hard one; returns the soft limit in force (`nil` when it cannot be read).
    @discardableResult
    public static func raiseToHardLimit() -> Int? {
        var limit = rlimit()
        guard getrlimit(resourceKind, &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resourceKind, &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// Raises the soft limit and returns `limits` with at most as many connections as it allows.
    static func raise(fitting limits: HTTPServerLimits, logger: Logger) -> HTTPServerLimits {
        guard let openFiles = raiseToHardLimit() else { return limits }
        let available = openFiles - reserve
        guard limits.maximumConnections > available else { return limits }
        var fitted = limits
        fitted.maximumConnections = max(16, available)
        logger.warning(
            "fewer HTTP connections than configured: the open-file limit is too low",
            metadata: [
                "configured": "\(limits.maximumConnections)", "accepted": "\(fitted.maximumConnections)",
                "open_file_limit": "\(openFiles)",
            ])
        return fitted
    }

    #if canImport(Glibc)
        private static let resourceKind = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
        private static let resourceKind = RLIMIT_NOFILE
    #endif
}
