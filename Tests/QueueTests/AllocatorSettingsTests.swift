import StorekeeperRuntime
import Testing

@testable import IntegrationSupport

@Suite("Allocator settings")
struct AllocatorSettingsTests {
    #if canImport(Glibc)
        @Test("glibc takes both thresholds (it refuses a value outside its range, and then the process would run with its defaults)")
        func glibcTakesTheSettings() {
            #expect(AllocatorSettings.keepFreedMemory())
        }
    #endif
}
