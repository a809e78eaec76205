import Hummingbird

/// The dashboard's pages under `/admin`: the same operator keys as the JSON API, also as a browser's Basic
/// credentials, and writes only from the dashboard's own forms (same site).
func addDashboardRoutes(
    to router: Router<StorekeeperRequestContext>, _ dependencies: HTTPDependencies, questions: AppleQuestionLimits,
    appStoreSupport: AppStoreSupportController?
) {
    let (admin, shared) = (dependencies.admin, dependencies.shared)
    let dashboard = router.group("admin")
        .add(middleware: SecurityHeadersMiddleware(cacheControl: "no-store"))
        .add(middleware: OperatorMiddleware(operators: admin.operators, basicRealm: "Storekeeper admin", audit: shared.audit, clock: shared.clock))
        .add(middleware: SameSiteWriteMiddleware(mediaTypes: "application/x-www-form-urlencoded", "application/json"))
    AdminDashboardController(
        jobs: shared.jobs, records: shared.records, refundRequests: shared.refundRequests, accounts: shared.accounts, events: shared.events,
        grants: admin.grants,
        audit: shared.audit, search: admin.search, adjustments: admin.adjustments, appStore: admin.appStore, questions: questions,
        catalogue: shared.catalogue, acknowledgements: shared.googleAcknowledgements, clock: shared.clock
    ).addRoutes(to: dashboard)
    appStoreSupport?.addDashboardRoutes(to: dashboard)
    if let search = admin.search {
        SearchController(search: search, appStore: admin.appStore, questions: questions).addRoutes(to: dashboard)
    }
    if let exporter = admin.exporter { AccountExportController(exporter: exporter, clock: shared.clock).addRoutes(to: dashboard) }
    if let erasure = admin.erasure { AccountErasureController(erasure: erasure, clock: shared.clock).addRoutes(to: dashboard) }
    AuditController(audit: shared.audit).addRoutes(to: dashboard)
    let retention = dependencies.intake.retention
    if let analytics = admin.analytics {
        AnalyticsController(charts: analytics, defaultEnvironment: admin.analyticsEnvironment, clock: shared.clock).addRoutes(to: dashboard)
        OverviewPage(charts: analytics, retention: retention, defaultEnvironment: admin.analyticsEnvironment, clock: shared.clock)
            .addRoutes(to: dashboard)
    }
    if let retention { RetentionReport(retention: retention, clock: shared.clock).addRoutes(to: dashboard) }
}
