import Application
import Credits
import Entitlements
import Events
import Foundation
import Hummingbird
import Persistence
import Subscriptions

/// `POST /v1/accounts/{accountId}/holds {"meter", "amount", "idempotencyKey", "expiresIn"?}` holds credits before work
/// whose cost is known at its end (201, or 402 `insufficient_credits` with nothing held; the same key answers the same
/// hold, a key reused for another hold is 422); `POST /v1/holds/{holdId}/settle {"amount"}` charges what the work cost
/// and gives the rest back; `POST /v1/holds/{holdId}/release` gives it all back (both answer a repeat with the first
/// result, and 409 `hold_ended` for a hold ended another way; both also by the key that took the hold,
/// `/v1/accounts/{accountId}/holds/{idempotencyKey}/settle|release`); `GET /v1/holds/{holdId}` reads one.
public struct HoldsController: Sendable {
    let holds: CreditHolds
    let catalogue: TierCatalogue
    let clock: @Sendable () -> Date

    public init(holds: CreditHolds, catalogue: TierCatalogue, clock: @escaping @Sendable () -> Date) {
        self.holds = holds
        self.catalogue = catalogue
        self.clock = clock
    }

    public func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.post("accounts/{accountId}/holds") { request, context in try await self.hold(request, context: context) }
        group.post("holds/{holdId}/settle") { request, context in try await self.settle(request, target: .id(try Self.holdId(context))) }
        group.post("holds/{holdId}/release") { request, context in try await self.release(target: .id(try Self.holdId(context))) }
        // By the key the service took the hold with: it need not keep the hold's id.
        group.post("accounts/{accountId}/holds/{idempotencyKey}/settle") { request, context in
            try await self.settle(request, target: try Self.keyTarget(context))
        }
        group.post("accounts/{accountId}/holds/{idempotencyKey}/release") { request, context in
            try await self.release(target: try Self.keyTarget(context))
        }
        group.get("holds/{holdId}") { request, context in try await self.read(request, context: context) }
        // A plain spend given back by the same rule, for a failure found after the fact.
        group.post("accounts/{accountId}/usage/{idempotencyKey}/reverse") { request, context in try await self.reverse(context: context) }
    }

    struct HoldBody: Decodable {
        var meter: String
        var amount: Int64
        var idempotencyKey: String?
        var expiresIn: Int?
    }

    struct SettleBody: Decodable {
        var amount: Int64
    }

    /// A hold as the API shows it: what `JSONEncoder` (sorted keys, ISO 8601 dates) writes of it, written by hand
    /// (``json``; a test holds the two to each other): the encoder cost a hold or a settle about 3 % of `serve`'s CPU.
    struct HoldJSON: Encodable, ResponseGenerator {
        var id: String
        var accountId: String
        var meter: String
        var amount: Int64
        var state: String
        var createdAt: Date
        var expiresAt: Date
        var charged: Int64?
        var returned: Int64?
        var lapsed: Int64?
        var endedAt: Date?
        /// What is left of the meter after the hold (on its creation); `nil` for an unlimited meter.
        var remaining: Int64?

        init(_ hold: CreditHold, remaining: Int64? = nil) {
            (id, accountId, meter, amount, state) = (hold.id.lowercasedText, hold.account.text, hold.meter, hold.amount, hold.state.text)
            (createdAt, expiresAt, charged, returned, lapsed, endedAt) = (
                hold.createdAt, hold.expiresAt, hold.charged, hold.returned, hold.lapsed, hold.endedAt
            )
            self.remaining = remaining
        }

        /// The members in sorted order, those `nil` left out (as `encodeIfPresent` does).
        var json: [UInt8] {
            var writer = JSONWriter(capacity: 320)
            writer.beginObject()
            writer.member("accountId", accountId)
            writer.member("amount", amount)
            if let charged { writer.member("charged", charged) }
            writer.member("createdAt", date: createdAt)
            if let endedAt { writer.member("endedAt", date: endedAt) }
            writer.member("expiresAt", date: expiresAt)
            writer.member("id", id)
            if let lapsed { writer.member("lapsed", lapsed) }
            writer.member("meter", meter)
            if let remaining { writer.member("remaining", remaining) }
            if let returned { writer.member("returned", returned) }
            writer.member("state", state)
            writer.endObject()
            return writer.bytes
        }

        func response(from request: Request, context: some RequestContext) throws -> Response {
            Response(status: .ok, headers: [.contentType: APIError.jsonContentType], body: .init(byteBuffer: ByteBuffer(bytes: json)))
        }
    }

    func hold(_ request: Request, context: StorekeeperRequestContext) async throws -> EditedResponse<HoldJSON> {
        let account = try AccountsController.accountId(context)
        let body = try await request.decodeJSONBody(
            as: HoldBody.self,
            otherwise: "body must be {\"meter\": string, \"amount\": integer, \"idempotencyKey\": string, \"expiresIn\": integer seconds (optional)}")
        guard catalogue.meters.contains(where: { $0.id == body.meter }) else {
            throw APIError(
                .badRequest, code: .unknownMeter, message: "no meter \(body.meter); known: \(catalogue.meters.map(\.id).joined(separator: ", "))")
        }
        guard body.amount > 0, body.amount <= CreditHolds.largestAmount else {
            throw APIError(.badRequest, code: .invalidAmount, message: "amount must be a positive integer, at most \(CreditHolds.largestAmount)")
        }
        let expiresIn = body.expiresIn ?? CreditHolds.defaultExpiry
        guard CreditHolds.expiryRange.contains(expiresIn) else {
            throw APIError(.badRequest, code: .invalidExpiresIn, message: "expiresIn must be 1 to 86400 seconds (default 900)")
        }
        let key = try request.idempotencyKey(fromBody: body.idempotencyKey)
        let answer = try await withDatabase(message: Self.holdUnconfirmed) {
            try await holds.hold(
                .init(account: account, meter: body.meter, amount: body.amount, idempotencyKey: key, expiresIn: expiresIn), now: clock())
        }
        switch answer {
        case .held(let hold, let remaining):
            return EditedResponse(status: .created, response: HoldJSON(hold, remaining: remaining))
        case .insufficient(let available):
            throw APIError(
                .init(code: 402), code: .insufficientCredits, message: "\(body.amount) \(body.meter) requested, \(available) left; nothing was held"
            )
        case .keyReused(let hold):
            throw APIError(
                .unprocessableContent, code: .idempotencyKeyReused,
                message:
                    "idempotency key \(key) was used for a hold of \(hold.amount) \(hold.meter) for \(hold.expiresIn) s"
            )
        }
    }

    func settle(_ request: Request, target: CreditHolds.Target) async throws -> HoldJSON {
        let body = try await request.decodeJSONBody(as: SettleBody.self, otherwise: "body must be {\"amount\": integer, at most the held amount}")
        guard body.amount >= 0 else {
            throw APIError(.badRequest, code: .invalidAmount, message: "amount must be 0 or more, at most the held amount")
        }
        return try Self.answer(
            try await withDatabase(message: Self.settleUnconfirmed) {
                try await holds.settle(target, amount: body.amount, now: clock())
            })
    }

    func release(target: CreditHolds.Target) async throws -> HoldJSON {
        try Self.answer(
            try await withDatabase(message: Self.releaseUnconfirmed) {
                try await holds.release(target, now: clock())
            })
    }

    /// What a reversed spend answers.
    struct ReversalJSON: ResponseEncodable {
        var meter: String
        var amount: Int64
        var returned: Int64
        var lapsed: Int64
        var reversedAt: Date
    }

    func reverse(context: StorekeeperRequestContext) async throws -> ReversalJSON {
        let (account, key) = try Self.accountAndKey(context)
        let outcome = try await withDatabase(message: Self.reversalUnconfirmed) {
            try await holds.reverseSpend(of: account, idempotencyKey: key, now: clock())
        }
        switch outcome {
        case .reversed(let reversal, let meter, let amount):
            return ReversalJSON(meter: meter, amount: amount, returned: reversal.returned, lapsed: reversal.lapsed, reversedAt: reversal.reversedAt)
        case .notFound:
            throw APIError(.notFound, code: .notFound, message: "no spend of account \(account.text) under idempotency key \(key)")
        case .notSpent(let meter, let amount):
            throw APIError(.conflict, code: .notSpent, message: "the spend of \(amount) \(meter) was refused: nothing was taken to give back")
        case .unlimited(let meter, let amount):
            throw APIError(
                .conflict, code: .notSpent, message: "the spend of \(amount) \(meter) was of an unlimited meter: nothing was taken to give back")
        case .windowPassed(let spentAt):
            throw APIError(
                .conflict, code: .reversalWindowPassed,
                message:
                    "a spend can be given back within \(Int(CreditHolds.reversalWindow / 3600)) hours; this one was made at \(spentAt.formatted(.iso8601))"
            )
        }
    }

    func read(_ request: Request, context: StorekeeperRequestContext) async throws -> HoldJSON {
        let id = try Self.holdId(context)
        guard let hold = try await withDatabase({ try await holds.hold(id) }) else {
            throw APIError(.notFound, code: .notFound, message: "no hold \(id.lowercasedText)")
        }
        return HoldJSON(hold)
    }

    /// A write's 503: handed to its commit group, it may commit after the route stopped waiting, as a spend may
    /// (UsageController); the same call again answers what was done. Made once, not at every request.
    static func unconfirmed(_ what: String, retry: String) -> String {
        "the \(what) could not be confirmed; it may or may not have been made: \(retry)"
    }
    static let holdUnconfirmed = unconfirmed("hold", retry: "retry with the same idempotencyKey")
    static let settleUnconfirmed = unconfirmed("settle", retry: "settle again: a second call answers the first's result")
    static let releaseUnconfirmed = unconfirmed("release", retry: "release again: a second call answers the first's result")
    static let reversalUnconfirmed = unconfirmed("reversal", retry: "reverse again: a second call answers the first's result")

    static func answer(_ answer: CreditHolds.EndAnswer) throws -> HoldJSON {
        switch answer {
        case .ended(let hold): return HoldJSON(hold)
        case .alreadyEnded(let hold):
            throw APIError(
                .conflict, code: .holdEnded, message: "the hold was \(hold.state.text) already (charged \(hold.charged ?? 0) of \(hold.amount))")
        case .overHeld(let hold):
            throw APIError(.unprocessableContent, code: .amountOverHold, message: "only \(hold.amount) \(hold.meter) are held")
        case .notFound:
            throw APIError(.notFound, code: .notFound, message: "no such hold")
        }
    }

    /// The account and idempotency key a hold (or a spend) is named by in the path.
    static func accountAndKey(_ context: StorekeeperRequestContext) throws -> (AccountID, String) {
        let account = try AccountsController.accountId(context)
        let text = try context.parameters.require("idempotencyKey")
        guard let key = text.pathDecoded, key.isKey(maximumBytes: 255) else {
            throw APIError(
                .badRequest, code: .invalidIdempotencyKey, message: "idempotencyKey must be 1–255 bytes of UTF-8 without control characters")
        }
        return (account, key)
    }

    static func keyTarget(_ context: StorekeeperRequestContext) throws -> CreditHolds.Target {
        let (account, key) = try accountAndKey(context)
        return .key(account, key)
    }

    static func holdId(_ context: StorekeeperRequestContext) throws -> UUID {
        guard let text = context.parameters.get("holdId"), let id = UUID(text: text) else {
            throw APIError.badRequest("holdId must be a hold's id (a UUID)")
        }
        return id
    }
}
