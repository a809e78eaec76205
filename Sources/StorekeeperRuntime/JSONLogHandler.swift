import Foundation
import Logging

/// A log handler that writes one JSON object per line to standard error: `time`, `level`, `message`, `label` and
/// the metadata. Callers log ids only; payloads, keys and tokens never go into metadata.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    private let label: String

    public init(label: String) { self.label = label }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var object: [String: String] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { _, new in new }) {
            object[key] = "\(value)"
        }
        object["time"] = Date().formatted(.iso8601)
        object["level"] = event.level.rawValue
        object["message"] = "\(event.message)"
        object["label"] = label
        guard var line = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        line.append(0x0A)
        FileHandle.standardError.write(line)
    }
}

/// Installs the process-wide log handler for `format`.
public func bootstrapLogging(format: StorekeeperConfiguration.LogFormat, level: Logger.Level = .info) {
    LoggingSystem.bootstrap { label in
        switch format {
        case .json:
            var handler = JSONLogHandler(label: label)
            handler.logLevel = level
            return handler
        case .text:
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}
