import Hummingbird
import NIOCore
import PayloadDecoding

extension Request {
    /// The body, at most `limit` bytes (413 past it, and at once when its declared `Content-Length` is past it).
    func collectBody(upTo limit: Int) async throws -> ByteBuffer {
        // Refused before a byte is read: the sender would otherwise send it all, or hold the connection to the body
        // deadline, for an answer known from the head.
        if let declared = headers[.contentLength].flatMap({ Int($0) }), declared > limit { throw APIError.tooLarge(limit) }
        do {
            return try await body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw APIError.tooLarge(limit)
        }
    }

    /// The body decoded as `Value` with ``PayloadDecoder`` — strict, and linear in the body whatever its shape —
    /// or 400 with `message` (413 past `limit`).
    func decodeJSONBody<Value: Decodable>(
        as type: Value.Type, upTo limit: Int = StorekeeperRequestContext.maximumBody, otherwise message: String
    ) async throws -> Value {
        let body = try await collectBody(upTo: limit)
        guard let value = try? PayloadDecoder().decode(Value.self, from: body.readableBytesView) else {
            throw APIError.badRequest(message)
        }
        return value
    }
}
