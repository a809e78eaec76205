import Hummingbird

/// `/v1`, the app's services' API, behind their bearer keys; not mounted without any. `GET /v1/tiers` (public) is
/// mounted by ``buildRouter(_:)`` apart.
func addServiceRoutes(to router: Router<StorekeeperRequestContext>, _ dependencies: HTTPDependencies) {
    let (service, shared) = (dependencies.service, dependencies.shared)
    guard !service.apiKeys.isEmpty else { return }
    let serviceAPI = router.group("v1")
        .add(middleware: SecurityHeadersMiddleware(cacheControl: "no-store"))
        .add(middleware: BearerKeyMiddleware(keys: service.apiKeys))
    let accounts = AccountsController(
        accounts: shared.accounts, subscriptions: service.subscriptions, purchaseIntents: service.purchaseIntents, clock: shared.clock)
    accounts.addRoutes(to: serviceAPI)
    UsageController(usage: service.usage, catalogue: shared.catalogue, clock: shared.clock).addRoutes(to: serviceAPI)
    if let holds = service.holds {
        HoldsController(holds: holds, catalogue: shared.catalogue, clock: shared.clock).addRoutes(to: serviceAPI)
    }
    TransactionsController(verifier: dependencies.intake.verifier, claims: service.claims, accounts: accounts).addRoutes(to: serviceAPI)
    if let events = shared.events { EventsController(events: events).addFeedRoute(to: serviceAPI) }
    if let offers = service.offers { OffersController(offers: offers, clock: shared.clock).addRoutes(to: serviceAPI) }
    if let stripe = service.stripeAccounts {
        StripeAccountsController(linking: stripe.linking, selling: stripe.selling, clock: shared.clock).addRoutes(to: serviceAPI)
    }
    if dependencies.intake.google != nil, let claims = service.googlePurchases {
        GooglePlayAccountsController(claims: claims, accounts: accounts).addRoutes(to: serviceAPI)
    }
    if let refunds = service.refunds {
        RefundsController(refunds: refunds, requests: shared.refundRequests, clock: shared.clock).addRoutes(to: serviceAPI)
    }
}
