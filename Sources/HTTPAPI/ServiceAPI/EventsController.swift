import Application
import Entitlements
import Events
import Foundation
import Hummingbird
import NIOCore
import Persistence
import Subscriptions

/// `GET /v1/events` (the feed for services that pull) and the admin API's `GET /admin/events`,
/// `GET /admin/events/{id}` and `POST /admin/events/{id}/redeliver`.
struct EventsController: Sendable {
    let events: EventHistory

    /// `GET /v1/events?after=<cursor>&limit=1…1000&types=a,b.*`: `{"events": [...], "next": "<cursor>"}`; pass `next`
    /// as `after` to go on (it stays put when nothing new is visible yet).
    func addFeedRoute(to group: RouterGroup<StorekeeperRequestContext>) {
        group.get("events") { request, _ -> Response in
            let parameters = request.uri.queryParameters
            var cursor: EventCursor?
            if let after = parameters.get("after"), !after.isEmpty {
                guard let parsed = EventCursor(after) else { throw APIError.badRequest("after must be a cursor from a previous answer's next") }
                cursor = parsed
            }
            let limit = try Self.limit(parameters.get("limit"), default: 100)
            let patterns = (parameters.get("types") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                !$0.isEmpty
            }
            let types: EventTypeFilter
            do throws(EventTypeFilter.Problem) { types = try EventTypeFilter(patterns) } catch { throw APIError.badRequest(error.description) }
            let after = cursor
            let page = try await withDatabase { try await self.events.feed(after: after, types: types, limit: limit) }
            let next = page.last?.cursor ?? cursor ?? EventCursor(transaction: 0, sequence: 0)
            return Self.json("{\"events\":[\(page.map(EventEnvelope.json).joined(separator: ","))],\"next\":\"\(next)\"}")
        }
    }

    func addAdminRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.get("events") { request, _ -> Response in
            let parameters = request.uri.queryParameters
            var account: AccountID?
            if let text = parameters.get("account") {
                guard let parsed = AccountID(text) else { throw APIError.badRequest("account must be \(AccountID.rule)") }
                account = parsed
            }
            let (filter, limit) = (account, try Self.limit(parameters.get("limit"), default: 50))
            let page = try await withDatabase { try await self.events.recent(account: filter, types: .all, limit: limit) }
            return Self.json("{\"events\":[\(page.map(EventEnvelope.json).joined(separator: ","))]}")
        }
        group.get("events/{id}") { _, context -> Response in
            let id = try Self.eventId(context)
            guard let detail = try await withDatabase({ try await self.events.detail(id) }) else {
                throw APIError(.notFound, code: .notFound, message: "no event \(id)")
            }
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            let deliveries = try encoder.encode(detail.deliveries.map(DeliveryDocument.init))
            let attempts = try encoder.encode(detail.attempts.map(AttemptDocument.init))
            return Self.json(
                "{\"event\":\(EventEnvelope.json(detail.event)),\"deliveries\":\(String(decoding: deliveries, as: UTF8.self)),"
                    + "\"attempts\":\(String(decoding: attempts, as: UTF8.self))}")
        }
        group.post("events/{id}/redeliver") { request, context -> Response in
            let id = try Self.eventId(context)
            let endpoint = request.uri.queryParameters.get("endpoint")
            if let endpoint, !endpoint.isKey(maximumBytes: 2048) {
                throw APIError.badRequest("endpoint must be a configured endpoint's name: 1–2048 bytes, no control characters")
            }
            guard let endpoints = try await withDatabase({ try await self.events.redeliver(id, endpoint: endpoint) }) else {
                throw APIError(.notFound, code: .notFound, message: "no event \(id)")
            }
            // A name no delivery of the event has: nothing was redelivered, and an empty 202 would say it was done.
            if let endpoint, endpoints.isEmpty {
                throw APIError(
                    .notFound, code: .notFound,
                    message: "event \(id.lowercasedText) has no delivery to an endpoint named \(endpoint.prefix(64))")
            }
            Self.noteRedelivery(id, endpoints: endpoints)
            let body = try JSONEncoder().encode(["endpoints": endpoints])
            return Self.json(String(decoding: body, as: UTF8.self), status: .accepted)
        }
    }

    /// Notes a redelivery for the audit log, unless no delivery was queued again.
    static func noteRedelivery(_ id: UUID, endpoints: [String]) {
        guard !endpoints.isEmpty else { return OperatorAudit.unchanged() }
        OperatorAudit.note("event.redeliver", target: id.lowercasedText, after: ["endpoints": endpoints])
    }

    static func eventId(_ context: StorekeeperRequestContext) throws -> UUID {
        guard let id = UUID(text: try context.parameters.require("id")) else { throw APIError.badRequest("event id must be a UUID") }
        return id
    }

    static func limit(_ text: String?, default fallback: Int) throws -> Int {
        guard let text else { return fallback }
        guard let limit = Int(text), (1...1000).contains(limit) else { throw APIError.badRequest("limit must be 1...1000") }
        return limit
    }

    static func json(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: APIError.jsonContentType], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    struct DeliveryDocument: Encodable {
        var endpoint: String
        var state: String
        var attempts: Int
        var nextAttemptAt: Date?
        var deliveredAt: Date?

        init(_ delivery: WebhookDeliveries.Delivery) {
            endpoint = delivery.endpoint
            state = delivery.state.rawValue
            attempts = delivery.attempts
            nextAttemptAt = delivery.nextAttemptAt
            deliveredAt = delivery.deliveredAt
        }
    }

    struct AttemptDocument: Encodable {
        var endpoint: String
        var attemptedAt: Date
        var statusCode: Int?
        var latencyMs: Int
        var error: String?

        init(_ attempt: WebhookDeliveries.Attempt) {
            endpoint = attempt.endpoint
            attemptedAt = attempt.attemptedAt
            statusCode = attempt.statusCode
            latencyMs = attempt.latencyMilliseconds
            error = attempt.error
        }
    }
}
