import Crypto
import Foundation

/// What an operator key may do. Each role includes the ones before it: a `support` key reads what a `viewer` reads,
/// an `admin` key does what `support` does.
public enum OperatorRole: String, Sendable, Comparable, CaseIterable, Codable {
    /// Reads every admin page and answer; changes nothing.
    case viewer
    /// Helps a customer: grants, credit adjustments, webhook redelivery, renewal extensions.
    case support
    /// Everything: the queue (requeue, cancel), the dev clock, erasure, mass extensions.
    case admin

    public static func < (lhs: OperatorRole, rhs: OperatorRole) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// `viewer, support or admin`, for messages.
    public static let list = allCases.map(\.rawValue).joined(separator: ", ")
}

/// One entry of `STOREKEEPER_ADMIN_KEYS`: `name:role:key`, or — in a list of bare keys only — a bare key (an admin
/// named after its fingerprint, so the keys of earlier versions keep working and their actions are still told apart in
/// the audit log).
public struct OperatorKey: Sendable, Equatable {
    public var name: String
    public var role: OperatorRole
    public var key: String

    public init(name: String, role: OperatorRole, key: String) {
        self.name = name
        self.role = role
        self.key = key
    }

    /// The entries of `STOREKEEPER_ADMIN_KEYS`, or why they cannot be used — one line per problem, naming the entry by
    /// its name or position, never by its key.
    public static func keys(from entries: [String]) -> Result<[OperatorKey], OperatorKeyProblems> {
        var keys: [OperatorKey] = []
        var problems: [String] = []
        for (index, entry) in entries.enumerated() {
            do throws(EntryProblem) {
                keys.append(try parse(entry))
            } catch {
                problems.append("entry \(index + 1): \(error.message)")
            }
        }
        // A bare key is an admin. Beside named entries it is most often not one at all but the tail of a named key that
        // held a comma (the list's separator), which would make a viewer's key half an admin's: refused, and the
        // operator names it (`name:admin:<the same key>` keeps every client working).
        let named = entries.contains { $0.contains(":") }
        for (index, entry) in entries.enumerated() where named && !entry.contains(":") && !entry.isEmpty {
            problems.append(
                "entry \(index + 1): a bare key beside name:role:key entries — write it as name:admin:<key> (the same key keeps working); "
                    + "a key cannot hold a comma")
        }
        for name in Dictionary(grouping: keys, by: \.name).filter({ $0.value.count > 1 }).keys.sorted() {
            problems.append("the name \(name) is given to more than one key: the audit log could not tell them apart")
        }
        if Set(keys.map(\.key)).count != keys.count { problems.append("the same key is listed more than once") }
        return problems.isEmpty ? .success(keys) : .failure(OperatorKeyProblems(problems: problems))
    }

    struct EntryProblem: Error {
        var message: String
    }

    static func parse(_ entry: String) throws(EntryProblem) -> OperatorKey {
        let parts = entry.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count > 1 else {
            guard !entry.isEmpty else { throw EntryProblem(message: "an empty key") }
            return OperatorKey(name: fingerprintName(of: entry), role: .admin, key: entry)
        }
        guard parts.count == 3 else { throw EntryProblem(message: "give name:role:key (or a bare key with no colon)") }
        // A malformed entry may be a key with colons in it: no part of it is ever repeated in the message.
        let (name, roleText, key) = (String(parts[0]), String(parts[1]), String(parts[2]))
        guard isName(name) else { throw EntryProblem(message: "an operator name is 1–64 letters, digits, '.', '_', '-' or '@'") }
        guard let role = OperatorRole(rawValue: roleText) else { throw EntryProblem(message: "the role is not one of \(OperatorRole.list)") }
        guard !key.isEmpty else { throw EntryProblem(message: "an empty key") }
        return OperatorKey(name: name, role: role, key: key)
    }

    /// Keys shorter than this are accepted (earlier versions did) but named at start-up as guessable.
    public static let recommendedLength = 24

    /// Whether the key is shorter than ``recommendedLength`` — also what a key split at a comma it contained becomes.
    public var isShort: Bool { key.utf8.count < Self.recommendedLength }

    /// `key-` and the first 8 hex digits of the key's SHA-256: stable across restarts, and says nothing of the key.
    public static func fingerprintName(of key: String) -> String {
        "key-" + SHA256.hash(data: Data(key.utf8)).prefix(4).map { String(format: "%02x", $0) }.joined()
    }

    static func isName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._-@".unicodeScalars.contains($0)) }
    }
}

/// Why `STOREKEEPER_ADMIN_KEYS` cannot be used.
public struct OperatorKeyProblems: Error, Sendable {
    public var problems: [String]
}
