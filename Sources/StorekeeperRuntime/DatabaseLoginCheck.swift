import Logging
import ServiceLifecycle

/// Ends a starting `serve` or `work` with one line when the database refuses `DATABASE_URL`'s login (or `serve`'s
/// replica `STOREKEEPER_REPLICA_URL`'s, whose refusal otherwise left every status read on the primary with one line
/// of the position tracker's) for a reason no retry changes: a password or role refused, a database that does not exist, an authentication or TLS setting the two
/// sides do not share. The pool retries such a login for good and readiness says only "database unreachable": the
/// process would run, not ready and not saying why, until an operator read `/readyz` (helper-143). A refusal must last
/// ``refusalWindow``, every login in it refused, before the process ends: a pooler or a database being restored can
/// refuse for a moment what it accepts after. A server not reached yet (down, starting up) is waited for, and said so.
/// Once a login is accepted the check is done and lives until the group shuts down (a service returning early would
/// end the process).
public struct DatabaseLoginCheck: Service {
    /// How long every login must be refused before the process ends.
    static let refusalWindow = Duration.seconds(10)
    static let retryInterval = Duration.seconds(2)
    let url: DatabaseURL
    /// The setting the URL came from, as the log names it.
    let variable: String
    let logger: Logger

    public init(url: DatabaseURL, variable: String = "DATABASE_URL", logger: Logger) {
        self.url = url
        self.variable = variable
        self.logger = logger
    }

    public func run() async throws {
        try await cancelWhenGracefulShutdown { try await check() }
        try? await gracefulShutdown()
    }

    private func check() async throws {
        var refusedSince: ContinuousClock.Instant?
        // Each said on its own: a refusal after an unreached spell (a database restarting with a changed password) is
        // said at once, as is an unreached database after a refusal.
        var refusalSaid = false
        var unreachedSaid: ContinuousClock.Instant?
        while !Task.isCancelled {
            let outcome = await url.login(logger: logger)
            let now = ContinuousClock.now
            switch outcome {
            case .accepted:
                return
            case .refused(let reason):
                let since = refusedSince ?? now
                refusedSince = since
                if now - since >= Self.refusalWindow {
                    let message = "the database refused the login of \(variable) (\(url)): \(reason)"
                    logger.critical("\(message)")
                    throw CommandFailure(message)
                }
                if !refusalSaid {
                    logger.warning("the database refuses the login of \(variable); asking again before giving up", metadata: ["reason": "\(reason)"])
                    refusalSaid = true
                }
            case .unreached(let reason):
                (refusedSince, refusalSaid) = (nil, false)
                // Said at once and then every half minute: a process not ready says why in its own log.
                if unreachedSaid.map({ now - $0 >= .seconds(30) }) ?? true {
                    logger.warning(
                        "the database is not reached yet; waiting for it",
                        metadata: ["variable": "\(variable)", "url": "\(url)", "reason": "\(reason)"])
                    unreachedSaid = now
                }
            }
            try? await Task.sleep(for: Self.retryInterval)
        }
    }
}
