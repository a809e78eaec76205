import Application
import Foundation
import GooglePlay
import Hummingbird
import Logging
import Metrics
import NIOCore
import SignedData
import Synchronization

/// `POST /notifications/google`: Cloud Pub/Sub's authenticated push of a Play notification. The push's OIDC token is
/// verified before the body is read (401, nothing stored, otherwise); then the body must be a wrapped push (400); a
/// notification of another package is acknowledged unread; ours must be a DeveloperNotification (400) and is stored
/// and enqueued in one committed transaction before the 200. Pub/Sub sends again on anything but a success, so only
/// what is worth a retry — the database or Google's keys out of reach — answers 503.
struct GoogleNotificationController: Sendable {
    let verifier: GooglePushVerifier
    let inbox: GoogleInbox
    let clock: @Sendable () -> Date
    /// Refusals are logged (a wrong audience or service account shows nowhere else), at most one line a second.
    let refusals = RefusalLog()

    struct Answer: ResponseEncodable {
        var status: String
        var messageId: String
    }

    func addRoutes(to router: Router<StorekeeperRequestContext>) {
        router.post("/notifications/google") { request, context -> Answer in
            try await Self.counter.counting(
                \.status,
                refused: { error in
                    // A database outage is logged where it is met; a refusal shows nowhere else.
                    guard error.status != .serviceUnavailable else { return }
                    refusals.log(
                        context.logger, "Google Play push refused",
                        ["http.status": "\(error.status.code)", "error": "\(error.code)", "reason": "\(error.message)"])
                }
            ) { try await receive(request, context: context) }
        }
    }

    /// `storekeeper_google_intake_notifications_total{status}`: accepted, duplicate, ignored, or the error code answered.
    static let counter = IntakeCounter(label: "storekeeper_google_intake_notifications_total")

    func receive(_ request: Request, context: StorekeeperRequestContext) async throws -> Answer {
        do {
            _ = try await verifier.verify(authorization: request.headers[.authorization], now: clock())
        } catch {
            guard error.category != .retryable else {
                // The cause (the certificates URL, the transport's error) is for the log, not for the caller.
                refusals.log(context.logger, "Google's signing keys could not be read", ["reason": "\(await verifier.lastFailure ?? error.reason)"])
                throw APIError(.serviceUnavailable, code: .verificationUnavailable, message: "Google's signing keys could not be read; retry later")
            }
            var refusal = APIError(.unauthorized, code: .verificationFailed, message: error.reason)
            refusal.headers[.wwwAuthenticate] = #"Bearer error="invalid_token""#
            throw refusal
        }
        let body = try await request.collectBody(upTo: StorekeeperRequestContext.maximumBody)
        let push: PubSubPush
        do {
            push = try PubSubPush(body: Array(body.readableBytesView))
        } catch {
            throw APIError.badRequest(error.description)
        }
        var logger = context.logger
        logger[metadataKey: "google.message"] = "\(push.messageId)"
        if let package = DeveloperNotification.packageName(in: push.data), package != inbox.packageName {
            logger.notice("Google Play notification of another package ignored", metadata: ["google.package": "\(package.prefix(255))"])
            return Answer(status: GoogleInbox.Outcome.ignored.rawValue, messageId: push.messageId)
        }
        let notification: DeveloperNotification
        do {
            notification = try DeveloperNotification(data: push.data)
        } catch {
            throw APIError.badRequest(error.description)
        }
        let outcome: GoogleInbox.Outcome
        do {
            outcome = try await withDatabase { try await inbox.accept(push, notification: notification) }
        } catch let error as APIError {
            logger.error("Google Play notification could not be stored")
            throw error
        }
        logger.info("Google Play notification \(outcome.rawValue)", metadata: ["google.kind": "\(notification.kind)"])
        return Answer(status: outcome.rawValue, messageId: push.messageId)
    }
}

/// Logs a line at most once a second, saying how many were left out since: refusals are worth seeing, but a
/// stranger's flood of them must not become a flood of log lines.
final class RefusalLog: Sendable {
    private let state = Mutex<(last: ContinuousClock.Instant?, suppressed: Int)>((nil, 0))

    func log(_ logger: Logger, _ message: Logger.Message, _ metadata: Logger.Metadata) {
        let now = ContinuousClock.now
        let suppressed: Int? = state.withLock { state in
            if let last = state.last, now - last < .seconds(1) {
                state.suppressed += 1
                return nil
            }
            defer { state = (now, 0) }
            return state.suppressed
        }
        guard let suppressed else { return }
        var metadata = metadata
        if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
        logger.warning(message, metadata: metadata)
    }
}
