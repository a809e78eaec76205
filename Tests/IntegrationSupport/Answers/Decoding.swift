import Foundation
import HummingbirdTesting
import NIOCore

/// Decodes a JSON answer into a test type written from the published contract (SPEC.md, openapi.json).
func decode<T: Decodable>(_ type: T.Type, _ body: Data) throws -> T {
    try JSONDecoder().decode(type, from: body)
}

/// Decodes a JSON answer body into a test type written from the published contract.
func decode<T: Decodable>(_ type: T.Type, _ body: ByteBuffer) throws -> T {
    try decode(type, Data(buffer: body))
}

extension TestResponse {
    /// The body decoded as the contract's answer `T`; throws when the answer does not have the published shape.
    func answer<T: Decodable>(_ type: T.Type) throws -> T {
        try decode(type, body)
    }
}

/// A field the contract requires but allows to be `null`: an answer without the key does not decode, one with `null`
/// decodes to `nil` (a plain optional would let an absent key pass as `null`).
@propertyWrapper
struct RequiredNullable<Value: Decodable & Sendable>: Decodable, Sendable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode(Value.self)
    }
}

extension RequiredNullable: Equatable where Value: Equatable {}
