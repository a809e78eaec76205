import AppStoreModels
import Application
import Foundation
import Testing

/// An apply job's arguments are written by hand at every intake; `work`, catch-up and operators read them as
/// `JSONEncoder` wrote them before, so the two must be the same JSON (the column is `jsonb`: members, not their order,
/// which `JSONEncoder` does not keep either).
struct ApplyArgumentsTests {
    @Test("the hand-written arguments are the JSON JSONEncoder writes, with no token, none, one and two, and decode back")
    func sameAsTheEncoder() throws {
        let notification = UUID()
        let tokens: [[UUID]?] = [nil, [], [UUID()], [UUID(), UUID()], [UUID(uuidString: "00000000-0000-0000-0000-00000000000A")!]]
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

    /// Catch-up enqueues the same job as `apply:` and the id in uppercase (sql/0044's `upper(notification_uuid::text)`):
    /// a notification stored by the intake and found again by catch-up must not be applied by two jobs.
    @Test("the apply job of a notification: unique by the id in uppercase, its tokens from the transaction and renewal, one per subscription")
    func applyJob() throws {
        let (uuid, account) = (UUID(), UUID())
        var transaction = TransactionPayload(
            transactionId: "2000000000000001", originalTransactionId: "2000000000000001", productId: "pro.monthly", bundleId: "app",
            environment: .sandbox, signedDate: 1)
        transaction.appAccountToken = account.uuidString.lowercased()
        var renewal = RenewalInfoPayload(originalTransactionId: "2000000000000001", productId: "pro.monthly", environment: .sandbox, signedDate: 1)
        renewal.appAccountToken = account.uuidString
        let notification = VerifiedNotification(
            payload: NotificationPayload(notificationType: "SUBSCRIBED", notificationUUID: uuid.uuidString.lowercased(), signedDate: 1),
            transaction: transaction, renewalInfo: renewal)
        let job = NotificationInbox.applyJob(for: notification, uuid: uuid, subscription: "2000000000000001")
        #expect(job.kind == NotificationInbox.applyJobKind)
        #expect(job.uniqueKey == "apply:" + uuid.uuidString)
        #expect(job.concurrencyKey == "subscription:2000000000000001")
        let arguments = try JSONDecoder().decode(NotificationInbox.ApplyArguments.self, from: Data(job.arguments.utf8))
        #expect(arguments.notificationUUID == uuid)
        #expect(arguments.accountTokens == [account])
        #expect(job.arguments.contains(account.uuidString) && job.arguments.contains(uuid.uuidString))
        #expect(NotificationInbox.applyJob(for: notification, uuid: uuid, subscription: nil).concurrencyKey == nil)
    }
}
