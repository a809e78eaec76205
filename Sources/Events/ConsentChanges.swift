import Entitlements
import Foundation
import Subscriptions

/// The event of a customer's withdrawn consent (Apple's `RESCIND_CONSENT`): sent to the account whose subscription
/// carries the app transaction, when the notification is applied or when that link first appears. Keyed by the
/// notification, so linking it again sends nothing; its cause is that notification, whichever path linked it.
public enum ConsentChanges {
    public static func rescinded(notificationUUID: String, appTransactionId: String, environment: StoreEnvironment, account: AccountID) -> EventDraft
    {
        var change = EventChange(appTransactionId: appTransactionId)
        change.store = "app_store"
        return EventDraft(
            type: .accountConsentRescinded, key: "consent_rescinded:\(notificationUUID):\(account.text)", account: account, subscription: nil,
            environment: environment, change: change, cause: EventCause(eventId: notificationUUID, notificationType: "RESCIND_CONSENT"))
    }
}
