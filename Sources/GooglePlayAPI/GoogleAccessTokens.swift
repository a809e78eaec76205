import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import StatementFencing

/// Access tokens for the Play Developer API: a JWT-bearer grant posted to the service account's `token_uri`, the
/// answer's `access_token` used until a minute before its `expires_in`. Callers waiting at the same time share one
/// grant.
public actor GoogleAccessTokens {
    public static let scope = "https://www.googleapis.com/auth/androidpublisher"

    private let account: GoogleServiceAccount
    private let httpClient: HTTPClient
    private let clock: @Sendable () -> Date
    private var current: (token: String, until: Date)?
    private var granting: Task<(String, Date), any Error>?
    /// How many grants were made (tests and the metrics read it).
    public private(set) var grants = 0

    public init(account: GoogleServiceAccount, httpClient: HTTPClient = .shared, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.account = account
        self.httpClient = httpClient
        self.clock = clock
    }

    /// A token valid now, granted again when the held one is about to expire.
    public func token() async throws(GooglePlayAPIError) -> String {
        let now = clock()
        if let current, now < current.until { return current.token }
        do {
            if let granting { return try await granting.value.0 }
            grants += 1
            let task = Task { [account, httpClient] in try await Self.grant(account, httpClient: httpClient, now: now) }
            granting = task
            defer { granting = nil }
            let (token, until) = try await task.value
            current = (token, until)
            return token
        } catch let error as GooglePlayAPIError {
            throw error
        } catch {
            throw GooglePlayAPIError(.unavailable, "the token grant failed: \(error)")
        }
    }

    /// Forgets `token` if it is the one held (after a 401: it was revoked or the clock is off); a token another
    /// caller has already replaced it with stays.
    public func invalidate(_ token: String) {
        if current?.token == token { current = nil }
    }

    // swift-format-ignore: AlwaysUseLowerCamelCase
    // Google's token endpoint's own field names (RFC 6749, 5.1).
    struct Answer: Decodable {
        var access_token: String
        var expires_in: Int?
    }

    static func grant(_ account: GoogleServiceAccount, httpClient: HTTPClient, now: Date) async throws -> (String, Date) {
        let assertion = try account.assertion(scope: scope, now: now)
        var request = HTTPClientRequest(url: account.tokenURI)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"))
        let (status, body): (Int, ByteBuffer)
        do {
            // Head and body within one deadline: a stalled answer must not hold every job waiting for the token.
            (status, body) = try await withDeadline(.seconds(10)) { [request] in
                let response = try await httpClient.execute(request, timeout: .seconds(10))
                return (Int(response.status.code), try await response.body.collect(upTo: 1 << 20))
            }
        } catch {
            throw GooglePlayAPIError(.unavailable, "the token endpoint did not answer: \(error)")
        }
        guard status == 200 else {
            let kind: GooglePlayAPIError.Kind = status == 429 || status >= 500 ? .unavailable : .unauthorized
            throw GooglePlayAPIError(kind, "the token endpoint answered \(status): \(String(buffer: body).prefix(200))", httpStatus: status)
        }
        guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(buffer: body)), !answer.access_token.isEmpty else {
            throw GooglePlayAPIError(.invalidResponse, "the token endpoint's answer has no access_token")
        }
        // Used until a minute before it expires (half its life, for a token that short-lived).
        let lifetime = TimeInterval(min(max(answer.expires_in ?? 3600, 2), 86_400))
        return (answer.access_token, now.addingTimeInterval(lifetime > 120 ? lifetime - 60 : lifetime / 2))
    }
}
