import Entitlements
import PostgresNIO

// Store environments are stored as text, as Apple spells them (`Production`, `Sandbox`, …).
extension StoreEnvironment: PostgresEncodable, PostgresNonThrowingEncodable, PostgresDecodable {
    public static var psqlType: PostgresDataType { .text }
    public static var psqlFormat: PostgresFormat { .binary }

    public func encode<JSONEncoder: PostgresJSONEncoder>(into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        rawValue.encode(into: &byteBuffer, context: context)
    }

    public init<JSONDecoder: PostgresJSONDecoder>(
        from byteBuffer: inout ByteBuffer, type: PostgresDataType, format: PostgresFormat, context: PostgresDecodingContext<JSONDecoder>
    ) throws {
        self.init(rawValue: try String(from: &byteBuffer, type: type, format: format, context: context))
    }
}
