import Foundation
import Yams

/// Reads a YAML settings file into `T` and says, with line numbers, everything wrong with it at once: where the
/// text is not YAML, and each value of the wrong kind (not only the first, which is all a decoder reports).
enum YAMLDiagnosis {
    /// `T` decoded from `text`, or one problem per wrong thing, each prefixed with `place`
    /// (`STOREKEEPER_TIERS (…): line 12: tiers[pro].allowances.ai_requests.per_cycle: must be a whole number, got "many"`).
    static func decode<T: Decodable>(_ type: T.Type, from text: String, place: String) -> Result<T, ConfigurationError> {
        decode(type, from: text).mapError { ConfigurationError(problems: $0.problems.map { "\(place): \($0)" }) }
    }

    private static func decode<T: Decodable>(_ type: T.Type, from text: String) -> Result<T, ConfigurationError> {
        var node: Node
        do {
            guard let parsed = try Yams.compose(yaml: text) else { return .failure(ConfigurationError(problems: ["the file is empty"])) }
            node = parsed
        } catch let error as YamlError {
            return .failure(ConfigurationError(problems: [syntax(error)]))
        } catch {
            return .failure(ConfigurationError(problems: ["not valid YAML: \(error)"]))
        }
        var problems: [String] = []
        var seen: Set<String> = []
        // Each wrong value is replaced in a copy by one of the kind wanted and the copy decoded again, so the next is
        // found too; a problem met twice (a stand-in its decoder refuses as well) ends the search.
        for _ in 0..<100 {
            do {
                let decoded = try YAMLDecoder().decode(type, from: node)
                return problems.isEmpty ? .success(decoded) : .failure(ConfigurationError(problems: problems))
            } catch let error as DecodingError {
                let (path, problem, stand) = describe(error, in: node)
                let line = path.isEmpty ? nil : value(at: path, in: node)?.mark?.line
                let keys = path.isEmpty ? "the top level" : name(of: path, in: node)
                guard seen.insert(keys).inserted else { break }
                problems.append((line.map { "line \($0): " } ?? "") + "\(keys): \(problem)")
                guard !path.isEmpty, let stand, let next = replacing(at: path, in: node, with: stand) else { break }
                node = next
            } catch {
                problems.append("\(error)")
                break
            }
        }
        return .failure(ConfigurationError(problems: problems))
    }

    /// "line 3, column 7: mapping values are not allowed in this context".
    static func syntax(_ error: YamlError) -> String {
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _), .composer(_, let problem, let mark, _):
            return "not valid YAML at line \(mark.line), column \(mark.column): \(problem)"
        case .duplicatedKeysInMapping(let duplicates, let context):
            return "line \(context.mark.line): a key given twice: \(duplicates.sorted().joined(separator: ", "))"
        default:
            return "not valid YAML: \(error)"
        }
    }

    /// The path of the problem, what is wrong in words, and a value of the kind wanted to stand in for the wrong one
    /// (nil: the problem cannot be stepped over).
    static func describe(_ error: DecodingError, in node: Node) -> (path: [any CodingKey], problem: String, stand: Node?) {
        switch error {
        case .typeMismatch(let type, let context):
            let found = value(at: context.codingPath, in: node)
            let given = found?.scalar.map { " \"\($0.string)\"" } ?? (found?.mapping != nil ? " a mapping" : found?.sequence != nil ? " a list" : "")
            let (kind, stand): (String, Node?) =
                switch type {
                case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type: ("a whole number", Node("0"))
                case is Double.Type, is Decimal.Type: ("a number", Node("0"))
                case is Bool.Type: ("true or false", Node("false"))
                case is String.Type: ("text", Node("x"))
                default: ("\(type)", nil)
                }
            return (context.codingPath, "must be \(kind), got\(given)", stand)
        case .keyNotFound(let key, let context):
            return (context.codingPath, "\(key.stringValue) is missing", nil)
        case .valueNotFound(_, let context), .dataCorrupted(let context):
            return (context.codingPath, context.debugDescription, nil)
        @unknown default:
            return ([], "\(error)", nil)
        }
    }

    /// `path` as a reader finds it in the file: a list's item by its `id` (or `name`) where it has one (`tiers[pro]…`),
    /// else by its position counted from 1 (`top_ups[2]`).
    static func name(of path: [any CodingKey], in node: Node) -> String {
        var text = ""
        for (index, key) in path.enumerated() {
            if let position = key.intValue {
                let item = value(at: Array(path[...index]), in: node)
                text += "[" + itemName(item, position: position) + "]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text
    }

    /// A list item as a reader finds it: its `id`, else its `name`, else its position counted from 1.
    static func itemName(_ item: Node?, position: Int) -> String {
        item?.mapping?["id"]?.string ?? item?.mapping?["name"]?.string ?? String(position + 1)
    }

    static func value(at path: [any CodingKey], in node: Node) -> Node? {
        guard let key = path.first else { return node }
        let child: Node? =
            if let index = key.intValue, let sequence = node.sequence, sequence.indices.contains(index) { sequence[index] } else {
                node.mapping?[key.stringValue]
            }
        return child.flatMap { value(at: Array(path.dropFirst()), in: $0) }
    }

    static func replacing(at path: [any CodingKey], in node: Node, with new: Node) -> Node? {
        guard let key = path.first else { return new }
        if let index = key.intValue, var sequence = node.sequence, sequence.indices.contains(index) {
            guard let child = replacing(at: Array(path.dropFirst()), in: sequence[index], with: new) else { return nil }
            sequence[index] = child
            return .sequence(sequence)
        }
        guard var mapping = node.mapping, let old = mapping[key.stringValue],
            let child = replacing(at: Array(path.dropFirst()), in: old, with: new)
        else { return nil }
        mapping[key.stringValue] = child
        return .mapping(mapping)
    }
}
