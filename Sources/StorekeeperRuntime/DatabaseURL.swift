import Foundation
import PostgresNIO

/// A `postgres://user:password@host:port/database?sslmode=…` URL.
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

    public init(parsing text: String) throws(ConfigurationError) {
        guard let components = URLComponents(string: text), ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host, !host.isEmpty
        else {
            throw ConfigurationError(problems: ["DATABASE_URL must look like postgres://user:pass@host:port/db"])
        }
        let database = String(components.path.drop { $0 == "/" })
        guard let user = components.user, !user.isEmpty, !database.isEmpty else {
            throw ConfigurationError(problems: ["DATABASE_URL must name a user and a database"])
        }
        let sslmode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "prefer"
        let mode: TLSMode
        switch sslmode {
        case "disable": mode = .disable
        case "allow", "prefer": mode = .prefer
        case "require", "verify-ca", "verify-full": mode = .require
        default: throw ConfigurationError(problems: ["DATABASE_URL has an unknown sslmode \(sslmode)"])
        }
        self.init(
            host: host, port: components.port ?? 5432, username: user.removingPercentEncoding ?? user,
            password: components.password?.removingPercentEncoding, database: database, tlsMode: mode
        )
    }

    /// The URL without its password, for logs and messages.
    public var description: String { "postgres://\(username)@\(host):\(port)/\(database)" }

    /// The text form, password included, for child processes and files the operator owns.
    public var urlString: String {
        let credentials = password.map { "\(username):\($0)" } ?? username
        return "postgres://\(credentials)@\(host):\(port)/\(database)?sslmode=\(tlsMode.rawValue)"
    }

    /// A client configuration with bounded timeouts, so a dead database fails requests quickly.
    public func clientConfiguration(maximumConnections: Int = 20) -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        switch tlsMode {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(.makeClientConfiguration())
        case .require: tls = .require(.makeClientConfiguration())
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = .seconds(3)
        configuration.options.maximumConnections = maximumConnections
        configuration.options.additionalStartupParameters = [("application_name", "storekeeper")]
        return configuration
    }
}
