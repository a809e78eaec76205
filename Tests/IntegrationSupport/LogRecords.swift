import Logging
import Synchronization

/// What a logger was given, for tests that check how something is logged.
final class LogRecords: Sendable {
    private let records = Mutex<[(Logger.Level, String)]>([])

    func append(_ level: Logger.Level, _ message: String) { records.withLock { $0.append((level, message)) } }

    func messages(at level: Logger.Level) -> [String] { records.withLock { $0.filter { $0.0 == level }.map(\.1) } }
}

struct RecordingLogHandler: LogHandler {
    let records: LogRecords
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) { records.append(event.level, event.message.description) }
}
