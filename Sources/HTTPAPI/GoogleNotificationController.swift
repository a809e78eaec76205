import Application
import Foundation
import GooglePlay
import Hummingbird
import Metrics
import NIOCore
import SignedData

/// Something that durably stores a verified Google Play notification and enqueues its processing (the seam tests
/// can replace).
public protocol GoogleNotificationAccepting: Sendable {
    func accept(_ push: PubSubPush, notification: DeveloperNotification) async throws -> GoogleInbox.Outcome
}

extension GoogleInbox: GoogleNotificationAccepting {}

/// `POST /notifications/google`: Cloud Pub/Sub's authenticated push of a Play notification. The push's OIDC token is
/// verified before the body is read (401, nothing stored, otherwise); then the body must be a wrapped push whose
/// `data` is a DeveloperNotification (400), and it is stored and enqueued in one committed transaction before the
/// 200. Pub/Sub sends again on anything but a success, so only what is worth a retry — the database or Google's keys
/// out of reach — answers 503.
struct GoogleNotificationController: Sendable {
    let verifier: GooglePushVerifier
    let inbox: any GoogleNotificationAccepting
    let clock: @Sendable () -> Date

    struct Answer: ResponseEncodable {
        var status: String
        var messageId: String
    }

    func addRoutes(to router: Router<StorekeeperRequestContext>) {
        router.post("/notifications/google") { request, context -> Answer in
            do {
                let answer = try await receive(request, context: context)
                Self.count(answer.status)
                return answer
            } catch let error as APIError {
                Self.count(error.code)
                throw error
            }
        }
    }

    /// `storekeeper_google_intake_notifications_total{status}`: accepted, duplicate, ignored, or the error code answered.
    static func count(_ status: String) {
        Counter(label: "storekeeper_google_intake_notifications_total", dimensions: [("status", status)]).increment()
    }

    func receive(_ request: Request, context: StorekeeperRequestContext) async throws -> Answer {
        do {
            _ = try await verifier.verify(authorization: request.headers[.authorization], now: clock())
        } catch {
            var refusal = error.category == .retryable
                ? APIError(.serviceUnavailable, code: "verification_unavailable", message: error.reason)
                : APIError(.unauthorized, code: "verification_failed", message: error.reason)
            if error.category != .retryable { refusal.headers[.wwwAuthenticate] = #"Bearer error="invalid_token""# }
            throw refusal
        }
        let body = try await request.collectBody(upTo: StorekeeperRequestContext.maximumBody)
        let push: PubSubPush
        let notification: DeveloperNotification
        do {
            push = try PubSubPush(body: Array(body.readableBytesView))
            notification = try DeveloperNotification(data: push.data)
        } catch {
            throw APIError.badRequest(error.description)
        }
        var logger = context.logger
        logger[metadataKey: "google.message"] = "\(push.messageId)"
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
