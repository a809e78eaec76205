import Events
import Foundation
import Jobs
import Logging
import Persistence
import PostgresNIO
import Subscriptions

/// Stores the events a change is worth inside the change's transaction — each with the account's full status as
/// that transaction leaves it — and queues their webhook deliveries. An event whose key is stored already is skipped,
/// so deriving again never emits twice.
public struct EventRecorder: Sendable {
    private let log: EventLog
    private let deliveries: WebhookDeliveries
    private let endpoints: [WebhookEndpoint]
    private let status: AccountStatusQuery
    private let queue: any JobScheduling

    public init(client: PostgresClient, credits: CreditLedger, endpoints: [WebhookEndpoint], queue: any JobScheduling, logger: Logger) {
        self.log = EventLog(logger: logger)
        self.deliveries = WebhookDeliveries(logger: logger)
        self.endpoints = endpoints
        self.status = AccountStatusQuery(client: client, ledger: credits, logger: logger)
        self.queue = queue
    }

    /// The events of a change with the statuses they carry, not stored yet: a use case that ends with a write of its
    /// own stores them in that write's statement (``ready(_:on:)``, ``record(_:markingProcessed:on:)``).
    public struct Pending: Sendable {
        public var drafts: [EventDraft]
        /// The status inputs of the drafts' accounts as the change leaves them; an account missing is read when stored.
        public var statuses: [AccountID: CreditLedger.StatusInputs]
        public var now: Date
    }

    /// Stores those of `drafts` not stored yet, in order, and wakes the deliveries of each endpoint that wants them.
    /// `statuses`: the status inputs of the drafts' accounts as the transaction leaves them, when the caller read them
    /// already (``CreditLedger/apply(_:readingStatusOf:at:on:)``); an account without is read here.
    public func record(
        _ drafts: [EventDraft], now: Date, statuses: [AccountID: CreditLedger.StatusInputs] = [:], on connection: PostgresConnection
    ) async throws {
        let entries = try await entries(of: drafts, now: now, statuses: statuses, on: connection)
        guard !entries.isEmpty else { return }
        try await deliver(try await log.append(entries, at: now, on: connection), of: entries, on: connection)
    }

    /// Stores `pending` as ``record(_:now:statuses:on:)`` does.
    public func record(_ pending: Pending, on connection: PostgresConnection) async throws {
        try await record(pending.drafts, now: pending.now, statuses: pending.statuses, on: connection)
    }

    /// The events of a change ready to store: each key once, each with its account's status document. Made where the
    /// change ends (``ready(_:on:)``: an account `pending` has no status of is read then), stored with the last write
    /// of the transaction (``record(_:markingProcessed:on:)``).
    public struct Ready: Sendable {
        fileprivate var entries: [(draft: EventDraft, body: String)]
        fileprivate var now: Date
    }

    /// `pending`'s events ready to store.
    public func ready(_ pending: Pending, on connection: PostgresConnection) async throws -> Ready {
        Ready(entries: try await entries(of: pending.drafts, now: pending.now, statuses: pending.statuses, on: connection), now: pending.now)
    }

    /// Stores those of `ready`'s events not stored yet, in order (a key twice, once: a draft's key names its change),
    /// in the statement that records how the apply jobs of one transaction processed their notifications and completes
    /// their jobs (``EventLog/append(_:markingProcessed:on:)``; none: the events alone), then queues their deliveries;
    /// answers each of `processed`, in order, whether its job was still running under its claimed attempt.
    public func record(_ ready: [Ready], markingProcessed processed: [NotificationStore.Processed], on connection: PostgresConnection)
        async throws -> [Bool]
    {
        var seen: Set<String> = []
        let entries = ready.flatMap { change in
            change.entries.filter { seen.insert($0.draft.key).inserted }.map { (draft: $0.draft, body: $0.body, createdAt: change.now) }
        }
        let (appended, completed) = try await log.append(entries, markingProcessed: processed, on: connection)
        try await deliver(appended, of: entries.map { (draft: $0.draft, body: $0.body) }, on: connection)
        return completed
    }

    /// The drafts to append — each key once — with their bodies.
    private func entries(
        of drafts: [EventDraft], now: Date, statuses: [AccountID: CreditLedger.StatusInputs], on connection: PostgresConnection
    ) async throws -> [(draft: EventDraft, body: String)] {
        var seen: Set<String> = []
        var documents: [AccountID: AccountStatusResponse] = [:]
        var entries: [(draft: EventDraft, body: String)] = []
        for draft in drafts where seen.insert(draft.key).inserted {
            let document: AccountStatusResponse
            if let known = documents[draft.account] {
                document = known
            } else {
                document =
                    if let inputs = statuses[draft.account] {
                        status.document(from: inputs, of: draft.account, now: now)
                    } else {
                        try await status.document(of: draft.account, now: now, on: connection)
                    }
                documents[draft.account] = document
            }
            entries.append((draft, try EventData(draft: draft, status: document).json()))
        }
        return entries
    }

    /// Adds the deliveries of the `appended` events (a key stored already — a replay, a re-derivation — was skipped by
    /// the insert) and wakes the delivery job of each endpoint and account.
    private func deliver(
        _ appended: [EventLog.Appended], of entries: [(draft: EventDraft, body: String)],
        on connection: PostgresConnection
    ) async throws {
        guard !endpoints.isEmpty else { return }
        let byKey = Dictionary(entries.map { ($0.draft.key, $0.draft) }, uniquingKeysWith: { first, _ in first })
        var added: [(event: EventLog.Appended, endpoint: String)] = []
        var woken: [WebhookDeliveryJob.Arguments] = []
        for event in appended {
            guard let draft = byKey[event.key] else { continue }
            for endpoint in endpoints where endpoint.types.matches(draft.type) {
                added.append((event, endpoint.name))
                let wake = WebhookDeliveryJob.Arguments(endpoint: endpoint.name, account: event.account)
                if !woken.contains(wake) { woken.append(wake) }
            }
        }
        // At most two round trips for a transaction's events, however many events and endpoints: one for each event
        // and endpoint kept the applying transaction open (and its accounts locked) that much longer.
        try await deliveries.add(added, on: connection)
        try await queue.enqueue(try woken.map { try WebhookDeliveryJob.job($0) }, on: connection)
    }
}

/// The `data` of an event: whom it concerns, what changed, what caused it and the account's status after it. Stored
/// as ``json()`` writes it; the `Encodable` form is the document's definition, which a test holds ``json()`` to.
struct EventData: Encodable {
    var draft: EventDraft
    var status: AccountStatusResponse

    enum CodingKeys: String, CodingKey {
        case accountId, subscriptionId, environment, sandbox, change, cause, status
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(draft.account.text, forKey: .accountId)
        try container.encode(draft.subscription, forKey: .subscriptionId)
        try container.encode(draft.environment, forKey: .environment)
        try container.encode(draft.environment != .production, forKey: .sandbox)
        try container.encode(draft.change, forKey: .change)
        try container.encode(draft.cause, forKey: .cause)
        try container.encode(status, forKey: .status)
    }

    /// The same document as the `Encodable` form with sorted keys, written by hand (see ``JSONWriter``).
    func json() throws -> String {
        var writer = JSONWriter(capacity: 1024)
        writer.beginObject()
        writer.member("accountId", draft.account.text)
        writer.key("cause")
        draft.cause.write(to: &writer)
        writer.key("change")
        draft.change.write(to: &writer)
        writer.member("environment", draft.environment.rawValue)
        writer.member("sandbox", draft.environment != .production)
        writer.key("status")
        status.write(to: &writer)
        writer.member("subscriptionId", draft.subscription)
        writer.endObject()
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
