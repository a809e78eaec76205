import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// An error answered as `{"error": "<code>", "message": "<human text>"}` with its HTTP status. The only place
/// module errors become statuses.
public struct APIError: HTTPResponseError, Sendable {
    public let status: HTTPResponse.Status
    public let code: String
    public let message: String
    /// Answered with `Connection: close`, and the connection closed after it: the rest of a refused body is not read.
    public var closesConnection = false

    public init(_ status: HTTPResponse.Status, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = try JSONEncoder().encode(["error": code, "message": message])
        var headers: HTTPFields = [.contentType: "application/json"]
        if closesConnection { headers[.connection] = "close" }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    static func badRequest(_ message: String) -> APIError { APIError(.badRequest, code: "bad_request", message: message) }
    static let unauthorized = APIError(.unauthorized, code: "unauthorized", message: "a valid bearer key is required")
    static func unavailable(_ message: String) -> APIError {
        APIError(.serviceUnavailable, code: "unavailable", message: message)
    }
    static let tooLarge: APIError = {
        var error = APIError(.contentTooLarge, code: "payload_too_large", message: "the body is larger than 512 KiB")
        error.closesConnection = true
        return error
    }()
}
