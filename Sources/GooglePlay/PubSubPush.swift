import Entitlements
import Foundation
import PayloadDecoding

/// A Cloud Pub/Sub push request in its default ("wrapped") form:
/// `{"message": {"data": "<base64>", "attributes": {…}, "messageId": "…", "publishTime": "…"}, "subscription": "projects/P/subscriptions/S"}`.
///
/// Pub/Sub delivers at least once and in no particular order, so `messageId` (unique within the topic) is what a
/// retry is recognised by. Pub/Sub writes the message's fields both in camelCase and in snake_case; either is read.
public struct PubSubPush: Sendable, Equatable {
    public var messageId: String
    /// The push subscription's full name.
    public var subscription: String
    /// When Pub/Sub accepted the message, if it says.
    public var publishTime: Date?
    /// The decoded `data`: the publisher's bytes (for Play, a ``DeveloperNotification`` as JSON).
    public var data: [UInt8]

    /// Why a body is refused: the one-line reason the intake answers 400 with.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// The longest field accepted (Pub/Sub's message ids are decimal numbers of ~16 digits, subscription names at
    /// most ~300 bytes).
    static let maximumIdentifierBytes = 512

    /// Reads a push body; anything that is not a wrapped push with a message id and base64 `data` is refused.
    public init(body: [UInt8]) throws(Refusal) {
        let envelope: Envelope
        do {
            envelope = try PayloadDecoder().decode(Envelope.self, from: body)
        } catch {
            throw Refusal(
                #"the body must be a Pub/Sub push: {"message": {"data": "<base64>", "messageId": "…", "publishTime": "…"}, "subscription": "projects/…/subscriptions/…"}"#
            )
        }
        guard let message = envelope.message else { throw Refusal("message is missing: the body must be a wrapped Pub/Sub push") }
        guard let id = message.messageId ?? message.message_id, Self.isPrintable(id) else {
            throw Refusal("message.messageId must be 1 to \(Self.maximumIdentifierBytes) printable ASCII bytes")
        }
        guard let subscription = envelope.subscription, Self.isPrintable(subscription) else {
            throw Refusal("subscription must name the push subscription (projects/…/subscriptions/…)")
        }
        guard let encoded = message.data, let data = Data(base64Encoded: encoded), !data.isEmpty else {
            throw Refusal("message.data must be base64 (the publisher's notification)")
        }
        self.messageId = id
        self.subscription = subscription
        self.publishTime = (message.publishTime ?? message.publish_time).flatMap(Self.date)
        self.data = Array(data)
    }

    /// An RFC 3339 time, with or without fractional seconds (Pub/Sub writes up to nine digits), to the millisecond, as it reads back from PostgreSQL
    /// (`Date.wholeMilliseconds`): the parser's `Date` of `…05.110Z` can be a step of the last bit above the
    /// millisecond, so the same expiry read again from Play looked later than the one stored, and every read of an
    /// unchanged subscription (a cancel, `google sync`) sent `subscription.extended` with the same time twice.
    static func date(_ text: String) -> Date? {
        guard
            let parsed = (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
                ?? (try? Date(text, strategy: .iso8601))
        else { return nil }
        return parsed.wholeMilliseconds
    }

    static func isPrintable(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maximumIdentifierBytes && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    private struct Envelope: Decodable {
        var message: Message?
        var subscription: String?
    }

    /// Pub/Sub's own two spellings of the same fields.
    // swift-format-ignore: AlwaysUseLowerCamelCase
    private struct Message: Decodable {
        var data: String?
        var messageId: String?
        var message_id: String?
        var publishTime: String?
        var publish_time: String?
    }
}
