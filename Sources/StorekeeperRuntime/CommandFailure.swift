import Foundation
import Logging
import Persistence
import PostgresNIO
import SignedData

/// An expected failure of a command, with the one line it prints.
public struct CommandFailure: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }

    /// One line for any error, never a stack trace or SQL detail.
    public static func describe(_ error: any Error) -> String {
        switch error {
        case let error as CommandFailure: return error.description
        case let error as ConfigurationError: return error.description
        case let error as PersistenceError: return error.message
        case let error as VerificationError: return "verification failed: \(error)"
        case let error as PrivateCluster.Failure: return error.description
        case let error as PSQLError:
            if let message = error.serverInfo?[.message] { return "database error: \(message)" }
            return "cannot reach the database (\(error.code))"
        case let error as PostgresTransactionError:
            if let inner = error.closureError { return describe(inner) }
            if let commit = error.commitError { return describe(commit) }
            return "database transaction failed"
        default:
            return "\(error)"
        }
    }
}

/// Writes a line to standard output at once (unbuffered, so it shows when output goes to a file or pipe). When the
/// reader has gone (`storekeeper accounts show ID | head`), the rest of the output is nobody's: the command ends
/// quietly, as a pipeline expects, instead of trapping in `FileHandle.write`.
public func say(_ text: String) {
    do {
        try FileHandle.standardOutput.write(contentsOf: Data((text + "\n").utf8))
    } catch {
        exit(0)
    }
}

/// The logger of a one-shot command: only errors someone must act on; the command's own output says the rest.
public func commandLogger(_ label: String) -> Logger {
    var logger = Logger(label: label)
    logger.logLevel = .critical
    return logger
}
