import PostgresNIO
import Subscriptions

// Account ids are stored as text (migration 0008): the app's own ids, UUIDs lowercased.
extension AccountID: PostgresEncodable, PostgresNonThrowingEncodable, PostgresDecodable {
    public static var psqlType: PostgresDataType { .text }
    public static var psqlFormat: PostgresFormat { .binary }

    public func encode<JSONEncoder: PostgresJSONEncoder>(into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        text.encode(into: &byteBuffer, context: context)
    }

    public init<JSONDecoder: PostgresJSONDecoder>(
        from byteBuffer: inout ByteBuffer, type: PostgresDataType, format: PostgresFormat, context: PostgresDecodingContext<JSONDecoder>
    ) throws {
        let text = try String(from: &byteBuffer, type: type, format: format, context: context)
        guard let id = AccountID(text) else { throw PostgresDecodingError.Code.failure }
        self = id
    }
}
