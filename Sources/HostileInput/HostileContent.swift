import AppStoreModels
import Foundation
import LocalSigning

/// Signed notifications whose content no real purchase has: dates outside 1970…9999, negative or enormous prices
/// and quantities, NUL bytes, 100 KB ids, nesting and key counts at and past the parser's limits. Signed with a
/// trusted chain they test that authentic absurdity is refused or recorded, never fatal; signed with any other
/// chain, that nothing is read before the chain is trusted. The drill, the fuzz test and the benchmark share them.
public struct HostileContent: Sendable {
    /// What the intake must answer for a notification built with a trusted chain.
    public enum Expectation: String, Sendable {
        /// 200 `accepted`, and its job records `rejected_content`.
        case rejectedContent = "rejected_content"
        /// 400: refused before anything is stored.
        case refused
        /// 200 `accepted`, and applied as usual.
        case applied
    }

    /// Where a hostile value goes.
    public enum Place: String, Sendable, CaseIterable {
        case envelope, transaction
        case renewalInfo = "renewal info"
    }

    /// One field set to one raw JSON value.
    public struct Mutation: Sendable {
        public var place: Place
        public var field: String
        /// The value as JSON text, inserted as written.
        public var json: String
        public var expectation: Expectation

        public init(_ place: Place, _ field: String, _ json: String, _ expectation: Expectation) {
            self.place = place
            self.field = field
            self.json = json
            self.expectation = expectation
        }

        public var name: String { "\(place.rawValue) \(field) = \(json.count > 40 ? "\(json.prefix(24))… (\(json.utf8.count) bytes)" : json)" }
    }

    /// The named attacks: each limit at and past its edge.
    public static let mutations: [Mutation] = [
        Mutation(.transaction, "expiresDate", "9223372036854775807", .rejectedContent),
        Mutation(.transaction, "purchaseDate", "-9223372036854775808", .rejectedContent),
        Mutation(.transaction, "expiresDate", year10000, .rejectedContent),
        Mutation(.transaction, "expiresDate", "253402300799999", .applied),
        Mutation(.transaction, "originalPurchaseDate", "-1", .rejectedContent),
        Mutation(.transaction, "revocationDate", "1e300", .refused),
        Mutation(.transaction, "price", "-1", .rejectedContent),
        Mutation(.transaction, "price", "1000000000001", .rejectedContent),
        Mutation(.transaction, "price", "9223372036854775807", .rejectedContent),
        Mutation(.transaction, "price", "9223372036854775808", .refused),
        Mutation(.transaction, "quantity", "0", .rejectedContent),
        Mutation(.transaction, "quantity", "2147483647", .rejectedContent),
        Mutation(.transaction, "quantity", "-2147483648", .rejectedContent),
        Mutation(.transaction, "revocationPercentage", "100001", .rejectedContent),
        Mutation(.transaction, "productId", #""pro.\u0000monthly""#, .rejectedContent),
        Mutation(.transaction, "productId", "\"" + String(repeating: "p", count: 100_000) + "\"", .rejectedContent),
        Mutation(.transaction, "productId", "\"" + String(repeating: "p", count: 257) + "\"", .rejectedContent),
        Mutation(.transaction, "appAccountToken", #""\u0000""#, .rejectedContent),
        // The renewal info then names another subscription: malformed.
        Mutation(.transaction, "originalTransactionId", "\"" + String(repeating: "9", count: 300) + "\"", .refused),
        Mutation(.transaction, "webOrderLineItemId", "\"" + String(repeating: "9", count: 300) + "\"", .rejectedContent),
        Mutation(.transaction, "transactionReason", "\"" + String(repeating: "r", count: 4_097) + "\"", .rejectedContent),
        Mutation(.transaction, "offerIdentifier", #""\ud800""#, .refused),
        Mutation(.transaction, "advancedCommerceInfo", nested(depth: 60), .applied),
        Mutation(.transaction, "advancedCommerceInfo", nested(depth: 70), .refused),
        Mutation(.transaction, "advancedCommerceInfo", keys(1_024), .applied),
        Mutation(.transaction, "advancedCommerceInfo", keys(1_025), .refused),
        Mutation(.transaction, "advancedCommerceInfo", #"{"a":"\u0000"}"#, .rejectedContent),
        Mutation(.transaction, "advancedCommerceInfo", #"{"\u0061":1,"a":2}"#, .refused),
        Mutation(.transaction, "signedDate", year10000, .refused),
        Mutation(.transaction, "signedDate", "915148800000", .refused),
        Mutation(.renewalInfo, "renewalDate", "9223372036854775807", .rejectedContent),
        Mutation(.renewalInfo, "gracePeriodExpiresDate", "-9223372036854775808", .rejectedContent),
        Mutation(.renewalInfo, "renewalPrice", "-5", .rejectedContent),
        Mutation(.renewalInfo, "autoRenewStatus", "2147483647", .rejectedContent),
        Mutation(.renewalInfo, "autoRenewProductId", #""max\u0000""#, .rejectedContent),
        Mutation(.envelope, "subtype", #""INITIAL_\u0000BUY""#, .rejectedContent),
        Mutation(.envelope, "signedDate", year10000, .refused),
        Mutation(.envelope, "signedDate", "9223372036854775807", .refused),
        Mutation(.envelope, "signedDate", "-1", .refused),
        Mutation(.envelope, "notificationType", "\"" + String(repeating: "T", count: 300) + "\"", .rejectedContent),
    ]

    /// 10000-01-01T00:00:00Z in milliseconds: one past the last date ``ContentLimits`` allows.
    public static let year10000 = "253402300800000"

    /// Values a fuzzer picks from, by kind of field.
    static let dateValues = ["0", "-1", "253402300799999", year10000, "9223372036854775807", "-9223372036854775808", "1e300", "1.5", "\"1\"", "null"]
    static let numberValues = ["-1", "0", "1", "1000000000000", "1000000000001", "2147483648", "9223372036854775807", "-9223372036854775809", "1e3"]
    static let stringValues = [
        #""\u0000""#, #""a\u0000b""#, "\"\(String(repeating: "x", count: 256))\"", "\"\(String(repeating: "x", count: 257))\"",
        "\"\(String(repeating: "y", count: 4_097))\"", "\"\(String(repeating: "z", count: 100_000))\"", #""\ud83d\ude00""#, #""\ud800""#,
        #""\/\b\f\n\r\t""#, "\"\u{7F}\u{80}\u{FFFF}\"", "7", "[]", "{}",
    ]
    static let structureValues = [nested(depth: 30), nested(depth: 64), nested(depth: 65), keys(1_024), keys(1_025), #"{"k":1,"\u006b":2}"#]
    static let fields: [(Place, String, [String])] = [
        (.transaction, "expiresDate", dateValues), (.transaction, "purchaseDate", dateValues),
        (.transaction, "originalPurchaseDate", dateValues), (.transaction, "revocationDate", dateValues),
        (.transaction, "signedDate", dateValues), (.transaction, "price", numberValues), (.transaction, "quantity", numberValues),
        (.transaction, "revocationPercentage", numberValues), (.transaction, "offerType", numberValues),
        (.transaction, "productId", stringValues), (.transaction, "appAccountToken", stringValues),
        (.transaction, "transactionId", stringValues), (.transaction, "originalTransactionId", stringValues),
        (.transaction, "webOrderLineItemId", stringValues), (.transaction, "currency", stringValues),
        (.transaction, "advancedCommerceInfo", structureValues + stringValues),
        (.renewalInfo, "renewalDate", dateValues), (.renewalInfo, "gracePeriodExpiresDate", dateValues),
        (.renewalInfo, "renewalPrice", numberValues), (.renewalInfo, "autoRenewStatus", numberValues),
        (.renewalInfo, "autoRenewProductId", stringValues), (.renewalInfo, "advancedCommerceInfo", structureValues),
        (.envelope, "subtype", stringValues), (.envelope, "signedDate", dateValues), (.envelope, "notificationType", stringValues),
    ]

    /// `count` random combinations of one to three hostile fields (their expectation is not predicted: any of
    /// 200 and 400 is right, as long as nothing crashes and no job fails).
    public static func fuzzed(count: Int, using random: inout some RandomNumberGenerator) -> [[Mutation]] {
        (0..<count).map { _ in
            (0..<Int.random(in: 1...3, using: &random)).map { _ in
                let (place, field, values) = fields.randomElement(using: &random)!
                return Mutation(place, field, values.randomElement(using: &random)!, .refused)
            }
        }
    }

    /// `[[[…]]]`, `depth` deep.
    static func nested(depth: Int) -> String { String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }

    /// An object of `count` distinct keys.
    static func keys(_ count: Int) -> String { "{" + (0..<count).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}" }

    /// The `signedPayload` of `event` with `mutations` applied, every JWS signed by `signer`.
    public static func signedPayload(
        _ event: SimulatedEvent, mutations: [Mutation], signer: NotificationSigner, notificationUUID: UUID = UUID()
    ) throws -> String {
        func sign(_ value: some Encodable, _ place: Place) throws -> String {
            try signer.signer.sign(payloadBytes: apply(mutations.filter { $0.place == place }, to: try JSONEncoder().encode(value)))
        }
        var data = NotificationData(
            appAppleId: signer.appAppleId, bundleId: signer.bundleId, bundleVersion: "1", environment: signer.environment,
            status: event.status)
        if let transaction = event.transaction { data.signedTransactionInfo = try sign(transaction, .transaction) }
        if let renewal = event.renewalInfo { data.signedRenewalInfo = try sign(renewal, .renewalInfo) }
        let payload = NotificationPayload(
            notificationType: event.notificationType, subtype: event.subtype,
            notificationUUID: notificationUUID.uuidString.lowercased(), data: data, signedDate: event.signedDate)
        return try sign(payload, .envelope)
    }

    /// `json` (an object) with each mutated field removed and then written first, as its raw text.
    static func apply(_ mutations: [Mutation], to json: Data) throws -> Data {
        guard !mutations.isEmpty else { return json }
        guard var object = try JSONSerialization.jsonObject(with: json) as? [String: Any] else { return json }
        var fields: [String: String] = [:]
        for mutation in mutations {
            object[mutation.field] = nil
            fields[mutation.field] = mutation.json
        }
        let rest = String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
        let written = fields.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",")
        return Data(("{" + written + (rest == "{}" ? "}" : "," + rest.dropFirst())).utf8)
    }
}
