import Foundation
import Persistence
import StorekeeperRuntime

/// A change made from the command line, in the audit log beside the dashboard's and the admin API's (docs/operations.md,
/// "The audit log"): the operator is the shell's user (`shell:<user>`, role `shell`), the request the command without
/// its arguments (`storekeeper grants add`: as the admin API keeps a route's pattern, never its values — an erasure
/// rewrites the entry's account, target, before and after, not its request), the status the command's exit status. A
/// change the log could not take is reported as the admin API reports it — made, not audited, not to be repeated
/// blindly — and the command exits 1.
enum CommandAudit {
    /// One change of the command: what, on which account and target, the state before and after (the API's encoding).
    struct Note {
        var action: String
        var account: String? = nil
        var target: String? = nil
        var before: (any Encodable)? = nil
        var after: (any Encodable)? = nil
    }

    /// Appends `notes`, all or none, as `command`'s (its subcommand path, such as `grants add`) ending in `status`.
    static func record(_ command: String, status: Int = 0, _ notes: [Note]) async throws {
        guard !notes.isEmpty else { return }
        let at = await operatorNow()
        let entries = notes.map { note in
            OperatorAction(
                at: at, operatorName: "shell:\(user)", role: "shell", action: note.action, request: "storekeeper \(command)", status: status,
                accountId: note.account, target: note.target, before: note.before.flatMap(json), after: note.after.flatMap(json))
        }
        do {
            try await withDatabase(label: "storekeeper.audit") { client, logger in
                try await OperatorActions(client: client, logger: logger).append(entries)
            }
        } catch {
            throw CommandFailure(
                "the change was made, but its audit record could not be written (\(CommandFailure.describe(error))); do not repeat it blindly")
        }
    }

    /// One change: `record(command, status: status, [Note(...)])`.
    static func record(
        _ action: String, command: String, status: Int = 0, account: String? = nil, target: String? = nil, before: (any Encodable)? = nil,
        after: (any Encodable)? = nil
    ) async throws {
        try await record(command, status: status, [Note(action: action, account: account, target: target, before: before, after: after)])
    }

    /// Who ran the command: the user `sudo` ran it for, else the login's.
    static var user: String {
        let environment = ProcessInfo.processInfo.environment
        let name = [environment["SUDO_USER"], environment["USER"], environment["LOGNAME"]].compactMap { $0 }.first { !$0.isEmpty }
        return String((name ?? "uid-\(getuid())").prefix(64))
    }

    private static func json(_ value: any Encodable) -> String? {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) }
    }
}
