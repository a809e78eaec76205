/// Why an operator did something (a grant, a credit adjustment): required, one line of at most 500 characters, with no
/// control characters and no bidirectional overrides that would make a listing lie about what follows them.
public enum OperatorReason {
    public static let maximumLength = 500

    /// What is wrong with `text` as a reason, or `nil`.
    public static func problem(_ text: String?) -> String? {
        guard let text, !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return "say why: reason is required" }
        if text.count > maximumLength { return "reason is \(text.count) characters; at most \(maximumLength)" }
        if text.unicodeScalars.contains(where: {
            [.control, .format].contains($0.properties.generalCategory) || $0 == "\u{2028}" || $0 == "\u{2029}"
        }) {
            return "reason must be one line without control or formatting characters"
        }
        return nil
    }
}
