import Foundation
import PostgresNIO

/// A `postgres://user:password@host:port/database?sslmode=…` URL. As in libpq, a host that starts with `/` is the
/// directory of the server's Unix-domain socket (`postgres://user@:5432/database?host=/var/run/postgresql`, or the
/// directory percent-encoded in place of the host); a `host` or `port` query parameter overrides the one before the path.
public struct DatabaseURL: Sendable, Equatable, CustomStringConvertible {
    public enum TLSMode: String, Sendable { case disable, prefer, require }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var tlsMode: TLSMode

    public init(host: String, port: Int, username: String, password: String?, database: String, tlsMode: TLSMode = .disable) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tlsMode = tlsMode
    }

    /// - Parameter variable: the setting named in the errors (`STOREKEEPER_REPLICA_URL` is read the same way).
    public init(parsing text: String, variable: String = "DATABASE_URL") throws(ConfigurationError) {
        let components = URLComponents(string: text)
        let parameter = { (name: String) in components?.queryItems?.first { $0.name == name }?.value }
        guard let components, ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = parameter("host") ?? components.host, !host.isEmpty
        else {
            throw ConfigurationError(problems: ["\(variable) must look like postgres://user:pass@host:port/db"])
        }
        let database = String(components.path.drop { $0 == "/" })
        guard let user = components.user, !user.isEmpty, !database.isEmpty else {
            throw ConfigurationError(problems: ["\(variable) must name a user and a database"])
        }
        let port = parameter("port").map { Int($0) } ?? (components.port ?? 5432)
        guard let port, (1...65535).contains(port) else {
            throw ConfigurationError(problems: ["\(variable) has a port that is not a number from 1 to 65535"])
        }
        let sslmode = parameter("sslmode") ?? "prefer"
        let mode: TLSMode
        switch sslmode {
        case "disable": mode = .disable
        case "allow", "prefer": mode = .prefer
        case "require", "verify-ca", "verify-full": mode = .require
        default: throw ConfigurationError(problems: ["\(variable) has an unknown sslmode \(sslmode)"])
        }
        self.init(
            host: host, port: port, username: user.removingPercentEncoding ?? user,
            password: components.password?.removingPercentEncoding, database: database, tlsMode: mode
        )
    }

    /// The directory of the server's Unix-domain socket, when the host names one.
    public var socketDirectory: String? { host.hasPrefix("/") ? host : nil }

    /// The URL without its password, for logs and messages.
    public var description: String {
        socketDirectory.map { "postgres://\(username)@:\(port)/\(database)?host=\($0)" } ?? "postgres://\(username)@\(host):\(port)/\(database)"
    }

    /// The text form, password included, for child processes and files the operator owns.
    public var urlString: String {
        let credentials = password.map { "\(username):\($0)" } ?? username
        guard let socketDirectory else { return "postgres://\(credentials)@\(host):\(port)/\(database)?sslmode=\(tlsMode.rawValue)" }
        let directory = socketDirectory.addingPercentEncoding(withAllowedCharacters: Self.pathCharacters) ?? socketDirectory
        return "postgres://\(credentials)@:\(port)/\(database)?host=\(directory)&sslmode=\(tlsMode.rawValue)"
    }

    private static let pathCharacters = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "/-._~"))

    /// A client configuration with bounded timeouts, so a dead database fails requests quickly.
    /// - Parameter applicationName: what `pg_stat_activity` shows for these connections.
    public func clientConfiguration(maximumConnections: Int = 20, applicationName: String = "storekeeper") -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        switch tlsMode {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(.makeClientConfiguration())
        case .require: tls = .require(.makeClientConfiguration())
        }
        // A socket on the same machine saves the loopback TCP stack's work on every round trip; TLS has nothing to add.
        var configuration =
            socketDirectory.map {
                PostgresClient.Configuration(
                    unixSocketPath: "\($0)/.s.PGSQL.\(port)", username: username, password: password, database: database)
            }
            ?? PostgresClient.Configuration(host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = .seconds(3)
        configuration.options.maximumConnections = maximumConnections
        configuration.options.additionalStartupParameters = [("application_name", applicationName)]
        return configuration
    }
}
