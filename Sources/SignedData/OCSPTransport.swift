import Synchronization
import X509

/// Sends a DER OCSP request to a responder and returns the DER response — the network part of online checks,
/// supplied by the process (`storekeeper` uses AsyncHTTPClient). Throwing means the responder could not be reached
/// or answered garbage at the HTTP level: the verdict is then *retryable*, never an acceptance.
public protocol OCSPTransport: Sendable {
    func fetch(request: [UInt8], responderURI: String) async throws -> [UInt8]
}

/// Adapts an ``OCSPTransport`` to swift-certificates' `OCSPRequester` for one verification, remembering whether the
/// responder was unreachable. Network failures are *terminal* for the policy, so a hard-fail check never passes
/// without an answer.
final class RecordingOCSPRequester: OCSPRequester {
    private let transport: any OCSPTransport
    private let unreachable = Mutex(false)

    init(transport: any OCSPTransport) { self.transport = transport }

    var responderWasUnreachable: Bool { unreachable.withLock { $0 } }

    func query(request: [UInt8], uri: String) async -> OCSPRequesterQueryResult {
        do {
            return .response(try await transport.fetch(request: request, responderURI: uri))
        } catch {
            unreachable.withLock { $0 = true }
            return .terminalError(error)
        }
    }
}
