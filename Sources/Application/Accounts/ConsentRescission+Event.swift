import Events
import Persistence

extension ConsentRescissions.Rescission {
    /// Its `account.consent_rescinded`, once it is linked to an account; `nil` while no account is known.
    var event: EventDraft? {
        account.map {
            ConsentChanges.rescinded(notificationUUID: notificationUUID, appTransactionId: appTransactionId, environment: environment, account: $0)
        }
    }
}
