import Credits
import Foundation

/// `STOREKEEPER_REFUND_POLICY`: the path of a YAML file, or the YAML (or JSON) itself:
///
/// ```yaml
/// answerAfterMinutes: 60                # the app's window to answer itself (0–600)
/// sampleContentProvided: false          # a free tier or trial let the customer try before buying
/// subscriptionDeclineAbovePercent: 50   # ask to decline when more of the period's credits were used
/// consumableDeclineAbovePercent: 50     # … of a top-up's credits
/// ```
enum RefundPolicyConfiguration {
    struct File: Decodable {
        var answerAfterMinutes: Int?
        var sampleContentProvided: Bool?
        var subscriptionDeclineAbovePercent: Int?
        var consumableDeclineAbovePercent: Int?
    }

    /// The policy `value` describes, or every problem found.
    static func policy(from value: String) throws(ConfigurationError) -> RefundPolicy {
        let place = "STOREKEEPER_REFUND_POLICY"
        let file = try YAMLSetting.decode(File.self, from: value, place: place, keys: .refundPolicy)
        var problems: [String] = []
        let defaults = RefundPolicy()
        let minutes = file.answerAfterMinutes ?? Int(defaults.answerAfter / 60)
        if !(0...600).contains(minutes) {
            problems.append("\(place): answerAfterMinutes must be 0–600 (Apple's deadline is 12 hours), got \(minutes)")
        }
        for (name, percent) in [
            ("subscriptionDeclineAbovePercent", file.subscriptionDeclineAbovePercent),
            ("consumableDeclineAbovePercent", file.consumableDeclineAbovePercent),
        ] {
            if let percent, !(0...100).contains(percent) { problems.append("\(place): \(name) must be 0–100, got \(percent)") }
        }
        guard problems.isEmpty else { throw ConfigurationError(problems: problems) }
        return RefundPolicy(
            answerAfter: TimeInterval(minutes * 60), sampleContentProvided: file.sampleContentProvided ?? defaults.sampleContentProvided,
            subscriptionDeclineAbovePercent: file.subscriptionDeclineAbovePercent ?? defaults.subscriptionDeclineAbovePercent,
            consumableDeclineAbovePercent: file.consumableDeclineAbovePercent ?? defaults.consumableDeclineAbovePercent)
    }
}

extension RefundPolicy {
    /// The policy `STOREKEEPER_REFUND_POLICY` in `environment` sets (the default without it): `serve`'s, and that of
    /// `accounts show`, which shows what an open refund request would be answered.
    public static func configured(in environment: [String: String]) throws(ConfigurationError) -> RefundPolicy {
        guard let text = environment["STOREKEEPER_REFUND_POLICY"]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else {
            return RefundPolicy()
        }
        return try RefundPolicyConfiguration.policy(from: text)
    }
}
