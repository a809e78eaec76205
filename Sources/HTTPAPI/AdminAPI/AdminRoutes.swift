import Hummingbird

/// `/admin`'s JSON API, behind operators' bearer keys (never a browser's remembered Basic credentials), then the
/// dashboard's pages; neither is mounted without operator keys. The support controller and Apple's question limits
/// are shared by both, so a key's share of Apple is one whichever way it asks.
func addOperatorRoutes(to router: Router<StorekeeperRequestContext>, _ dependencies: HTTPDependencies) {
    let (admin, shared) = (dependencies.admin, dependencies.shared)
    guard !admin.operators.isEmpty else { return }
    let adminAPI = router.group("admin")
        .add(middleware: SecurityHeadersMiddleware(cacheControl: "no-store"))
        .add(middleware: OperatorMiddleware(operators: admin.operators, audit: shared.audit, clock: shared.clock))
        .add(middleware: SameSiteWriteMiddleware(mediaTypes: "application/json"))
    AdminController(jobs: shared.jobs).addRoutes(to: adminAPI)
    if let devClock = admin.devClock {
        DevClockController(clock: devClock, advanced: admin.devClockAdvanced).addRoutes(to: adminAPI)
    }
    if let events = shared.events { EventsController(events: events).addAdminRoutes(to: adminAPI) }
    if let grants = admin.grants {
        GrantsController(grants: grants, catalogue: shared.catalogue, clock: shared.clock).addRoutes(to: adminAPI)
    }
    if let adjustments = admin.adjustments {
        CreditAdjustmentsController(adjustments: adjustments, clock: shared.clock).addRoutes(to: adminAPI)
    }
    let questions = AppleQuestionLimits()
    let appStoreSupport = admin.appStore.map {
        AppStoreSupportController(support: $0, defaultEnvironment: admin.analyticsEnvironment, questions: questions, clock: shared.clock)
    }
    appStoreSupport?.addRoutes(to: adminAPI)
    addDashboardRoutes(to: router, dependencies, questions: questions, appStoreSupport: appStoreSupport)
}
