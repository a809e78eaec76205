import Foundation

/// Splits a SQL script into statements at top-level semicolons, respecting quotes, dollar quotes and comments —
/// PostgreSQL's extended protocol runs one statement per query.
enum SQLScript {
    static func statements(in script: String) -> [String] {
        var statements: [String] = []
        var current = ""
        var characters = Array(script)[...]
        while let character = characters.popFirst() {
            switch character {
            case "-" where characters.first == "-":
                while let next = characters.popFirst(), next != "\n" {}
                current.append("\n")
            case "'", "\"":
                current.append(character)
                while let next = characters.popFirst() {
                    current.append(next)
                    if next == character { break }
                }
            case "$":
                // A dollar-quote tag: $$ or $tag$.
                let tagBody = characters.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                guard characters.dropFirst(tagBody.count).first == "$" else {
                    current.append(character)
                    continue
                }
                let tag = "$" + String(tagBody) + "$"
                characters = characters.dropFirst(tagBody.count + 1)
                current += tag
                let rest = String(characters)
                if let end = rest.range(of: tag) {
                    current += rest[..<end.upperBound]
                    characters = characters.dropFirst(rest.distance(from: rest.startIndex, to: end.upperBound))
                } else {
                    current += rest
                    characters = []
                }
            case ";":
                appendStatement(current, to: &statements)
                current = ""
            default:
                current.append(character)
            }
        }
        appendStatement(current, to: &statements)
        return statements
    }

    private static func appendStatement(_ text: String, to statements: inout [String]) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if !trimmed.isEmpty { statements.append(trimmed) }
    }
}
