import Credits
import Foundation
import Persistence

/// One account's history as one timeline, newest first: the signed facts of its subscriptions, the changes derived
/// from them (its events, with their webhook deliveries), its credits, the ends of its subscriptions and what
/// operators did to it.
struct AccountTimeline {
    struct Entry {
        var at: Date
        /// `signed`, `change`, `credits`, `end`, `operator`.
        var kind: String
        var what: String
        var detail: String
    }

    var entries: [Entry] = []

    mutating func add(signed events: [AccountRecords.Event]) {
        entries += events.map { event in
            Entry(
                at: event.signedDate, kind: "signed", what: event.type + (event.subtype.map { "/\($0)" } ?? ""),
                detail: "subscription \(event.originalTransactionId) · \(event.outcomeText)")
        }
    }

    mutating func add(changes events: [EventLog.StoredEvent], deliveries: [UUID: [WebhookDeliveries.Delivery]]) {
        entries += events.map { event in
            let delivered = (deliveries[event.id] ?? []).map { delivery in
                "\(delivery.endpoint): \(delivery.state.rawValue)" + (delivery.attempts > 1 ? " after \(delivery.attempts) attempts" : "")
            }
            return Entry(
                at: event.createdAt, kind: "change", what: event.type,
                detail: [event.subscription.map { "subscription \($0)" }, delivered.isEmpty ? "no webhook" : delivered.joined(separator: ", ")]
                    .compactMap { $0 }.joined(separator: " · "))
        }
    }

    mutating func add(ledger: [AccountRecords.LedgerEntry]) {
        entries += ledger.map { entry in
            Entry(
                at: entry.at, kind: "credits", what: "\(entry.delta > 0 ? "+" : "")\(entry.delta) \(entry.meter)",
                detail: "\(entry.reason) · \(entry.operationKey)")
        }
    }

    /// Each hold taken, and its end: the ledger shows the credits moving, these say why.
    mutating func add(holds: [CreditHold]) {
        for hold in holds {
            entries.append(
                Entry(
                    at: hold.createdAt, kind: "credits", what: "held \(hold.amount) \(hold.meter)",
                    detail: "hold \(hold.idempotencyKey) · expires \(HTMLPage.time(hold.expiresAt))"))
            if let ended = hold.endedAt {
                let outcome =
                    "charged \(hold.charged ?? 0), returned \(hold.returned ?? 0)" + ((hold.lapsed ?? 0) > 0 ? ", lapsed \(hold.lapsed ?? 0)" : "")
                entries.append(
                    Entry(
                        at: ended, kind: "credits", what: "\(hold.state.text) hold of \(hold.amount) \(hold.meter)",
                        detail: "hold \(hold.idempotencyKey) · \(outcome)"))
            }
        }
    }

    mutating func add(ends archive: [AccountRecords.ArchiveEntry]) {
        entries += archive.compactMap { end in
            end.endedAt.map {
                Entry(at: $0, kind: "end", what: "ended: \(end.reason)", detail: "subscription \(end.originalTransactionId) · \(end.productId)")
            }
        }
    }

    mutating func add(operators actions: [OperatorAction]) {
        entries += actions.map { action in
            Entry(
                at: action.at, kind: "operator", what: action.action,
                detail: "\(action.operatorName) (\(action.role))" + (action.target.map { " · \($0)" } ?? ""))
        }
    }

    /// The entries newest first (at most `limit`), as a table.
    func html(limit: Int) -> String {
        let newest = entries.sorted { $0.at > $1.at }.prefix(limit)
        return HTMLPage.table(
            ["at", "", "what", "detail"],
            newest.map { entry in
                [
                    HTMLPage.Cell(HTMLPage.time(entry.at)), .raw("<span class=\"kind \(entry.kind)\">\(entry.kind)</span>"),
                    .raw("<b>\(HTMLPage.escape(entry.what))</b>"), HTMLPage.Cell(entry.detail),
                ]
            }, empty: "nothing has happened to this account")
    }
}
