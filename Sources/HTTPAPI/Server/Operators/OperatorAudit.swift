import Foundation
import Persistence
import Synchronization

/// What an admin route changed, noted by the route while it runs and appended to the audit log by
/// ``OperatorMiddleware`` once it has answered: the route knows the before and after, the middleware who asked. A
/// write that notes nothing is still logged, by its route alone, so no change goes unrecorded.
enum OperatorAudit {
    struct Note: Sendable {
        var action: String
        var accountId: String?
        var target: String?
        var before: String?
        var after: String?
    }

    /// The notes of one request.
    final class Notes: Sendable {
        private let notes = Mutex<(notes: [Note], unchanged: Bool)>(([], false))
        func append(_ note: Note) { notes.withLock { $0.notes.append(note) } }
        func markUnchanged() { notes.withLock { $0.unchanged = true } }
        /// What the request noted, and whether it said it changed nothing (a refused form, a key used before).
        var all: (notes: [Note], unchanged: Bool) { notes.withLock { $0 } }
    }

    /// The current request's notes; `nil` outside an admin request.
    @TaskLocal static var notes: Notes?

    /// Notes that this request did `action`, with the state before and after as JSON (the API's own encoding).
    static func note(
        _ action: String, account: String? = nil, target: String? = nil, before: (any Encodable)? = nil, after: (any Encodable)? = nil
    ) {
        notes?.append(Note(action: action, accountId: account, target: target, before: before.flatMap(json), after: after.flatMap(json)))
    }

    /// Notes that this request, although it succeeded, changed nothing: it is not logged.
    static func unchanged() { notes?.markUnchanged() }

    private static func json(_ value: any Encodable) -> String? {
        (try? StorekeeperRequestContext.jsonEncoder.encode(value)).map { String(decoding: $0, as: UTF8.self) }
    }
}
