/// A value written as one string in JSON, YAML and the database — the enums whose `unknown(String)` case keeps what
/// outside data said: decoding never fails on a word it does not know, and encoding writes the word back.
public protocol TextCoded: Codable {
    init(_ text: String)
    var text: String { get }
}

extension TextCoded {
    public init(from decoder: any Decoder) throws { self.init(try decoder.singleValueContainer().decode(String.self)) }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}
