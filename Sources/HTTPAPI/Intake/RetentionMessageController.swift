import AppStoreModels
import Application
import Entitlements
import Foundation
import Hummingbird
import Logging
import Metrics
import Persistence
import SignedData
import StatementFencing
import Synchronization

/// `POST /apple/retention-message`: Apple's Get Retention Message endpoint (docs/retention.md). Apple is the caller and
/// its signature the authentication: the request is verified as a notification is, and refused when older than
/// ``maximumAge`` or when its `requestIdentifier` was answered before (Apple's verifiers check neither). The answer
/// is chosen within the policy's deadline; anything that fails or runs late answers the configured default at once —
/// Apple stops waiting at 700 ms and shows its own default then.
struct RetentionMessageController: Sendable {
    let verifier: SignedDataVerifier
    let retention: RetentionMessaging
    let clock: @Sendable () -> Date
    /// How old a request's `signedDate` may be: Apple signs each request as it sends it.
    static let maximumAge: TimeInterval = 5 * 60
    /// How far ahead of our clock a `signedDate` may be: clocks differ.
    static let maximumSkew: TimeInterval = 60
    /// At most this many requests use the database at once — decisions and late fallbacks' records together; past
    /// it, the default is answered without asking it. A slow database must not let retention traffic take the pool
    /// the intake and the service API share (each waits at most the deadline, but many at once would hold it all).
    static let concurrencyLimit = 8
    /// How long after the request came an answer already committing is still waited for: Apple waits 700 ms in all.
    /// `deadline_ms` is at most 400, so that a commit has at least 250 ms.
    static let answerBudget: Duration = .milliseconds(650)
    private let inFlight = InFlight()

    final class InFlight: Sendable {
        let count = Atomic<Int>(0)

        /// Takes a place; `false` when all are taken.
        func enter() -> Bool {
            guard count.add(1, ordering: .relaxed).newValue <= RetentionMessageController.concurrencyLimit else {
                count.subtract(1, ordering: .relaxed)
                return false
            }
            return true
        }

        func leave() { count.subtract(1, ordering: .relaxed) }
    }

    /// Who answered: the transaction, just before it commits, or the deadline, with the default. The first wins.
    final class AnswerClaim: RetentionMessaging.Claim {
        private let state = Atomic<Int>(0)  // 0 open, 1 committing, 2 given up

        func claimForCommit() -> Bool { state.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged }
        func giveUp() -> Bool { state.compareExchange(expected: 0, desired: 2, ordering: .acquiringAndReleasing).exchanged }
        var isGivenUp: Bool { state.load(ordering: .acquiring) == 2 }
    }

    init(verifier: SignedDataVerifier, retention: RetentionMessaging, clock: @escaping @Sendable () -> Date) {
        self.verifier = verifier
        self.retention = retention
        self.clock = clock
    }

    func addRoutes(to router: Router<StorekeeperRequestContext>) {
        router.post("/apple/retention-message") { request, context in
            try await self.receive(request, context: context)
        }
    }

    struct RequestBody: Decodable {
        var signedPayload: String
    }

    /// `storekeeper_retention_answers_total{outcome}`: the rule's kind of answer, `fallback`, `none`, or the error code.
    static func count(_ outcome: String) {
        Counter(label: "storekeeper_retention_answers_total", dimensions: [("outcome", outcome)]).increment()
    }

    func receive(_ request: Request, context: StorekeeperRequestContext) async throws -> Response {
        do {
            let (response, outcome) = try await process(request, context: context)
            Self.count(outcome)
            return response
        } catch let error as APIError {
            Self.count(error.code.description)
            throw error
        }
    }

    func process(_ request: Request, context: StorekeeperRequestContext) async throws -> (Response, String) {
        let started = ContinuousClock.now
        let body = try await request.decodeJSONBody(
            as: RequestBody.self, upTo: 64 * 1024, otherwise: "body must be a JSON object with a signedPayload string")
        let payload: RetentionRequestPayload
        do {
            payload = try await verifier.verifyRetentionRequest(body.signedPayload)
        } catch {
            context.logger.notice("retention request rejected", metadata: ["verification.category": "\(error.category.rawValue)"])
            throw NotificationIntakeController.apiError(for: error)
        }
        let now = clock()
        let signed = Date(timeIntervalSince1970: Double(payload.signedDate) / 1000)
        guard now.timeIntervalSince(signed) <= Self.maximumAge, signed.timeIntervalSince(now) <= Self.maximumSkew else {
            throw APIError(
                .unauthorized, code: .staleRequest,
                message:
                    "signedDate is more than \(Int(Self.maximumAge / 60)) minutes old or more than \(Int(Self.maximumSkew)) s ahead: a retention request is answered as it is sent"
            )
        }
        guard let identifier = UUID(text: payload.requestIdentifier) else {
            throw APIError.badRequest("requestIdentifier is not a UUID")
        }
        var logger = context.logger
        logger[metadataKey: "retention.request"] = "\(identifier.lowercasedText)"
        let retention = self.retention
        guard inFlight.enter() else {
            logger.warning("retention answer fell back", metadata: ["reason": "busy"])
            return try fallback(reason: "busy")
        }
        let claim = AnswerClaim()
        let inFlight = self.inFlight
        // Not a child of this request: when the default is answered, the decision still ends (it rolls back at its
        // claim, or at the server's lock and statement timeouts) and gives its place back.
        let work = Task {
            defer { inFlight.leave() }
            return try await retention.answer(payload, identifier: identifier, now: now, claim: claim)
        }
        let decided: RetentionMessaging.Answer
        do {
            decided = try await Self.awaitAnswer(work, claim: claim, deadline: retention.deadline, started: started, logger: logger)
        } catch is RetentionMessaging.Replayed {
            logger.notice("retention request replayed")
            throw APIError(.unauthorized, code: .replayedRequest, message: "requestIdentifier was answered before")
        } catch {
            let reason = error is DeadlineExceeded || error is RetentionMessaging.Late ? "late" : "failed"
            logger.warning("retention answer fell back", metadata: ["reason": "\(reason)", "error": "\(String(reflecting: error))"])
            recordLater(payload, identifier: identifier, reason: reason, now: now, logger: logger)
            return try fallback(reason: reason)
        }
        logger.info("retention answered", metadata: ["retention.rule": "\(decided.rule)"])
        guard let answer = decided.answer else {
            throw APIError(
                .notFound, code: .noRetentionMessage,
                message: "no rule answers this customer and there is no default; Apple shows its default message")
        }
        return (try Self.response(answer), answer.kind)
    }

    /// The decision's answer within `deadline`; past it (or when this request is cancelled), the default is given
    /// unless the decision is already committing, which is then waited for until ``answerBudget`` from `started`.
    static func awaitAnswer(
        _ work: Task<RetentionMessaging.Answer, any Error>, claim: AnswerClaim, deadline: Duration, started: ContinuousClock.Instant,
        logger: Logger
    ) async throws -> RetentionMessaging.Answer {
        do {
            return try await withDeadline(deadline) { try await work.value }
        } catch {
            if claim.giveUp() {
                work.cancel()
                throw error
            }
            guard error is DeadlineExceeded else { throw error }
            let left = answerBudget - (ContinuousClock.now - started)
            do {
                return try await withDeadline(max(left, .milliseconds(1))) { try await work.value }
            } catch let late as DeadlineExceeded {
                // Committing past Apple's patience: it may yet commit an answer Apple never got. Said, and counted.
                Task {
                    if (try? await work.value) != nil {
                        logger.error("a retention answer committed after Apple was answered the default")
                        Counter(label: "storekeeper_retention_late_commits_total").increment()
                    }
                }
                throw late
            }
        }
    }

    /// The configured default, or 503 so that Apple shows its own.
    func fallback(reason: String) throws -> (Response, String) {
        guard let fallback = retention.fallback else {
            throw APIError.unavailable("no retention answer in time; Apple shows its default message")
        }
        return (try Self.response(fallback), "fallback")
    }

    /// Records a fallback after the answer, in one of the places decisions take; none free, it goes unrecorded (logged).
    func recordLater(_ payload: RetentionRequestPayload, identifier: UUID, reason: String, now: Date, logger: Logger) {
        guard inFlight.enter() else {
            logger.warning("retention fallback not recorded: the database is busy with others")
            return
        }
        let retention = self.retention
        let inFlight = self.inFlight
        // Its place is held until the record ends: its own timeouts (1 s) bound its statements.
        Task {
            defer { inFlight.leave() }
            await retention.recordFallback(payload, identifier: identifier, reason: reason, now: now)
        }
    }

    static func response(_ answer: RetentionAnswer) throws -> Response {
        let body = try JSONEncoder().encode(answer)
        return Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
