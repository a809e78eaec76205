import Entitlements
import Foundation
import Persistence

/// An event as consumers receive it, by webhook or from the feed: Standard Webhooks' recommended shape (`type`,
/// `timestamp`, `data`) with the event's `id`, its per-account `sequence` and its feed `cursor`.
public enum EventEnvelope {
    /// The JSON text of `event`.
    public static func json(_ event: EventLog.StoredEvent) -> String {
        let timestamp = ISO8601DateFormatter().string(from: event.createdAt)
        return """
            {"id":"\(event.id.lowercasedText)","type":"\(event.type)","timestamp":"\(timestamp)",\
            "sequence":\(event.sequence),"cursor":"\(event.cursor)","data":\(event.body)}
            """
    }
}
