extension String {
    /// Whether this is 1…`maximumBytes` bytes without control characters (NUL among them): what may reach the
    /// database as a key, id or name. PostgreSQL refuses NUL in text, and an error there would read as an outage.
    func isKey(maximumBytes: Int) -> Bool {
        !isEmpty && utf8.count <= maximumBytes && !unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}
