import Foundation
import HTTPTypes
import Synchronization

/// How much one operator key may ask Apple through the admin reads that do (refund history, order lookup, a mass
/// extension's status): at most ``concurrent`` questions at once and ``perMinute`` a minute (a bucket that refills
/// continuously). Without it a viewer key could hold routes open for Apple's ~20 s each and spend the app's Server API
/// rate limit, which the workers' late-renewal rechecks and the refund answers need. One instance serves every route
/// of a process; a refusal is 429 `rate_limited` with `Retry-After`.
public final class AppleQuestionLimits: Sendable {
    static let concurrent = 2
    static let perMinute = 20

    private struct Allowance {
        var inFlight = 0
        var tokens = Double(AppleQuestionLimits.perMinute)
        var refilledAt: ContinuousClock.Instant
    }

    private let allowances = Mutex<[String: Allowance]>([:])
    private let now: @Sendable () -> ContinuousClock.Instant

    public init(now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.now = now
    }

    /// Runs `question` for `operatorName` when its allowance admits it, else throws 429.
    func asking<Value: Sendable>(_ operatorName: String, _ question: () async throws -> Value) async throws -> Value {
        try admit(operatorName)
        defer { allowances.withLock { $0[operatorName]?.inFlight -= 1 } }
        return try await question()
    }

    private func admit(_ operatorName: String) throws {
        let instant = now()
        let refusal: (message: String, retryAfter: Int)? = allowances.withLock { allowances in
            var allowance = allowances[operatorName] ?? Allowance(refilledAt: instant)
            let elapsed = allowance.refilledAt.duration(to: instant)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            allowance.tokens = min(Double(Self.perMinute), allowance.tokens + seconds * Double(Self.perMinute) / 60)
            allowance.refilledAt = instant
            defer { allowances[operatorName] = allowance }
            guard allowance.inFlight < Self.concurrent else {
                return ("\(Self.concurrent) questions to Apple from this key are still waiting for its answer", 1)
            }
            guard allowance.tokens >= 1 else {
                let wait = Int(((1 - allowance.tokens) * 60 / Double(Self.perMinute)).rounded(.up))
                return ("this key asked Apple \(Self.perMinute) times in the last minute", max(wait, 1))
            }
            allowance.tokens -= 1
            allowance.inFlight += 1
            return nil
        }
        guard let refusal else { return }
        var error = APIError(.tooManyRequests, code: .rateLimited, message: "\(refusal.message); retry in \(refusal.retryAfter) s")
        error.headers[.retryAfter] = String(refusal.retryAfter)
        throw error
    }
}
