import Logging
import ServiceLifecycle

/// Checks at start that the database accepts a URL's login, and says so in one line when it refuses it for a reason
/// no retry changes: a password or role refused, a database that does not exist, an authentication or TLS setting the
/// two sides do not share. A refusal must last ``Timing/refusalWindow`` (10 s), every login in it refused, before it
/// counts: a pooler or a database being restored can refuse for a moment what it accepts after. A server not reached
/// yet (down, starting up) is waited for, and said so. Once a login is accepted the check is done and lives until the
/// group shuts down (a service returning early would end the process).
///
/// `DATABASE_URL`'s refusal ends a starting `serve` or `work`: the pool retries such a login for good and readiness
/// says only "database unreachable", so the process would run, not ready and not saying why, until an operator read
/// `/readyz` (helper-143). `STOREKEEPER_REPLICA_URL`'s is reported instead (``OnRefusal/report(meanwhile:)``): `serve` answers
/// from the primary without the replica, and a process that ended for it would end after `/readyz` had said ready — a
/// rollout with a wrong replica URL would replace every `serve` with one that exits — or, the replica coming back
/// from an outage before it has replayed a password change, every running `serve` at once (helper-151).
public struct DatabaseLoginCheck: Service {
    /// What a refusal for good does.
    public enum OnRefusal: Sendable {
        /// Ends the process with the reason (exit 1).
        case end
        /// Logs the reason as an error, followed by `meanwhile` (what the process does without the database), and asks
        /// again every ``Timing/reportedRetryInterval`` (a minute) until the login is accepted; a refusal for another
        /// reason is reported in its turn.
        case report(meanwhile: String)

        var ends: Bool { if case .end = self { true } else { false } }
    }

    /// How long the check waits, and between which tries.
    struct Timing: Sendable {
        /// How long every login must be refused before the refusal counts.
        var refusalWindow = Duration.seconds(10)
        var retryInterval = Duration.seconds(2)
        /// After a refusal was reported: each try is a failed login in the server's own log.
        var reportedRetryInterval = Duration.seconds(60)
    }

    let url: DatabaseURL
    /// The setting the URL came from, as the log names it.
    let variable: String
    let onRefusal: OnRefusal
    let timing: Timing
    let logger: Logger

    public init(url: DatabaseURL, variable: String = "DATABASE_URL", onRefusal: OnRefusal = .end, logger: Logger) {
        self.init(url: url, variable: variable, onRefusal: onRefusal, timing: Timing(), logger: logger)
    }

    init(url: DatabaseURL, variable: String, onRefusal: OnRefusal, timing: Timing, logger: Logger) {
        self.url = url
        self.variable = variable
        self.onRefusal = onRefusal
        self.timing = timing
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
        // The reason reported, so that another (the database created, the role not yet) is reported in its turn.
        var reportedReason: String?
        var unreachedSaid: ContinuousClock.Instant?
        while !Task.isCancelled {
            let outcome = await url.login(logger: logger)
            // A login cut short by the shutdown is neither refused nor unreached.
            if Task.isCancelled { return }
            let now = ContinuousClock.now
            switch outcome {
            case .accepted:
                if reportedReason != nil { logger.notice("the database accepts the login of \(variable) now", metadata: ["url": "\(url)"]) }
                return
            case .refused(let reason):
                let since = refusedSince ?? now
                refusedSince = since
                if now - since >= timing.refusalWindow, reportedReason != reason {
                    let message = "the database refused the login of \(variable) (\(url)): \(reason)"
                    switch onRefusal {
                    case .end:
                        logger.critical("\(message)")
                        throw CommandFailure(message)
                    case .report(let meanwhile):
                        logger.error("\(message); \(meanwhile)")
                        reportedReason = reason
                    }
                }
                if !refusalSaid {
                    logger.warning(
                        "the database refuses the login of \(variable); asking again\(onRefusal.ends ? " before giving up" : "")",
                        metadata: ["reason": "\(reason)"])
                    refusalSaid = true
                }
            case .unreached(let reason):
                (refusedSince, refusalSaid, reportedReason) = (nil, false, nil)
                // Said at once and then every half minute: a process not ready says why in its own log. A replica not
                // reached leaves `serve` ready, and its position tracker says so: once is enough.
                if unreachedSaid.map({ onRefusal.ends && now - $0 >= .seconds(30) }) ?? true {
                    logger.warning(
                        onRefusal.ends ? "the database is not reached yet; waiting for it" : "the database of \(variable) is not reached yet",
                        metadata: ["variable": "\(variable)", "url": "\(url)", "reason": "\(reason)"])
                    unreachedSaid = now
                }
            }
            try? await Task.sleep(for: reportedReason != nil ? timing.reportedRetryInterval : timing.retryInterval)
        }
    }
}
