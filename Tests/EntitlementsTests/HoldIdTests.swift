import Entitlements
import Foundation
import Testing

/// A hold's id comes from the system's generator (`UUID.systemRandom()`), not Foundation's `UUID()`: it must still be
/// a random RFC 9562 version-4 id, as every hold id before it was, and never repeat.
@Suite("Hold ids")
struct HoldIdTests {
    @Test("100,000 hold ids are version 4 with the RFC variant, all distinct, and print as UUIDs do")
    func holdIdsAreRandomVersionFour() {
        var seen = Set<UUID>()
        for _ in 0..<100_000 {
            let id = UUID.systemRandom()
            let bytes = id.uuid
            #expect(bytes.6 >> 4 == 4, "\(id)")
            #expect(bytes.8 >> 6 == 0b10, "\(id)")
            #expect(UUID(uuidString: id.uuidString) == id)
            seen.insert(id)
        }
        #expect(seen.count == 100_000)
        // Both halves vary: a generator that filled only one of the two words would keep the other constant.
        let ids = (0..<64).map { _ in UUID.systemRandom().uuid }
        #expect(Set(ids.map { [$0.0, $0.1, $0.2, $0.3] }).count > 1)
        #expect(Set(ids.map { [$0.12, $0.13, $0.14, $0.15] }).count > 1)
    }
}
