import Foundation
import Testing

@testable import IntegrationSupport
@testable import StorekeeperRuntime

@Suite("JSON log lines")
struct JSONLogHandlerTests {
    @Test(
        "every string survives the hand-written escaping as valid JSON",
        arguments: [
            "plain", "quote \" and backslash \\", "new\nline\r\ttab", "control \u{01}\u{1F}", "ünïcødé ✓ 𝄞", "",
        ])
    func escaping(_ text: String) throws {
        var line: [UInt8] = []
        JSONLogHandler.appendString(text, to: &line)
        let decoded = try JSONSerialization.jsonObject(with: Data(line), options: .fragmentsAllowed) as? String
        #expect(decoded == text)
    }

    @Test("timestamps are ISO 8601 UTC with milliseconds")
    func timestamp() throws {
        let date = Date(timeIntervalSince1970: 1_795_320_471.1235)
        let text = JSONLogHandler.timestamp(date)
        #expect(text == "2026-11-22T04:07:51.123Z")
        #expect(JSONLogHandler.timestamp(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
    }
}
