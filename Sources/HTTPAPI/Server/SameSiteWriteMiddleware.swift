import HTTPTypes
import Hummingbird

/// Guards state-changing requests (anything but GET and HEAD) of routes a signed-in browser could be made to send:
/// a cross-site request (`Sec-Fetch-Site` other than `same-origin`, or an `Origin` that is not this host) is 403, and
/// a body of any media type but `mediaTypes` is 415 — a page on another site can send a `text/plain` or form body
/// without asking, but not `application/json`. Clients that are not browsers send neither site header and pass.
struct SameSiteWriteMiddleware<Context: RequestContext>: RouterMiddleware {
    /// `application/json` for the admin API; the dashboard's forms, and JSON too there (its export is also called by
    /// scripts, which send JSON or nothing).
    let mediaTypes: [String]

    init(mediaTypes: String...) {
        self.mediaTypes = mediaTypes
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method != .get, request.method != .head else { return try await next(request, context) }
        if let site = request.headers[.secFetchSite], site != "same-origin" {
            throw APIError(.forbidden, code: .crossSite, message: "cross-site requests cannot change anything")
        }
        if let origin = request.headers[.origin], let host = request.head.authority,
            !(origin == "http://\(host)" || origin == "https://\(host)")
        {
            throw APIError(.forbidden, code: .crossSite, message: "cross-site requests cannot change anything")
        }
        let declared = request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        // Requests without a body (a cancel, a form without fields) need no media type.
        let bodyless = request.headers[.contentLength].map { $0 == "0" } ?? (request.headers[.transferEncoding] == nil)
        guard declared.map(mediaTypes.contains) ?? bodyless else {
            throw APIError(.unsupportedMediaType, code: .unsupportedMediaType, message: "the body must be \(mediaTypes.joined(separator: " or "))")
        }
        return try await next(request, context)
    }
}

extension HTTPField.Name {
    static let secFetchSite = Self("Sec-Fetch-Site")!
}
