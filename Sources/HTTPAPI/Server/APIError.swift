import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// An error answered as `{"error": "<code>", "message": "<human text>"}` with its HTTP status. The only place
/// module errors become statuses.
public struct APIError: HTTPResponseError, Sendable {
    public let status: HTTPResponse.Status
    public let code: Code
    public let message: String
    /// Answered with `Connection: close`, and the connection closed after it: the rest of a refused body is not read.
    public var closesConnection = false
    /// Headers the answer carries besides its content type (`Allow` of a 405).
    public var headers: HTTPFields = [:]
    /// What caused it and how loudly to log that, where it is not the client's plain mistake: a database outage
    /// (warning, error), a client gone mid-body (debug). Logged once, where the answer is written.
    public var cause: (level: Logger.Level, message: String, detail: String)?

    public init(_ status: HTTPResponse.Status, code: Code, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = try Self.encoder.encode(["error": code.description, "message": message])
        var headers = self.headers
        headers[.contentType] = APIError.jsonContentType
        if closesConnection { headers[.connection] = "close" }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// Writes `error` before `message`, every time.
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()

    /// The content type of every JSON answer, successes and errors alike (Hummingbird's encoder writes this one).
    static let jsonContentType = "application/json; charset=utf-8"

    static func badRequest(_ message: String) -> APIError { APIError(.badRequest, code: .badRequest, message: message) }
    static let unauthorized = APIError(.unauthorized, code: .unauthorized, message: "a valid bearer key is required")
    static func unavailable(_ message: String) -> APIError {
        APIError(.serviceUnavailable, code: .unavailable, message: message)
    }
    /// A body over `limit` bytes (this route's).
    static func tooLarge(_ limit: Int) -> APIError {
        let size = limit % 1024 == 0 ? "\(limit / 1024) KiB" : "\(limit) bytes"
        var error = APIError(.contentTooLarge, code: .payloadTooLarge, message: "the body is larger than \(size), this route's limit")
        error.closesConnection = true
        return error
    }
}
