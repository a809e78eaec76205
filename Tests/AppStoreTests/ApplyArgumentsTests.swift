import Application
import Foundation
import Testing

/// An apply job's arguments are written by hand at every intake; `work`, catch-up and operators read them as
/// `JSONEncoder` wrote them before, so the two must be the same JSON (the column is `jsonb`: members, not their order,
/// which `JSONEncoder` does not keep either).
struct ApplyArgumentsTests {
    @Test("the hand-written arguments are the JSON JSONEncoder writes, with no token, one and two, and decode back")
    func sameAsTheEncoder() throws {
        let notification = UUID()
        let tokens: [[UUID]?] = [nil, [UUID()], [UUID(), UUID()], [UUID(uuidString: "00000000-0000-0000-0000-00000000000A")!]]
        for accountTokens in tokens {
            let arguments = NotificationInbox.ApplyArguments(notificationUUID: notification, accountTokens: accountTokens)
            let encoded = String(decoding: try JSONEncoder().encode(arguments), as: UTF8.self)
            let written = try #require(try JSONSerialization.jsonObject(with: Data(arguments.json.utf8)) as? NSDictionary)
            let expected = try #require(try JSONSerialization.jsonObject(with: Data(encoded.utf8)) as? NSDictionary)
            #expect(written == expected, "\(arguments.json)")
            let decoded = try JSONDecoder().decode(NotificationInbox.ApplyArguments.self, from: Data(arguments.json.utf8))
            #expect(decoded.notificationUUID == notification)
            #expect(decoded.accountTokens == accountTokens)
        }
    }
}
