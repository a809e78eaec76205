import Foundation
import Hummingbird

/// The stores' routes: Apple's notifications (and retention requests when configured), Stripe's webhooks and Google's
/// pushes when configured. Each authenticates its caller by the store's own signature, never by a key of ours.
func addIntakeRoutes(to router: Router<StorekeeperRequestContext>, _ intake: HTTPDependencies.Intake, clock: @escaping @Sendable () -> Date) {
    NotificationIntakeController(verifier: intake.verifier, inbox: intake.inbox).addRoutes(to: router)
    if let retention = intake.retention {
        RetentionMessageController(verifier: intake.verifier, retention: retention, clock: clock).addRoutes(to: router)
    }
    if let stripe = intake.stripe {
        StripeWebhookController(signature: stripe.signature, inbox: stripe.inbox, clock: clock).addRoutes(to: router)
    }
    if let google = intake.google {
        // Google signs a push's token by the wall clock, so it is checked by the wall clock: the dev clock (or a test's)
        // moves Storekeeper's rules, not Google's times.
        GoogleNotificationController(verifier: google.verifier, inbox: google.inbox, clock: { Date() }).addRoutes(to: router)
    }
}
