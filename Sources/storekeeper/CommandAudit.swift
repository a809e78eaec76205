import Foundation
import Persistence
import StorekeeperRuntime

/// A change made from the command line, in the audit log beside the dashboard's and the admin API's (docs/security.md,
/// "Audit log"): the operator is the shell's user (`shell:<user>`, role `shell`), the request the command line, the
/// status the exit status (0). A change the log could not take is reported as the admin API reports it — made, not
/// audited, not to be repeated blindly — and the command exits 1.
enum CommandAudit {
    /// Appends that this command did `action`, with the state before and after as JSON (the API's encoding).
    static func record(
        _ action: String, account: String? = nil, target: String? = nil, before: (any Encodable)? = nil, after: (any Encodable)? = nil
    ) async throws {
        let entry = OperatorAction(
            at: await operatorNow(), operatorName: "shell:\(user)", role: "shell", action: action, request: request, status: 0,
            accountId: account, target: target, before: before.flatMap(json), after: after.flatMap(json))
        do {
            try await withDatabase(label: "storekeeper.audit") { client, logger in
                try await OperatorActions(client: client, logger: logger).append([entry])
            }
        } catch {
            throw CommandFailure(
                "the change was made, but its audit record could not be written (\(CommandFailure.describe(error))); do not repeat it blindly")
        }
    }

    /// Who ran the command: the user `sudo` ran it for, else the login's.
    static var user: String {
        let environment = ProcessInfo.processInfo.environment
        let name = [environment["SUDO_USER"], environment["USER"], environment["LOGNAME"]].compactMap { $0 }.first { !$0.isEmpty }
        return String((name ?? "uid-\(getuid())").prefix(64))
    }

    /// The command as typed, without the executable's path (at most 500 characters, as a route is).
    static var request: String {
        String((["storekeeper"] + CommandLine.arguments.dropFirst()).joined(separator: " ").prefix(500))
    }

    private static func json(_ value: any Encodable) -> String? {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) }
    }
}
