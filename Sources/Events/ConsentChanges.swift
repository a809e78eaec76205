import Foundation
import Subscriptions

/// The event of a customer's withdrawn consent (Apple's `RESCIND_CONSENT`): sent to the account whose subscription
/// carries the app transaction, when the notification is applied or when that link first appears. Keyed by the
/// notification, so linking it again sends nothing.
public enum ConsentChanges {
    public static func rescinded(
        notificationUUID: String, appTransactionId: String, environment: String, account: AccountID, cause: EventCause
    ) -> EventDraft {
        var change = EventChange(appTransactionId: appTransactionId)
        change.store = "app_store"
        return EventDraft(
            type: .accountConsentRescinded, key: "consent_rescinded:\(notificationUUID):\(account.text)", account: account, subscription: nil,
            environment: environment, change: change, cause: cause)
    }
}
