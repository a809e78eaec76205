import Foundation

/// What the intake reads of a Stripe event (`{"id": "evt_…", "object": "event", "type", "livemode", "created", "data":
/// {"object": {"id", "object"}}}`): enough to store it, deduplicate it and know what to read again. The event is never
/// taken as the state: the worker reads the object from Stripe (Stripe retries for days and does not keep order).
public struct StripeEventEnvelope: Decodable, Sendable, Equatable {
    public var id: String
    public var object: String
    public var type: String
    public var livemode: Bool
    /// Unix seconds.
    public var created: Int64
    public var data: DataField

    public struct DataField: Decodable, Sendable, Equatable {
        public var object: ObjectReference
    }

    /// The event's object: its id (`sub_…`, `in_…`, `ch_…`, `cs_…`) and kind (`subscription`, `invoice`, …), and —
    /// for an invoice — the subscription it bills (an invoice never changes subscription, so the worker need not read
    /// the invoice to know which subscription to read).
    public struct ObjectReference: Decodable, Sendable, Equatable {
        public var id: String?
        public var object: String?
        public var parent: Parent?

        public struct Parent: Decodable, Sendable, Equatable {
            public var subscriptionDetails: SubscriptionDetails?

            public struct SubscriptionDetails: Decodable, Sendable, Equatable {
                public var subscription: String?
            }

            enum CodingKeys: String, CodingKey { case subscriptionDetails = "subscription_details" }
        }

        enum CodingKeys: String, CodingKey { case id, object, parent }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decodeIfPresent(String.self, forKey: .id)
            object = try container.decodeIfPresent(String.self, forKey: .object)
            // Other objects' `parent` has other shapes: only an invoice's is read, and never refuses the event.
            parent = object == "invoice" ? (try? container.decodeIfPresent(Parent.self, forKey: .parent)) ?? nil : nil
        }

        /// The subscription an invoice bills, when the event says (`sub_…`, at most 255 bytes).
        public var invoiceSubscription: String? {
            guard object == "invoice", let id = parent?.subscriptionDetails?.subscription, id.hasPrefix("sub_"), id.utf8.count <= 255 else {
                return nil
            }
            return id
        }
    }

    /// Why an envelope is refused: what the intake answers 400 with.
    public var problem: String? {
        if !id.hasPrefix("evt_") || id.utf8.count > 255
            || id.unicodeScalars.contains(where: { !$0.isASCII || $0.properties.generalCategory == .control })
        {
            return "id must be an evt_ id of at most 255 printable ASCII bytes"
        }
        if object != "event" { return "object must be \"event\"" }
        if type.isEmpty || type.utf8.count > 128 || type.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "type must be 1–128 printable bytes"
        }
        // Stored as a timestamp: a value past year 9999 does not fit one (and no event of Stripe's is older than 2000).
        if !(946_684_800...253_402_300_799).contains(created) { return "created must be a Unix time from 2000 to 9999" }
        if let objectId = data.object.id, objectId.utf8.count > 255 { return "data.object.id is longer than 255 bytes" }
        return nil
    }
}
