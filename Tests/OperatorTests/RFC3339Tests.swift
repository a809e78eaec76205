import Application
import Foundation
import Testing

@testable import IntegrationSupport

@Suite("Times in requests: RFC 3339, strictly")
struct RFC3339Tests {
    @Test("offsets, fractions and lower case as RFC 3339 writes them; a day or an offset that does not exist is refused, never read as UTC")
    func strict() {
        #expect(RFC3339.date("2027-01-01T00:00:00Z") == Date(timeIntervalSince1970: 1_798_761_600))
        #expect(RFC3339.date("2027-01-01T01:30:00+01:30") == Date(timeIntervalSince1970: 1_798_761_600))
        #expect(RFC3339.date("2026-12-31T23:00:00-01:00") == Date(timeIntervalSince1970: 1_798_761_600))
        #expect(RFC3339.date("2027-01-01t00:00:00.5z") == Date(timeIntervalSince1970: 1_798_761_600.5))
        #expect(RFC3339.date("2027-01-01T14:00:00+14:00") == Date(timeIntervalSince1970: 1_798_761_600))
        // Offsets past Foundation's ±18 hours are RFC 3339 too (Schemathesis sent -23:47).
        #expect(RFC3339.date("2027-01-01T00:00:00+23:59") == Date(timeIntervalSince1970: 1_798_761_600 - 86_340))
        #expect(RFC3339.date("2026-12-31T00:01:00-23:59") == Date(timeIntervalSince1970: 1_798_761_600))
        #expect(RFC3339.date("0623-10-11T17:16:28.57-23:47") != nil)
        for refused in [
            "2027-01-01T00:00:00+24:00", "2027-01-01T00:00:00+99:99", "2027-01-01T00:00:00-24:00", "2027-01-01T00:00:00+00:60",
            "2020-02-30T00:00:00Z", "2027-01-01T24:00:00Z", "2027-01-01T00:00:00Zjunk", "2027-01-01T00:00:00+0100", "2027-01-01",
        ] {
            #expect(RFC3339.date(refused) == nil, "\(refused)")
        }
    }
}
