import Foundation
import GooglePlayAPI
import SignedData

/// Google Play's push intake (`STOREKEEPER_GOOGLE_*`): served when the package name, the push audience and the push
/// service account are all set; some but not all of them is a configuration error, never a route left silently out.
public struct GooglePlaySettings: Sendable {
    /// `STOREKEEPER_GOOGLE_PACKAGE_NAME`: the app whose notifications count; others are acknowledged and ignored.
    public var packageName: String
    /// `STOREKEEPER_GOOGLE_PUSH_AUDIENCE` and `STOREKEEPER_GOOGLE_PUSH_SERVICE_ACCOUNT`.
    public var push: GooglePushVerifier.Settings
    /// `STOREKEEPER_GOOGLE_CERTS_URL`: Google's signing keys as a JWK set.
    public var certificatesURL = GooglePlaySettings.googleCertificates

    /// `STOREKEEPER_GOOGLE_SERVICE_ACCOUNT`: the key file the worker reads Play with; `nil`: notifications are
    /// stored and their tokens filed, nothing is read.
    public var serviceAccount: GoogleServiceAccount?
    /// `STOREKEEPER_GOOGLE_PLAY_API_URL`: the Play Developer API's host, or a test server.
    public var apiURL = GooglePlayClient.googleHost
    /// `STOREKEEPER_GOOGLE_REQUESTS_PER_MINUTE`: this process's pace of Play requests (Google's default quota is
    /// 3,000 a minute per bucket, shared by every process of the project).
    public var requestsPerMinute = 1000

    public static let googleCertificates = "https://www.googleapis.com/oauth2/v3/certs"

    /// Reads the settings from `value`; `nil` when none of the three is set.
    static func load(_ value: (String) -> String?, problems: inout [String]) -> GooglePlaySettings? {
        let packageName = value("STOREKEEPER_GOOGLE_PACKAGE_NAME")
        let audience = value("STOREKEEPER_GOOGLE_PUSH_AUDIENCE")
        let account = value("STOREKEEPER_GOOGLE_PUSH_SERVICE_ACCOUNT")
        guard packageName != nil || audience != nil || account != nil else { return nil }
        guard let packageName, let audience, let account else {
            problems.append(
                "STOREKEEPER_GOOGLE_PACKAGE_NAME, STOREKEEPER_GOOGLE_PUSH_AUDIENCE and STOREKEEPER_GOOGLE_PUSH_SERVICE_ACCOUNT are set together (the app's package, the push subscription's audience and its service account)"
            )
            return nil
        }
        // Play package names: letters, digits and underscores in dot-separated segments (Android's applicationId).
        let segments = packageName.split(separator: ".", omittingEmptySubsequences: false)
        if segments.count < 2 || packageName.utf8.count > 255
            || segments.contains(where: {
                $0.isEmpty || !$0.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") }
            })
        {
            problems.append("STOREKEEPER_GOOGLE_PACKAGE_NAME: the app's package name as Play Console shows it, such as com.example.app")
        }
        if audience.utf8.count > 1024 || audience.unicodeScalars.contains(where: { !$0.isASCII || $0.value <= 0x20 }) {
            problems.append(
                "STOREKEEPER_GOOGLE_PUSH_AUDIENCE: the audience set on the push subscription (its endpoint URL unless another was chosen)")
        }
        if !account.contains("@") || account.utf8.count > 320 || account.unicodeScalars.contains(where: { !$0.isASCII || $0.value <= 0x20 }) {
            problems.append("STOREKEEPER_GOOGLE_PUSH_SERVICE_ACCOUNT: the email of the service account the push subscription authenticates as")
        }
        var settings = GooglePlaySettings(packageName: packageName, push: .init(audience: audience, serviceAccount: account))
        if let url = value("STOREKEEPER_GOOGLE_CERTS_URL") {
            if let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil {
                settings.certificatesURL = url
            } else {
                problems.append("STOREKEEPER_GOOGLE_CERTS_URL: an http(s) URL of a JWK set such as \(googleCertificates)")
            }
        }
        if let path = value("STOREKEEPER_GOOGLE_SERVICE_ACCOUNT") {
            if let contents = FileManager.default.contents(atPath: path) {
                do {
                    settings.serviceAccount = try GoogleServiceAccount(json: contents)
                } catch {
                    problems.append("STOREKEEPER_GOOGLE_SERVICE_ACCOUNT: \(error.message) (\(path))")
                }
            } else {
                problems.append("STOREKEEPER_GOOGLE_SERVICE_ACCOUNT: cannot read the service-account key file \(path)")
            }
        }
        if let url = value("STOREKEEPER_GOOGLE_PLAY_API_URL") {
            if let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil {
                settings.apiURL = url
            } else {
                problems.append("STOREKEEPER_GOOGLE_PLAY_API_URL: an http(s) URL such as \(GooglePlayClient.googleHost)")
            }
        }
        if let text = value("STOREKEEPER_GOOGLE_REQUESTS_PER_MINUTE") {
            if let number = Int(text), (1...1_000_000).contains(number) {
                settings.requestsPerMinute = number
            } else {
                problems.append("STOREKEEPER_GOOGLE_REQUESTS_PER_MINUTE must be an integer in 1...1000000, got \"\(text)\"")
            }
        }
        return settings
    }
}
