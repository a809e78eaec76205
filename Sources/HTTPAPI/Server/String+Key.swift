import Hummingbird
import Subscriptions

extension String {
    /// Whether this is 1…`maximumBytes` bytes without control characters (NUL among them): what may reach the
    /// database as a key, id or name. PostgreSQL refuses NUL in text, and an error there would read as an outage.
    func isKey(maximumBytes: Int) -> Bool {
        !isEmpty && utf8.count <= maximumBytes && controlCharacterScan != .control
    }

    /// A path parameter percent-decoded; `nil` for a malformed escape (`%ZZ`, a lone `%`, bytes that are not UTF-8),
    /// which is refused, not taken as the text. Foundation's decoding bridges through NSString (3 % of `serve`'s CPU in
    /// a profile of cached status reads, 0.7 % under holds and settles); most ids and keys have nothing to decode.
    var pathDecoded: String? {
        utf8.contains(UInt8(ascii: "%")) ? removingPercentEncoding : self
    }
}

extension Request {
    /// A request's idempotency key: the body's `idempotencyKey`, else the `Idempotency-Key` header; 400
    /// `missing_idempotency_key` without one, `invalid_idempotency_key` for one that is not 1–255 bytes of UTF-8 without
    /// control characters. Spends and holds take it alike.
    ///
    /// A header's bytes that are not UTF-8 reach here as U+FFFD (NIO decodes header values leniently), so `\xff` and
    /// `\xfe` would be one key, and the second spend would be answered as the first, uncharged: a header key holding
    /// U+FFFD is refused. A body's key is JSON, whose decoder refuses such bytes itself.
    func idempotencyKey(fromBody body: String?) throws -> String {
        let header = body == nil ? headers[.init("Idempotency-Key")!] : nil
        guard let key = body ?? header, !key.isEmpty else {
            throw APIError(
                .badRequest, code: .missingIdempotencyKey, message: "idempotencyKey (1–255 bytes of UTF-8, no control characters) is required")
        }
        guard key.isKey(maximumBytes: 255), header?.unicodeScalars.contains("\u{FFFD}") != true else {
            throw APIError(
                .badRequest, code: .invalidIdempotencyKey, message: "idempotencyKey must be 1–255 bytes of UTF-8 without control characters")
        }
        return key
    }
}
