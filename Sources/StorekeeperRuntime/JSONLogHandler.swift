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
        var fields = metadata.merging(event.metadata ?? [:], uniquingKeysWith: { _, new in new }).mapValues { "\($0)" }
        fields["time"] = Self.timestamp(Date())
        fields["level"] = event.level.rawValue
        fields["message"] = "\(event.message)"
        fields["label"] = label
        // Written by hand (keys sorted, one write per line): a log line per notification must cost microseconds.
        var line: [UInt8] = [UInt8(ascii: "{")]
        line.reserveCapacity(256)
        for (index, key) in fields.keys.sorted().enumerated() {
            if index > 0 { line.append(UInt8(ascii: ",")) }
            Self.appendString(key, to: &line)
            line.append(UInt8(ascii: ":"))
            Self.appendString(fields[key]!, to: &line)
        }
        line.append(contentsOf: [UInt8(ascii: "}"), 0x0A])
        line.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(2, bytes.baseAddress! + offset, bytes.count - offset)
                guard written > 0 else { return }
                offset += written
            }
        }
    }

    /// `text` as a JSON string: quotes, backslashes and control characters escaped.
    static func appendString(_ text: String, to line: inout [UInt8]) {
        line.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): line.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): line.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: line.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: line.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: line.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                line.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
            default: line.append(byte)
            }
        }
        line.append(UInt8(ascii: "\""))
    }

    /// `date` as ISO 8601 in UTC with milliseconds (`2026-11-22T04:07:51.123Z`).
    static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(milliseconds % 1000), 3))Z"
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
