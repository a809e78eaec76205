import Foundation

/// A private PostgreSQL cluster in a directory of its own (`./.storekeeper/postgres` for `dev`): created with
/// `initdb` on first use, started with `pg_ctl` on a free loopback port, stopped on exit. When running as root the
/// server runs as the `postgres` system user, since PostgreSQL refuses to run as root.
public struct PrivateCluster: Sendable {
    public let directory: URL
    public let binDirectory: URL
    private let runAsUser: String?

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    public init(directory: URL) throws(Failure) {
        self.directory = directory
        guard let bin = Self.findBinDirectory() else {
            throw Failure(
                description:
                    "PostgreSQL server binaries (initdb, pg_ctl) not found on PATH or in /usr/lib/postgresql/*/bin; install them (apt-get install -y postgresql) or set DATABASE_URL"
            )
        }
        self.binDirectory = bin
        self.runAsUser = geteuid() == 0 ? "postgres" : nil
    }

    var dataDirectory: URL { directory.appendingPathComponent("data") }

    /// Creates the cluster if needed, starts it if it is not running, and returns its URL.
    /// - Parameter requestedPort: listen here (a restart keeps the URL); default: a free port.
    public func start(port requestedPort: Int? = nil) throws(Failure) -> DatabaseURL {
        let fileManager = FileManager.default
        do {
            try fileManager.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw Failure(description: "cannot create \(directory.path): \(error.localizedDescription)")
        }
        if let user = runAsUser { try run("/bin/chown", ["-R", user, directory.path], asUser: nil) }
        if !fileManager.fileExists(atPath: dataDirectory.appendingPathComponent("PG_VERSION").path) {
            try run(
                binDirectory.appendingPathComponent("initdb").path,
                ["-D", dataDirectory.path, "-U", "storekeeper", "--auth=trust", "-E", "UTF8", "--no-instructions"],
                asUser: runAsUser)
        }
        if let port = runningPort() { return url(port: port) }
        let port: Int
        if let requestedPort { port = requestedPort } else { port = try Self.freePort() }
        try run(
            binDirectory.appendingPathComponent("pg_ctl").path,
            [
                "-D", dataDirectory.path, "-l", directory.appendingPathComponent("postgres.log").path, "-w", "-t", "60",
                "-o", "-p \(port) -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=200", "start",
            ],
            asUser: runAsUser)
        return url(port: port)
    }

    /// Stops the cluster (fast shutdown); the data stays for the next start.
    public func stop() {
        try? run(binDirectory.appendingPathComponent("pg_ctl").path, ["-D", dataDirectory.path, "-m", "fast", "-w", "stop"], asUser: runAsUser)
    }

    /// Through the Unix-domain socket in `/tmp` (`-k /tmp`): on one machine it costs each round trip less than loopback TCP.
    private func url(port: Int) -> DatabaseURL {
        DatabaseURL(host: "/tmp", port: port, username: "storekeeper", password: nil, database: "postgres")
    }

    /// The port of a server already running on this data directory (line 4 of `postmaster.pid`).
    private func runningPort() -> Int? {
        guard let text = try? String(contentsOf: dataDirectory.appendingPathComponent("postmaster.pid"), encoding: .utf8) else {
            return nil
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count > 3, let pid = Int32(lines[0]), kill(pid, 0) == 0, let port = Int(lines[3]) else { return nil }
        return port
    }

    private func run(_ executable: String, _ arguments: [String], asUser user: String?) throws(Failure) {
        let (program, programArguments) = user.map { ("/usr/sbin/runuser", ["-u", $0, "--", executable] + arguments) }
            ?? (executable, arguments)
        let result: ChildProcess.Result
        do {
            result = try ChildProcess.run(program, programArguments)
        } catch {
            throw Failure(description: error.description)
        }
        guard result.status == 0 else {
            let lastLine = result.output.split(separator: "\n").last.map(String.init) ?? "exit \(result.status)"
            throw Failure(description: "\(URL(fileURLWithPath: executable).lastPathComponent) failed: \(lastLine)")
        }
    }

    public static func findBinDirectory() -> URL? {
        let fileManager = FileManager.default
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for entry in path.split(separator: ":") where fileManager.isExecutableFile(atPath: "\(entry)/initdb") {
            return URL(fileURLWithPath: "\(entry)/initdb").resolvingSymlinksInPath().deletingLastPathComponent()
        }
        let versions = (try? fileManager.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            let bin = "/usr/lib/postgresql/\(version)/bin"
            if fileManager.isExecutableFile(atPath: "\(bin)/initdb") { return URL(fileURLWithPath: bin) }
        }
        return nil
    }

    /// A TCP port on 127.0.0.1 nothing listens on now.
    public static func freePort() throws(Failure) -> Int {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw Failure(description: "cannot open a socket to find a free port") }
        defer { close(socketFD) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(socketFD, socketAddress, length) == 0 && getsockname(socketFD, socketAddress, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "cannot bind a socket to find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
