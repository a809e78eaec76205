import Dispatch
import Foundation
import Synchronization

/// What to undo when `storekeeper-bench` is interrupted (SIGINT, SIGTERM): a benchmark's private PostgreSQL cluster
/// and its `serve` and `work` run beside it as other processes, which the default action of those signals would leave
/// running (and a private cluster busy in a bulk load for minutes). Each holder registers its clean-up while it holds
/// the resource; on a signal every one runs, and the process exits with 128 + the signal.
enum Interruption {
    private static let cleanUps = Mutex<[UUID: @Sendable () -> Void]>([:])
    /// Kept for the process's life; written once, by ``install()`` on the main task before anything else runs.
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []

    /// Runs the clean-ups and exits on SIGINT and SIGTERM from now on.
    static func install() {
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                let pending = cleanUps.withLock { cleanUps in
                    defer { cleanUps = [:] }
                    return Array(cleanUps.values)
                }
                FileHandle.standardError.write(Data("storekeeper-bench: interrupted; stopping what it started\n".utf8))
                for cleanUp in pending { cleanUp() }
                exit(128 + signalNumber)
            }
            source.resume()
            sources.append(source)
        }
    }

    /// Registers `cleanUp` until the returned token is passed to ``done(_:)``.
    static func register(_ cleanUp: @escaping @Sendable () -> Void) -> UUID {
        let token = UUID()
        cleanUps.withLock { $0[token] = cleanUp }
        return token
    }

    static func done(_ token: UUID) {
        _ = cleanUps.withLock { $0.removeValue(forKey: token) }
    }
}
