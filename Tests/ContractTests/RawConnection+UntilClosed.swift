import HostileInput

@testable import IntegrationSupport

extension RawConnection {
    /// Everything the server sends until it closes the connection, read as it comes; fails the test after `timeout`.
    /// `limit`: at most this many bytes every 20 ms, a slow reader.
    func bytesUntilClosed(timeout: Duration = .seconds(10), limit: Int = .max, _ waitingFor: String) async throws -> [UInt8] {
        var received: [UInt8] = []
        try await eventually(timeout: timeout, waitingFor) {
            let (bytes, closed) = receive(limit: limit)
            received += bytes
            return closed
        }
        return received
    }

    /// ``bytesUntilClosed(timeout:_:)`` as text.
    func textUntilClosed(timeout: Duration = .seconds(10), _ waitingFor: String) async throws -> String {
        String(decoding: try await bytesUntilClosed(timeout: timeout, waitingFor), as: UTF8.self)
    }
}
