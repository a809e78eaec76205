import Hummingbird

/// Builds the router of `storekeeper serve`: the process's own routes, then each audience's (the stores' intakes, the
/// app's services, the operators), then the document of what this configuration serves and the answer to the rest.
public func buildRouter(_ dependencies: HTTPDependencies) -> Router<StorekeeperRequestContext> {
    let shared = dependencies.shared
    // HEAD answers every GET route with its headers and no body, as HTTP asks of a general-purpose server.
    let router = Router(context: StorekeeperRequestContext.self, options: .autoGenerateHeadEndpoints)
    router.add(middleware: SecurityHeadersMiddleware())
    router.add(middleware: LogRequestsMiddleware(.debug))
    router.add(middleware: RequestMetricsMiddleware())
    router.add(middleware: RequestBodyBudgetMiddleware(budget: shared.bodyBudget))
    MetricsController(
        registry: shared.metrics, jobs: shared.jobs, kinds: shared.jobKinds, deliveries: shared.events,
        acknowledgements: shared.googleAcknowledgements
    ).addRoutes(to: router, keys: shared.metricsKeys)
    HealthController(readiness: shared.readiness).addRoutes(to: router)
    addIntakeRoutes(to: router, dependencies.intake, clock: shared.clock)
    TiersController(catalogue: shared.catalogue).addRoutes(to: router)
    addServiceRoutes(to: router, dependencies)
    addOperatorRoutes(to: router, dependencies)
    // Last: the document served describes the routes this configuration serves, and nothing else.
    OpenAPIController(serving: router.routes).addRoutes(to: router)
    router.add(middleware: UnknownRouteMiddleware<StorekeeperRequestContext>(routes: router.routes, unconfigured: unconfiguredFeatures(dependencies)))
    return router
}

/// The features of `dependencies` that are off, by the path pattern of their routes (`{}` is any one segment, `**` the
/// rest), with what turns each on. Only under an API that is mounted: without its keys, nothing there is served.
func unconfiguredFeatures(_ dependencies: HTTPDependencies) -> [(pattern: String, hint: String)] {
    var off: [(pattern: String, hint: String)] = []
    let stripeOff = "Stripe is not configured: set STOREKEEPER_STRIPE_WEBHOOK_SECRETS (docs/stripe.md)"
    let googleOff =
        "Google Play is not configured: set STOREKEEPER_GOOGLE_PACKAGE_NAME, _PUSH_AUDIENCE and _PUSH_SERVICE_ACCOUNT (docs/google-play.md)"
    let retentionOff = "Retention Messaging is not configured: set STOREKEEPER_RETENTION (docs/retention.md)"
    if !dependencies.service.apiKeys.isEmpty {
        if dependencies.service.offers == nil {
            off.append(
                ("/v1/offers/**", "offer signing is not configured: set STOREKEEPER_ASSA_ISSUER_ID, _KEY_ID and _PRIVATE_KEY (docs/offers.md)"))
        }
        if dependencies.service.stripeAccounts == nil {
            off.append(("/v1/accounts/{}/stripe/**", stripeOff))
        } else if dependencies.service.stripeAccounts?.selling == nil {
            off.append(("/v1/accounts/{}/stripe/**", "Stripe checkout and portal need STOREKEEPER_STRIPE_API_KEY (docs/stripe.md)"))
        }
        if dependencies.intake.google == nil {
            off.append(("/v1/accounts/{}/google/**", googleOff))
        } else if dependencies.service.googlePurchases == nil {
            off.append(
                (
                    "/v1/accounts/{}/google/**",
                    "claiming Play purchases needs STOREKEEPER_GOOGLE_SERVICE_ACCOUNT: Play cannot be read (docs/google-play.md)"
                ))
        }
    }
    if dependencies.intake.stripe == nil { off.append(("/stripe/**", stripeOff)) }
    if dependencies.intake.google == nil {
        off.append(("/notifications/google", googleOff))
    }
    if dependencies.intake.retention == nil {
        off.append(("/apple/retention-message", retentionOff))
        if !dependencies.admin.operators.isEmpty { off.append(("/admin/retention", retentionOff)) }
    }
    if dependencies.admin.devClock == nil, !dependencies.admin.operators.isEmpty {
        off.append(("/admin/dev/**", "the dev clock runs only under `storekeeper dev`"))
    }
    return off
}
