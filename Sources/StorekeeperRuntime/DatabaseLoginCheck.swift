import Logging
import ServiceLifecycle

/// Ends a starting `serve` or `work` with one line when the database refuses `DATABASE_URL`'s login for a reason no
/// retry changes: a password or role refused, a database that does not exist, TLS the server does not offer. The pool
/// retries such a login for good and readiness says only "database unreachable": the process would run, not ready and
/// not saying why, until an operator read `/readyz` (helper-143). A server that is not reached yet (down, starting up)
/// is waited for as before: the check asks again until the server answers, then lives until the group shuts down
/// (a service returning early would end the process).
public struct DatabaseLoginCheck: Service {
    let url: DatabaseURL
    let logger: Logger

    public init(url: DatabaseURL, logger: Logger) {
        self.url = url
        self.logger = logger
    }

    public func run() async throws {
        try await cancelWhenGracefulShutdown { try await check() }
        try? await gracefulShutdown()
    }

    private func check() async throws {
        var attempt = 0
        while !Task.isCancelled {
            switch await url.login(logger: logger) {
            case .accepted:
                return
            case .refused(let reason):
                let message = "the database refused the login of DATABASE_URL (\(url)): \(reason)"
                logger.critical("\(message)")
                throw CommandFailure(message)
            case .unreached:
                attempt += 1
                try? await Task.sleep(for: .seconds(min(attempt, 5)))
            }
        }
    }
}
