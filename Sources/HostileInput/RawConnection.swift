import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP connection to a loopback port driven byte by byte, for the attacks no HTTP client makes — half a request
/// head, a body that never ends — in `storekeeper-bench drill hostile` and the tests. Sends never block and never raise
/// SIGPIPE.
public final class RawConnection {
    private let descriptor: Int32

    /// Connects to `127.0.0.1:port`; `nil` when the connection could not be made within `timeout` (a server whose
    /// listen backlog is full lets a connection wait for minutes).
    /// - Parameter receiveBuffer: the socket's receive buffer in bytes (`SO_RCVBUF`, set before connecting so that
    ///   the window offered to the server is small too): a client that reads little holds little.
    public init?(port: Int, timeout: Duration = .seconds(2), receiveBuffer: Int32? = nil) {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 || (errno == EINPROGRESS && Self.completes(descriptor, within: timeout)) else {
            close(descriptor)
            return nil
        }
    }

    deinit { close(descriptor) }

    /// The connection's own port, on which the server sees it.
    public var localPort: Int? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let found = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return found == 0 ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    /// Whether the server's end of this connection is still open, read from the kernel's table of TCP sockets
    /// (Linux), without reading anything from the connection: a server that closes a connection with output the
    /// client has not read leaves its socket sending that output, not established, and the client sees nothing until
    /// it reads.
    public func serverEndIsOpen(serverPort: Int) -> Bool? {
        guard let ownPort = localPort else { return nil }
        // A server listening on both families sees an IPv4 client in the IPv6 table.
        let tables = ["/proc/net/tcp", "/proc/net/tcp6"].compactMap(Self.wholeFile)
        guard !tables.isEmpty else { return nil }
        func hexadecimal(_ port: Int) -> String {
            let digits = String(port, radix: 16, uppercase: true)
            return ":" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        }
        let (local, remote) = (hexadecimal(serverPort), hexadecimal(ownPort))
        // Each line: `sl local_address rem_address st …`, addresses as hexadecimal `address:port`; 01 is ESTABLISHED.
        return tables.joined(separator: "\n").split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 3 && fields[1].hasSuffix(local) && fields[2].hasSuffix(remote) && fields[3] == "01"
        }
    }

    /// A file read to its end, `read` after `read`: a file of `/proc` says it has no size, and a read of it as a regular
    /// file's size (Foundation's) may stop after its first page, leaving out the connections listed after it.
    private static func wholeFile(_ path: String) -> String? {
        let file = open(path, O_RDONLY)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(file, $0.baseAddress, $0.count) }
            guard count > 0 else { return count == 0 ? String(decoding: bytes, as: UTF8.self) : nil }
            bytes += buffer[..<count]
        }
    }

    /// Whether a non-blocking connect in progress on `descriptor` succeeds within `timeout`.
    private static func completes(_ descriptor: Int32, within timeout: Duration) -> Bool {
        var request = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
        guard poll(&request, 1, Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)) == 1
        else { return false }
        var failure: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length) == 0 && failure == 0
    }

    /// Sends as much of `bytes` as the socket takes now; returns how many it took.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Int {
        var sent = 0
        while sent < bytes.count {
            let written = bytes[sent...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            guard written > 0 else { break }
            sent += written
        }
        return sent
    }

    /// Whether the server has closed the connection: a read that finds its end (or a reset), not merely no data yet.
    /// What it had sent is read and dropped.
    public var isClosedByPeer: Bool { readAvailable() == nil }

    /// Closes the sending side only (`shutdown(SHUT_WR)`): the server reads the end of the input, and answers can still
    /// be read.
    public func shutdownSending() { shutdown(descriptor, Int32(SHUT_WR)) }

    /// What the server has sent and not been read yet, and whether it has closed the connection after it: nothing of
    /// what came before the end is dropped, as ``readAvailable(limit:)`` drops it.
    /// At most `limit` bytes at a time: a slow reader.
    public func receive(limit: Int = .max) -> (bytes: [UInt8], closed: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count < limit {
            let wanted = min(buffer.count, limit - received.count)
            let read = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, wanted, Int32(MSG_DONTWAIT)) }
            guard read > 0 else { return (received, read == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) }
            received += buffer[..<read]
        }
        return (received, false)
    }

    /// What the server has sent and not been read yet (empty: nothing now), at most `limit` bytes; `nil` once it has
    /// closed the connection.
    public func readAvailable(limit: Int = .max) -> [UInt8]? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count < limit {
            let wanted = min(buffer.count, limit - received.count)
            let read = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, wanted, Int32(MSG_DONTWAIT)) }
            if read > 0 {
                received += buffer[..<read]
                continue
            }
            if read == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) { return nil }
            return received
        }
        return received
    }
}
