import AppStoreModels
import Entitlements
import Events
import Foundation
import Testing

@testable import Application
@testable import Credits
@testable import IntegrationSupport
@testable import Subscriptions

/// The status answer and event bodies are written by hand; these hold them to what `JSONEncoder` (sorted keys,
/// ISO 8601 dates) writes for the same `Encodable` documents, byte for byte, over random documents with awkward
/// strings, dates before 1970 and with fractions, and meter names whose order differs by case.
@Suite struct StatusJSONTests {
    /// A deterministic generator, so a failure repeats.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state ^ (state >> 29)
        }
    }

    static let alphabet: [String] = ["a", "Z", "é", "\"", "\\", "/", "\n", "\t", "\u{01}", "\u{1F}", "\u{7F}", "😀", " ", "_", "0", "\u{2028}"]

    static func text(_ random: inout Generator, maximum: Int = 12) -> String {
        String((0..<Int.random(in: 1...maximum, using: &random)).map { _ in alphabet.randomElement(using: &random)! }.joined())
    }

    static func date(_ random: inout Generator) -> Date? {
        switch Int.random(in: 0..<6, using: &random) {
        case 0: return nil
        case 1: return Date(timeIntervalSince1970: -Double.random(in: 0..<2_000_000_000, using: &random))
        default: return Date(timeIntervalSince1970: Double.random(in: 0..<4_200_000_000, using: &random))
        }
    }

    static func integer(_ random: inout Generator) -> Int64? {
        Bool.random(using: &random) ? nil : Int64.random(in: -1_000_000...Int64.max / 2, using: &random)
    }

    static func optionalText(_ random: inout Generator) -> String? {
        Bool.random(using: &random) ? nil : text(&random)
    }

    /// Every member present or absent at random: the hand-written `change` must leave out exactly what
    /// `encodeIfPresent` leaves out.
    static func change(_ random: inout Generator) -> EventChange {
        EventChange(
            fromProductId: optionalText(&random), toProductId: optionalText(&random), direction: optionalText(&random),
            effective: optionalText(&random), reason: optionalText(&random), fromAccountId: optionalText(&random),
            toAccountId: optionalText(&random), previousExpiresAt: date(&random), expiresAt: date(&random),
            productId: optionalText(&random), transactionId: optionalText(&random), meter: optionalText(&random),
            amount: integer(&random), bucket: optionalText(&random), refundRequestId: optionalText(&random), answerBy: date(&random),
            deadline: date(&random), grantId: optionalText(&random), tier: optionalText(&random), group: optionalText(&random),
            sources: Bool.random(using: &random) ? nil : (0..<Int.random(in: 0...3, using: &random)).map { _ in text(&random) },
            offerIds: Bool.random(using: &random) ? nil : (0..<Int.random(in: 0...3, using: &random)).map { _ in text(&random) },
            appTransactionId: optionalText(&random))
    }

    static func cause(_ random: inout Generator) -> EventCause {
        EventCause(
            eventId: optionalText(&random), notificationType: optionalText(&random), subtype: optionalText(&random),
            transactionId: optionalText(&random), originalTransactionId: optionalText(&random), signedDate: date(&random))
    }

    static func document(_ random: inout Generator) -> AccountStatusResponse {
        let subscription =
            Bool.random(using: &random)
            ? nil
            : SubscriptionState(
                originalTransactionId: text(&random), accountId: nil, productId: text(&random),
                environment: AppStoreEnvironment(rawValue: text(&random)),
                status: [.active, .expired, .gracePeriod, .billingRetry, .revoked].randomElement(using: &random)!,
                willRenew: Bool.random(using: &random), autoRenewProductId: Bool.random(using: &random) ? nil : text(&random),
                pendingProductId: Bool.random(using: &random) ? nil : text(&random), purchaseDate: date(&random),
                expiresAt: date(&random), gracePeriodExpiresAt: date(&random), isTrial: Bool.random(using: &random),
                ownership: Ownership(text(&random)), latestTransactionId: "1", lastEventType: NotificationType("SUBSCRIBED"),
                lastEvent: EventPosition(signedDate: 1, eventId: "e"),
                endReason: nil, billingPlan: BillingPlan(text(&random)),
                commitment: Bool.random(using: &random)
                    ? nil
                    : SubscriptionState.Commitment(
                        period: Int.random(in: 1...12, using: &random), of: 12, endsAt: date(&random), renewsTo: optionalText(&random),
                        priceAfter: integer(&random)),
                winBackOfferIds: (0..<Int.random(in: 0...3, using: &random)).map { _ in text(&random) })
        var meters: [String: MeterCredits] = [:]
        for _ in 0..<Int.random(in: 0...4, using: &random) {
            meters[text(&random, maximum: 6)] = MeterCredits(
                remaining: integer(&random), cycle: integer(&random), topUp: integer(&random) ?? 0, resetsAt: date(&random),
                dailyRemaining: integer(&random), unlimited: Bool.random(using: &random), held: integer(&random) ?? 0)
        }
        let status = AccountStatus(
            state: [.subscribed, .trial, .gracePeriod, .billingRetry, .freeWithCredits, .freeNoCredits].randomElement(using: &random)!,
            entitled: Bool.random(using: &random), subscription: subscription, hadSubscription: Bool.random(using: &random),
            nextChangeAt: date(&random))
        let sources = (0..<Int.random(in: 0...3, using: &random)).map { _ in
            EntitlementSource(
                id: text(&random), kind: [.subscription, .lifetime, .nonRenewing, .grant].randomElement(using: &random)!,
                store: [.appStore, .operatorGrant, .stripe].randomElement(using: &random)!, productId: optionalText(&random),
                tier: optionalText(&random), level: Int.random(in: 1...3, using: &random), group: nil, startsAt: date(&random),
                expiresAt: date(&random), status: .active, entitled: true, willRenew: Bool.random(using: &random),
                managementURL: optionalText(&random))
        }
        var features: [String: FeatureValue] = [:]
        for _ in 0..<Int.random(in: 0...4, using: &random) {
            features[text(&random, maximum: 8)] = [
                .boolean(Bool.random(using: &random)), .number(Double(Int.random(in: -5...500, using: &random))),
                .number(Double(Int.random(in: 0...999, using: &random)) / 8), .text(text(&random)), .level(text(&random)),
            ].randomElement(using: &random)!
        }
        let standing = AccountStanding(
            status: status, credits: AccountCredits(tier: Bool.random(using: &random) ? nil : text(&random), meters: meters),
            entitlements: AccountEntitlements(sources), features: features, subscriptions: [], records: [])
        return AccountStatusResponse(
            accountId: AccountID(text(&random, maximum: 40).replacingOccurrences(of: "\n", with: "n")) ?? AccountID("fallback")!,
            standing: standing, now: date(&random) ?? Date())
    }

    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }

    @Test func theStatusAnswerIsWhatJSONEncoderWrites() throws {
        var random = Generator(state: 23)
        for _ in 0..<2_000 {
            let document = Self.document(&random)
            let expected = String(decoding: try Self.encoder.encode(document), as: UTF8.self)
            #expect(String(decoding: document.json, as: UTF8.self) == expected)
        }
    }

    @Test func anEventBodyIsWhatJSONEncoderWrites() throws {
        var random = Generator(state: 42)
        for _ in 0..<500 {
            let document = Self.document(&random)
            let draft = EventDraft(
                type: .subscriptionRenewed, key: Self.text(&random), account: document.accountId,
                subscription: Bool.random(using: &random) ? nil : Self.text(&random),
                environment: Bool.random(using: &random) ? .production : .init(rawValue: Self.text(&random)),
                change: Self.change(&random), cause: Self.cause(&random))
            let data = EventData(draft: draft, status: document)
            #expect(try data.json() == String(decoding: try Self.encoder.encode(data), as: UTF8.self))
        }
    }

    /// The writer's own paths, against `JSONEncoder`: integers written digit by digit at their extremes, and strings
    /// copied whole (nothing to escape) beside those escaped byte by byte.
    @Test func integersAndStringsAreWhatJSONEncoderWrites() throws {
        let integers: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, 1_000_000_007, -1_000_000_007, Int64.max, Int64.min, Int64.max - 1, Int64.min + 1]
        let strings = [
            "", "a", "ai_requests", "2026-11-29T14:26:40Z", "é😀\u{2028}", "a/b", "a\"b", "a\\b", "line\nbreak", "\u{01}", "\u{1F}", "\u{7F}",
            String(repeating: "x", count: 100), String(repeating: "é", count: 40) + "/",
        ]
        var writer = JSONWriter()
        writer.beginArray()
        for integer in integers {
            writer.element()
            writer.integer(integer)
        }
        for string in strings {
            writer.element()
            writer.string(string)
        }
        writer.endArray()
        let expected = try JSONEncoder().encode(integers.map(JSONValue.integer) + strings.map(JSONValue.string))
        #expect(String(decoding: writer.bytes, as: UTF8.self) == String(decoding: expected, as: UTF8.self))
    }

    enum JSONValue: Encodable {
        case integer(Int64), string(String)

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .integer(let value): try container.encode(value)
            case .string(let value): try container.encode(value)
            }
        }
    }

    @Test func datesAreWholeSecondsInUTC() {
        var writer = JSONWriter()
        writer.date(Date(timeIntervalSince1970: 1_795_962_400.999))
        writer.date(Date(timeIntervalSince1970: -0.5))
        writer.date(Date(timeIntervalSince1970: 951_782_400))  // 2000-02-29, a leap day of a century leap year
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #""2026-11-29T14:26:40Z""1969-12-31T23:59:59Z""2000-02-29T00:00:00Z""#)
    }
}
