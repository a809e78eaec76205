extension String {
    /// What a text holds, for the rules that refuse control characters (Unicode's category Cc: C0, DEL and C1).
    public enum ControlCharacterScan: Sendable {
        /// At least one control character.
        case control
        /// ASCII only, none of them control characters: each byte is a character.
        case ascii
        /// Beyond ASCII, no control character.
        case unicode
    }

    /// Whether the text holds a control character, and whether it is ASCII. Ids and keys are ASCII nearly always and
    /// are checked on every request and row read: there the control characters are C0 and DEL, so one pass over the
    /// bytes decides without each scalar's Unicode properties (0.6 % of `serve` in a spend when it asked them).
    public var controlCharacterScan: ControlCharacterScan {
        for byte in utf8 {
            if byte >= 0x80 {
                return unicodeScalars.contains { $0.properties.generalCategory == .control } ? .control : .unicode
            }
            if byte < 0x20 || byte == 0x7F { return .control }
        }
        return .ascii
    }
}
