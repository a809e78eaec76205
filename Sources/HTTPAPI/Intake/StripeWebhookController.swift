import Application
import Foundation
import Hummingbird
import Metrics
import NIOCore
import PayloadDecoding
import StripeStore

/// `POST /stripe/webhooks`: verify `Stripe-Signature` against the raw body (every configured secret, in constant
/// time, within the tolerance), then store and enqueue in one committed transaction before answering 200, as the
/// Apple intake does. Stripe retries on anything but 2xx, so only a database failure answers 503.
struct StripeWebhookController: Sendable {
    let signature: StripeSignature
    let inbox: StripeInbox
    let clock: @Sendable () -> Date

    struct Answer: ResponseEncodable {
        var status: String
        var eventId: String
    }

    func addRoutes(to router: Router<StorekeeperRequestContext>) {
        router.post("/stripe/webhooks") { request, context -> Answer in
            try await Self.counter.counting(\.status) { try await receive(request, context: context) }
        }
    }

    /// `storekeeper_stripe_intake_events_total{status}`: accepted, duplicate, ignored, or the error code answered.
    static let counter = IntakeCounter(label: "storekeeper_stripe_intake_events_total")

    func receive(_ request: Request, context: StorekeeperRequestContext) async throws -> Answer {
        let body = try await request.collectBody(upTo: StorekeeperRequestContext.maximumBody)
        let bytes = Array(body.readableBytesView)
        let signedAt: Date
        do {
            signedAt = try signature.verify(header: request.headers[.init("Stripe-Signature")!], body: bytes, now: clock())
        } catch {
            switch error {
            case .malformedHeader: throw APIError(.badRequest, code: .malformedSignature, message: signature.message(for: error))
            case .noMatch, .outsideTolerance: throw APIError(.unauthorized, code: .verificationFailed, message: signature.message(for: error))
            }
        }
        let event: StripeEventEnvelope
        do {
            event = try PayloadDecoder().decode(StripeEventEnvelope.self, from: bytes)
        } catch DecodingError.dataCorrupted(let context) where context.underlyingError is PayloadDecodingError {
            // Not JSON, or past a parser limit (docs/security.md): the reason, as the Apple intake gives it.
            throw APIError.badRequest("the body is \(context.debugDescription)")
        } catch {
            throw APIError.badRequest(
                "the body must be a Stripe event: {\"id\": \"evt_…\", \"object\": \"event\", \"type\", \"livemode\", \"created\", \"data\": {\"object\": {…}}}"
            )
        }
        if let problem = event.problem { throw APIError.badRequest(problem) }
        var logger = context.logger
        logger[metadataKey: "stripe.event"] = "\(event.id)"
        let outcome: StripeInbox.Outcome
        do {
            outcome = try await withDatabase { try await inbox.accept(event, body: bytes, signedAt: signedAt) }
        } catch let error as APIError {
            logger.error("Stripe event could not be stored")
            throw error
        }
        logger.info("Stripe event \(outcome.rawValue)", metadata: ["stripe.type": "\(event.type)"])
        return Answer(status: outcome.rawValue, eventId: event.id)
    }
}
