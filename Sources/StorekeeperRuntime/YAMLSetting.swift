import Credits
import Foundation
import Yams

/// A variable that holds either the path of a YAML file or the YAML (or JSON) itself, as `STOREKEEPER_WEBHOOKS` and
/// `STOREKEEPER_REFUND_POLICY` do.
enum YAMLSetting {
    /// `value` decoded as `Value`, or a one-line problem naming `place`.
    static func decode<Value: Decodable>(
        _ type: Value.Type, from value: String, place: String, keys: ConfigurationKeys
    ) throws(ConfigurationError) -> Value {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        let isInline = trimmed.hasPrefix("{") || value.contains("\n") || value.contains(": ")
        let text: String
        if isInline {
            text = value
        } else if let read = try? String(contentsOfFile: value, encoding: .utf8) {
            text = read
        } else {
            throw ConfigurationError(problems: ["\(place) (\(value)): cannot read the file"])
        }
        let unknown = keys.problems(in: text, place: place)
        guard unknown.isEmpty else { throw ConfigurationError(problems: unknown) }
        return try YAMLDiagnosis.decode(Value.self, from: text, place: place).get()
    }
}
