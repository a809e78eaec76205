import StorekeeperRuntime

/// Figures of one benchmark: human lines, then (with --json) exactly one JSON object on the last line.
struct BenchmarkReport: Sendable {
    var lines: [String] = []
    var fields: [(String, BenchmarkValue)] = []

    enum BenchmarkValue: Sendable {
        case integer(Int)
        case number(Double)
        case text(String)
        /// Not measured.
        case null

        var json: String {
            switch self {
            case .integer(let value): return String(value)
            case .number(let value): return String(format: "%.3f", value)
            case .text(let value): return "\"\(value)\""
            case .null: return "null"
            }
        }
    }

    func print(json: Bool) {
        for line in lines { say(line) }
        if json { say("{" + fields.map { "\"\($0.0)\":\($0.1.json)" }.joined(separator: ",") + "}") }
    }
}
