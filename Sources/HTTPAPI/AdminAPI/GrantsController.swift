import Application
import Credits
import Entitlements
import Foundation
import Hummingbird
import Subscriptions

/// The admin API's grants: `POST /admin/accounts/{id}/grants {"tier", "endsAt" | "duration" | "lifetime": true,
/// "reason", "idempotencyKey"?}` → 201 with the grant (200 with the earlier one for a key used before),
/// `GET /admin/accounts/{id}/grants`, `DELETE /admin/grants/{grantId}` ends it now.
struct GrantsController: Sendable {
    let grants: OperatorGrants
    let catalogue: TierCatalogue
    let clock: @Sendable () -> Date

    struct GrantRequest: Decodable {
        var tier: String?
        var endsAt: String?
        var duration: String?
        var lifetime: Bool?
        var reason: String?
        var idempotencyKey: String?
    }

    struct GrantList: ResponseEncodable { var grants: [GrantResponse] }

    static let usage =
        #"body must be {"tier": "<tier id>", "endsAt": "<RFC 3339 time>" | "duration": "P30D" | "lifetime": true, "reason": "<why, ≤ 500 characters>"}"#

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.post("accounts/{accountId}/grants") { request, context -> EditedResponse<GrantResponse> in
            let account = try AccountsController.accountId(context)
            let body = try await request.decodeJSONBody(as: GrantRequest.self, upTo: 16 * 1024, otherwise: Self.usage)
            let now = clock()
            let asked = try Self.request(
                body, now: now, createdBy: context.operatorIdentity?.name ?? "admin-api", role: context.operatorIdentity?.role ?? .admin,
                catalogue: catalogue)
            let (record, created) = try await add(asked, to: account, now: now)
            return EditedResponse(status: created ? .created : .ok, response: GrantResponse(record, account: account, catalogue: catalogue, now: now))
        }
        group.get("accounts/{accountId}/grants") { _, context -> GrantList in
            let account = try AccountsController.accountId(context)
            let now = clock()
            let records = try await withDatabase { try await grants.grants(of: account) }
            return GrantList(grants: records.map { GrantResponse($0, account: account, catalogue: catalogue, now: now) })
        }
        group.delete("grants/{grantId}") { _, context -> GrantResponse in
            try await end(try Self.grantId(context), now: clock())
        }
    }

    /// Adds a grant: a refusal is the client's mistake (400), anything else the database's (503). A new grant is noted
    /// for the audit log; one an idempotency key had made before changes nothing.
    func add(_ request: OperatorGrants.Request, to account: AccountID, now: Date) async throws -> (record: EntitlementRecord, created: Bool) {
        let (record, created) = try await withDatabase {
            do {
                return try await grants.add(request, to: account, now: now)
            } catch let refusal as OperatorGrants.Refusal {
                throw APIError.badRequest(refusal.description)
            }
        }
        if created {
            OperatorAudit.note(
                "grant.create", account: account.text, target: record.id,
                after: GrantResponse(record, account: account, catalogue: catalogue, now: now))
        } else {
            OperatorAudit.unchanged()
        }
        return (record, created)
    }

    /// Ends grant `id` now (404 when there is none), noted for the audit log when it was still running.
    func end(_ id: String, now: Date) async throws -> GrantResponse {
        guard let (record, account, ended) = try await withDatabase({ try await grants.end(id, now: now) }) else {
            throw APIError(.notFound, code: .notFound, message: "no grant \(id)")
        }
        var response = GrantResponse(record, account: account, catalogue: catalogue, now: now)
        response.endedNow = ended
        if ended {
            var before = record
            (before.endedAt, before.endReason) = (nil, nil)
            OperatorAudit.note(
                "grant.end", account: account?.text, target: id, before: GrantResponse(before, account: account, catalogue: catalogue, now: now),
                after: response)
        } else {
            OperatorAudit.unchanged()
        }
        return response
    }

    /// A grant id is a UUID: anything else cannot name one.
    static func grantId(_ context: StorekeeperRequestContext) throws -> String {
        let text = try context.parameters.require("grantId")
        guard let id = UUID(text: text) else { throw APIError.badRequest("grant id must be a UUID, got \(text.prefix(64))") }
        return id.lowercasedText
    }

    /// What a body asks for, checked for shape; the tier, end and reason are checked by ``OperatorGrants``.
    /// A support key's grant ends within this: access for life, or for years, is an admin's decision.
    static let supportGrantLimit: TimeInterval = 366 * 86_400

    /// What a body asks for, checked for shape and for `role`: a support key's grant ends within ``supportGrantLimit``
    /// and is of a tier some store sells — a `grantable_only` tier (the team's internal, unlimited `admin`) is an
    /// admin's decision too.
    static func request(
        _ body: GrantRequest, now: Date, createdBy: String, role: OperatorRole = .admin, catalogue: TierCatalogue
    ) throws -> OperatorGrants.Request {
        guard let tier = body.tier, let reason = body.reason else { throw APIError.badRequest(usage) }
        let ends = [body.endsAt != nil, body.duration != nil, body.lifetime == true].filter { $0 }.count
        guard ends == 1, body.lifetime != false else {
            throw APIError.badRequest("give exactly one of endsAt, duration or \"lifetime\": true")
        }
        let endsAt = try end(endsAt: body.endsAt, duration: body.duration, now: now)
        if role < .admin, endsAt.map({ $0.timeIntervalSince(now) > supportGrantLimit }) ?? true {
            throw APIError(.forbidden, code: .forbidden, message: "a grant for life or for more than 366 days needs the admin role")
        }
        if role < .admin, catalogue.tier(id: tier)?.grantableOnly == true {
            throw APIError(
                .forbidden, code: .forbidden, message: "tier \(tier) is grantable_only (no store sells it): granting it needs the admin role")
        }
        return OperatorGrants.Request(tier: tier, endsAt: endsAt, reason: reason, createdBy: createdBy, idempotencyKey: body.idempotencyKey)
    }

    static func end(endsAt: String?, duration: String?, now: Date) throws -> Date? {
        do {
            return try GrantEnd.date(endsAt: endsAt, duration: duration, now: now)
        } catch {
            throw APIError.badRequest(error.description)
        }
    }
}

/// A grant as the admin API shows it, every field present (`null` when it does not apply).
struct GrantResponse: ResponseEncodable {
    var id: String
    var accountId: String?
    var tier: String?
    var status: String
    var entitled: Bool
    var startsAt: Date
    var endsAt: Date?
    var endedAt: Date?
    var endReason: String?
    var reason: String?
    var createdBy: String?
    /// `DELETE`: whether this request ended it (`false`: it had ended already); absent elsewhere.
    var endedNow: Bool?

    init(_ record: EntitlementRecord, account: AccountID?, catalogue: TierCatalogue, now: Date) {
        let source = catalogue.source(of: record, at: now)
        id = record.id
        accountId = account?.text
        tier = record.tier
        status = source.status.text
        entitled = source.entitled
        startsAt = record.startsAt
        endsAt = record.endsAt
        endedAt = record.endedAt
        endReason = record.endReason?.text
        reason = record.reason
        createdBy = record.createdBy
    }

    enum CodingKeys: String, CodingKey {
        case id, accountId, tier, status, entitled, startsAt, endsAt, endedAt, endReason, reason, createdBy, endedNow
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(accountId, forKey: .accountId)
        try container.encode(tier, forKey: .tier)
        try container.encode(status, forKey: .status)
        try container.encode(entitled, forKey: .entitled)
        try container.encode(startsAt, forKey: .startsAt)
        try container.encode(endsAt, forKey: .endsAt)
        try container.encode(endedAt, forKey: .endedAt)
        try container.encode(endReason, forKey: .endReason)
        try container.encode(reason, forKey: .reason)
        try container.encode(createdBy, forKey: .createdBy)
        try container.encodeIfPresent(endedNow, forKey: .endedNow)
    }
}
