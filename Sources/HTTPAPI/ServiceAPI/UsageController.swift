import Application
import Credits
import Events
import Foundation
import Hummingbird
import Jobs
import Persistence
import StatementFencing

/// `POST /v1/accounts/{accountId}/usage` with `{"meter", "amount", "idempotencyKey"}`: spends atomically (N parallel
/// requests never spend more than the balance), cycle credits before top-ups; the same idempotency key always gets
/// the first answer and is charged once. 402 `insufficient_credits` deducts nothing.
public struct UsageController: Sendable {
    let usage: SpendCredits
    let catalogue: TierCatalogue
    let clock: @Sendable () -> Date
    let databaseTimeout: Duration

    public init(usage: SpendCredits, catalogue: TierCatalogue, clock: @escaping @Sendable () -> Date, databaseTimeout: Duration = .seconds(5)) {
        self.usage = usage
        self.catalogue = catalogue
        self.clock = clock
        self.databaseTimeout = databaseTimeout
    }

    public func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.post("accounts/{accountId}/usage") { request, context in
            try await self.spend(request, context: context)
        }
    }

    struct RequestBody: Decodable {
        var meter: String
        var amount: Int64
        var idempotencyKey: String?
    }

    struct Answer: ResponseGenerator {
        var answer: UsageRequests.Answer

        func response(from request: Request, context: some RequestContext) throws -> Response {
            // Written straight into bytes (keys sorted): `JSONEncoder` cost about 2 % of serve's CPU under spends.
            var body = JSONWriter(capacity: 96)
            body.beginObject()
            if let error = answer.error { body.member("error", error) }
            if let message = answer.message { body.member("message", message) }
            body.member("meter", answer.meter)
            body.member("remaining", answer.remaining)
            body.endObject()
            return Response(
                status: UsageController.status(of: answer.outcome), headers: [.contentType: APIError.jsonContentType],
                body: .init(byteBuffer: ByteBuffer(bytes: body.bytes)))
        }
    }

    func spend(_ request: Request, context: StorekeeperRequestContext) async throws -> Answer {
        let account = try AccountsController.accountId(context)
        let body = try await request.decodeJSONBody(
            as: RequestBody.self, otherwise: "body must be {\"meter\": string, \"amount\": integer, \"idempotencyKey\": string}")
        guard catalogue.meters.contains(where: { $0.id == body.meter }) else {
            throw APIError(
                .badRequest, code: .unknownMeter, message: "no meter \(body.meter); known: \(catalogue.meters.map(\.id).joined(separator: ", "))")
        }
        guard body.amount > 0 else { throw APIError(.badRequest, code: .invalidAmount, message: "amount must be a positive integer") }
        let key = try request.idempotencyKey(fromBody: body.idempotencyKey)
        let usageRequest = UsageRequests.Request(account: account, meter: body.meter, amount: body.amount, idempotencyKey: key)
        do {
            return Answer(answer: try await withDeadline(databaseTimeout) { try await usage.spend(usageRequest, now: clock()) })
        } catch {
            context.logger.error("usage not confirmed: the spend may still be recorded", metadata: ["error": "\(String(reflecting: error))"])
            // A spend handed to its group commits even when this wait ends first: its outcome is unknown here, and the same
            // key answers what was done.
            throw APIError.unavailable(
                "the spend could not be confirmed; it may or may not have been made: retry with the same idempotencyKey")
        }
    }
}

extension UsageController {
    /// The HTTP status of a usage outcome: the only place it is decided.
    static func status(of outcome: UsageRequests.Answer.Outcome) -> HTTPResponse.Status {
        switch outcome {
        case .spent: return .ok
        case .insufficientCredits: return .init(code: 402)
        case .idempotencyKeyReused: return .unprocessableContent
        }
    }
}
