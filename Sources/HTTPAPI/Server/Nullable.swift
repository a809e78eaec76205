/// An optional field a JSON answer writes as `null` when absent, where a synthesized `Encodable` would leave the key
/// out: the admin API's documents keep every field (`docs/openapi.json` lists them as required, `null` allowed).
// swift-format-ignore: UseSynthesizedInitializer
@propertyWrapper
struct Nullable<Value: Encodable & Sendable>: Encodable, Sendable {
    var wrappedValue: Value?

    // Spelt out: a property wrapper's `init(wrappedValue:)` is what lets a memberwise initializer take a plain optional.
    init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}
