import Foundation

/// A private PostgreSQL cluster in a directory of its own (`./.storekeeper/postgres` for `dev`): created with
/// `initdb` on first use, started with `pg_ctl`, stopped on exit. When running as root the server runs as the
/// `postgres` system user, since PostgreSQL refuses to run as root.
///
/// Only its owner can reach it: it listens on no TCP port, only on a Unix-domain socket in a directory of mode 0700
/// (`socket/` inside its own, or a private one under `/tmp` when that path is too long for a socket). Its
/// authentication is `trust`, so on a shared machine a loopback listener would make every local user its superuser.
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
    /// - Parameters:
    ///   - requestedPort: listen here (a restart keeps the URL); default: a free port.
    ///   - settings: server settings for this start, `name=value` each (`pg_ctl -o "-c name=value"`), beside
    ///     PostgreSQL's defaults: benchmarks measure a production-shaped server with them. Checked by
    ///     ``checkSetting(_:)`` before anything is created; refused when a server already runs here (it would keep
    ///     its own).
    public func start(port requestedPort: Int? = nil, settings: [String] = []) throws(Failure) -> DatabaseURL {
        for setting in settings { try Self.checkSetting(setting) }
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
                ["-D", dataDirectory.path, "-U", "storekeeper", "--auth-local=trust", "--auth-host=reject", "-E", "UTF8", "--no-instructions"],
                asUser: runAsUser)
        }
        if let running = runningServer() {
            guard settings.isEmpty else {
                throw Failure(description: "a server already runs in \(dataDirectory.path) with its own settings; stop it to start with others")
            }
            return url(port: running.port, socketDirectory: running.socketDirectory)
        }
        let port: Int
        if let requestedPort { port = requestedPort } else { port = try Self.freePort() }
        let socketDirectory = try privateSocketDirectory()
        try keepPrivate(socketDirectory: socketDirectory)
        let options = "-p \(port) -k \(socketDirectory) -c listen_addresses='' -c max_connections=200" + settings.map { " -c \($0)" }.joined()
        let log = directory.appendingPathComponent("postgres.log")
        do {
            try run(
                binDirectory.appendingPathComponent("pg_ctl").path,
                ["-D", dataDirectory.path, "-l", log.path, "-w", "-t", "60", "-o", options, "start"],
                asUser: runAsUser)
        } catch {
            // pg_ctl's own last line only says to look at the log: a setting the server refused is named there.
            let logged = (try? String(contentsOf: log, encoding: .utf8))?.split(separator: "\n").suffix(2).joined(separator: " / ") ?? ""
            throw Failure(description: logged.isEmpty ? "\(error)" : "PostgreSQL did not start: \(logged) (its log: \(log.path))")
        }
        return url(port: port, socketDirectory: socketDirectory)
    }

    /// Settings the cluster itself decides: how it is reached (only through its private socket) and where its files
    /// are. A start with one of these would break the URL it returns or the promise above.
    static let ownSettings: Set<String> = [
        "port", "listen_addresses", "unix_socket_directories", "unix_socket_permissions", "unix_socket_group", "hba_file", "ident_file",
        "config_file", "data_directory", "external_pid_file",
    ]

    /// Refuses a server setting that is not `name=value` with a name of ASCII letters, digits, `_` and `.` and a value
    /// of ASCII letters, digits and `._-,+`: it goes into `pg_ctl`'s one option string, which a shell splits, where a
    /// space or a quote would start another option. Refuses the cluster's own settings (``ownSettings``) too. Each
    /// refusal names the setting (escaped) and what is wrong with it.
    public static func checkSetting(_ setting: String) throws(Failure) {
        let quoted = setting.debugDescription
        let parts = setting.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty else { throw Failure(description: "\(quoted) is not name=value") }
        guard !parts[1].isEmpty else { throw Failure(description: "\(quoted) has no value after \"=\"") }
        func firstRefused(_ text: Substring, _ extra: String) -> String? {
            text.unicodeScalars.first { !(($0.isASCII && CharacterSet.alphanumerics.contains($0)) || extra.unicodeScalars.contains($0)) }
                .map { String($0).debugDescription }
        }
        if let found = firstRefused(parts[0], "_.") {
            throw Failure(description: "\(quoted): a name holds only letters, digits, _ and . (found \(found))")
        }
        if let found = firstRefused(parts[1], "._-,+") {
            throw Failure(description: "\(quoted): a value holds only letters, digits and . _ - , + (found \(found))")
        }
        guard !ownSettings.contains(parts[0].lowercased()) else {
            throw Failure(description: "\(quoted): the private cluster sets \(parts[0]) itself (its port, socket and files); leave it out")
        }
    }

    /// Makes this cluster a streaming replica (hot standby) of `primary`, another private cluster of the same user, by
    /// `pg_basebackup -R` when it holds no data yet, and starts it: benchmarks and tests of `STOREKEEPER_REPLICA_URL`.
    public func startStandby(of primary: DatabaseURL) throws(Failure) -> DatabaseURL {
        if !FileManager.default.fileExists(atPath: dataDirectory.appendingPathComponent("PG_VERSION").path) {
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                throw Failure(description: "cannot create \(directory.path): \(error.localizedDescription)")
            }
            if let user = runAsUser { try run("/bin/chown", ["-R", user, directory.path], asUser: nil) }
            try run(
                binDirectory.appendingPathComponent("pg_basebackup").path,
                [
                    "-h", primary.host, "-p", String(primary.port), "-U", primary.username, "-D", dataDirectory.path, "-R", "-X", "stream",
                    "-c", "fast",
                ],
                asUser: runAsUser)
        }
        return try start()
    }

    /// Writes the privacy into the cluster's own configuration, so a start by hand (`pg_ctl start`, after a crash)
    /// keeps it too: no TCP listener, the socket only in its private directory, and no connection but through it.
    /// Clusters made before this trusted 127.0.0.1 as well; their `pg_hba.conf` is rewritten the same way.
    func keepPrivate(socketDirectory: String) throws(Failure) {
        let settings = """
            # Written by Storekeeper at every start of its private cluster (docs/security.md): reachable only by its owner.
            listen_addresses = ''
            unix_socket_directories = '\(socketDirectory)'
            unix_socket_permissions = 0700

            """
        let access = """
            # Written by Storekeeper: only the owner's socket, never TCP (the socket's directory is mode 0700).
            local all all trust
            local replication all trust

            """
        let configuration = dataDirectory.appendingPathComponent("postgresql.conf")
        do {
            try settings.write(to: dataDirectory.appendingPathComponent("storekeeper.conf"), atomically: false, encoding: .utf8)
            try access.write(to: dataDirectory.appendingPathComponent("pg_hba.conf"), atomically: false, encoding: .utf8)
            let text = try String(contentsOf: configuration, encoding: .utf8)
            if !text.contains("include_if_exists = 'storekeeper.conf'") {
                try (text + "\ninclude_if_exists = 'storekeeper.conf'\n").write(to: configuration, atomically: false, encoding: .utf8)
            }
        } catch {
            throw Failure(description: "cannot write the private cluster's configuration in \(dataDirectory.path): \(error.localizedDescription)")
        }
    }

    /// The directory of the server's socket, mode 0700 and owned by whoever runs the server: `socket/` in the
    /// cluster's directory, or — when that path is too long for a socket's 107 bytes — one under `/tmp` named after
    /// it, refused if someone else made it first.
    func privateSocketDirectory() throws(Failure) -> String {
        let inside = directory.appendingPathComponent("socket").path
        let path: String
        if inside.utf8.count + "/.s.PGSQL.65535".utf8.count < 104 {
            path = inside
        } else {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in directory.standardizedFileURL.path.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            path = "/tmp/storekeeper-pg-\(geteuid())-\(String(hash, radix: 16))"
        }
        if mkdir(path, 0o700) != 0 && errno != EEXIST { throw Failure(description: "cannot create \(path): \(String(cString: strerror(errno)))") }
        var status = stat()
        guard lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR,
            status.st_uid == geteuid() || (runAsUser != nil && status.st_uid == Self.userId(runAsUser!))
        else { throw Failure(description: "\(path) is not a directory of this user's; remove it and start again") }
        guard chmod(path, 0o700) == 0 else { throw Failure(description: "cannot make \(path) private") }
        if let user = runAsUser { try run("/bin/chown", [user, path], asUser: nil) }
        return path
    }

    private static func userId(_ name: String) -> uid_t? { getpwnam(name).map { $0.pointee.pw_uid } }

    /// The process id of the cluster's postmaster while it runs (line 1 of `postmaster.pid`): benchmarks read its CPU.
    public var postmasterProcess: Int32? {
        guard let text = try? String(contentsOf: dataDirectory.appendingPathComponent("postmaster.pid"), encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first.flatMap { Int32($0) }
    }

    /// Whether a server is running on this cluster's data directory now (another process may have started it).
    public var isRunning: Bool { runningServer() != nil }

    /// Stops the cluster (fast shutdown); the data stays for the next start.
    /// Stops the server: `fast` (sessions ended, a clean shutdown) or, for a throwaway cluster being abandoned,
    /// `immediately` (a backend busy in a long statement may not notice `fast` for minutes).
    public func stop(immediately: Bool = false) {
        try? run(
            binDirectory.appendingPathComponent("pg_ctl").path, ["-D", dataDirectory.path, "-m", immediately ? "immediate" : "fast", "-w", "stop"],
            asUser: runAsUser)
    }

    /// Through the Unix-domain socket: the only way in, and on one machine it costs each round trip less than TCP.
    private func url(port: Int, socketDirectory: String) -> DatabaseURL {
        DatabaseURL(host: socketDirectory, port: port, username: "storekeeper", password: nil, database: "postgres")
    }

    /// The port and socket directory of a server already running on this data directory (lines 4 and 5 of
    /// `postmaster.pid`).
    private func runningServer() -> (port: Int, socketDirectory: String)? {
        guard let text = try? String(contentsOf: dataDirectory.appendingPathComponent("postmaster.pid"), encoding: .utf8) else {
            return nil
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count > 4, let pid = Int32(lines[0]), kill(pid, 0) == 0, let port = Int(lines[3]), lines[4].hasPrefix("/") else {
            return nil
        }
        return (port, String(lines[4]))
    }

    private func run(_ executable: String, _ arguments: [String], asUser user: String?) throws(Failure) {
        let (program, programArguments) =
            user.map { ("/usr/sbin/runuser", ["-u", $0, "--", executable] + arguments) }
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

    /// Whether `port` on 127.0.0.1 can be listened on now.
    public static func isFree(port: Int) -> Bool { bindLoopback(port: port) != nil }

    /// A TCP port on 127.0.0.1 nothing listens on now.
    public static func freePort() throws(Failure) -> Int {
        guard let port = bindLoopback(port: 0) else { throw Failure(description: "cannot bind a socket to find a free port") }
        return port
    }

    /// Binds a TCP socket to 127.0.0.1:`port` (0: any free one) and closes it: the port it got, or `nil`.
    private static func bindLoopback(port: Int) -> Int? {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { return nil }
        defer { close(socketFD) }
        var reuse: Int32 = 1
        setsockopt(socketFD, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(socketFD, socketAddress, length) == 0 && getsockname(socketFD, socketAddress, &length) == 0
            }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }
}
