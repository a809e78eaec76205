import Application
import Credits
import Entitlements
import Foundation
import Hummingbird
import Jobs
import Persistence
import Subscriptions

/// `GET /admin`: the operator's dashboard (behind `STOREKEEPER_ADMIN_KEYS`; a browser signs in with HTTP Basic, the
/// key as password) — queue depth by kind and state, the oldest runnable job's age, failed jobs with their last error
/// and a requeue button, recent notifications, and an account lookup with status, history and ledger. Plain HTML,
/// no external assets.
public struct AdminDashboardController: Sendable {
    let jobs: PostgresJobQueue
    let records: AccountRecords
    let refundRequests: RefundRequestQuery
    let accounts: AccountStatusQuery
    let events: EventHistory?
    let grants: OperatorGrants?
    let audit: OperatorActions?
    let search: AccountSearch?
    let adjustments: CreditAdjustments?
    let appStore: AppStoreSupport?
    /// Bounds what each key asks Apple (an order id in the search box), with the API's routes.
    let questions: AppleQuestionLimits
    let catalogue: TierCatalogue?
    /// Play purchases waiting for their acknowledgement, when Play is configured.
    let acknowledgements: GoogleAcknowledgements?
    let clock: @Sendable () -> Date

    public init(
        jobs: PostgresJobQueue, records: AccountRecords, refundRequests: RefundRequestQuery, accounts: AccountStatusQuery,
        events: EventHistory? = nil,
        grants: OperatorGrants? = nil, audit: OperatorActions? = nil, search: AccountSearch? = nil,
        adjustments: CreditAdjustments? = nil, appStore: AppStoreSupport? = nil, questions: AppleQuestionLimits = AppleQuestionLimits(),
        catalogue: TierCatalogue? = nil, acknowledgements: GoogleAcknowledgements? = nil, clock: @escaping @Sendable () -> Date
    ) {
        self.acknowledgements = acknowledgements
        self.appStore = appStore
        self.questions = questions
        self.adjustments = adjustments
        self.audit = audit
        self.search = search
        self.events = events
        self.grants = grants
        self.catalogue = catalogue
        self.jobs = jobs
        self.records = records
        self.refundRequests = refundRequests
        self.accounts = accounts
        self.clock = clock
    }

    public func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.get("") { request, context in
            let account = request.formParameters.get("account")
            let notices = PageNotices(request.formParameters)
            let viewer = context.operatorIdentity ?? OperatorIdentity(name: "—", role: .viewer)
            let (foundAccount, found) = try await self.find(request.formParameters.get("find"), by: viewer.name)
            return try await withDatabase { try await self.page(account: foundAccount ?? account, found: found, notices: notices, viewer: viewer) }
        }
        group.post("jobs/{id}/requeue") { request, context -> Response in
            guard let id = Int64(try context.parameters.require("id")) else { throw APIError.badRequest("job id must be a number") }
            let requeued = try await withDatabase { try await self.jobs.requeue(ids: [id]) }
            _ = AdminController.noted(.init(ids: requeued, count: requeued.count, dryRun: false), asked: .init(ids: [id]))
            return Response(status: .seeOther, headers: [.location: "/admin?requeued=\(requeued.count)"])
        }
        addGrantRoutes(to: group)
        addCreditRoutes(to: group)
        // The JSON API owns POST /admin/events/{id}/redeliver; the page's form posts here.
        group.post("deliveries/{id}/redeliver") { _, context -> Response in
            let id = try EventsController.eventId(context)
            let endpoints = try await withDatabase { try await self.events?.redeliver(id, endpoint: nil) ?? [] }
            EventsController.noteRedelivery(id, endpoints: endpoints)
            return Response(status: .seeOther, headers: [.location: "/admin?redelivered=\(endpoints.count)"])
        }
    }

    /// What a form that answered with a redirect back to the page says happened (the page escapes it): only what the
    /// server signed for the operator reading it (``DashboardNotice``), never free text from a link.
    struct PageNotices: Sendable {
        var grantError: String?
        var creditError: String?
        var appStore: String?
        var extendAll: String?
        var erased: String?

        init(_ parameters: Parameters = [:]) {
            func text(_ name: DashboardNotice.Name) -> String? { DashboardNotice.text(name, in: parameters) }
            (grantError, creditError, appStore, extendAll) = (text(.grantError), text(.creditError), text(.appStore), text(.extendAll))
            erased = text(.erased)
        }
    }

    /// The search box's answer: the account it found alone, else what it found (several, none, Apple's word on an
    /// order id). Run before the page, outside its database deadline: an order id is asked of Apple.
    func find(_ find: String?, by operatorName: String) async throws -> (account: String?, message: String?) {
        guard let find, let search else { return (nil, nil) }
        guard let text = try? SearchController.query(find) else {
            let shown = String(String.UnicodeScalarView(find.unicodeScalars.prefix(128).map { $0.properties.generalCategory == .control ? "?" : $0 }))
            return (nil, "\(shown) is not an id: 1–512 bytes, no control characters")
        }
        let (matches, order) = try await SearchController(search: search, appStore: appStore, questions: questions).find(text, by: operatorName)
        var account: String?
        var found: String
        if matches.count == 1 {
            account = matches[0].accountId
            found = "found \(text.prefix(128)) as \(matches[0].matchedBy.replacingOccurrences(of: "_", with: " "))"
        } else {
            found = Self.searchResults(text, matches)
        }
        if let order, order.status != "found" { found += " — " + order.message }
        return (account, found)
    }

    func page(account: String?, found: String? = nil, notices: PageNotices = .init(), viewer: OperatorIdentity) async throws -> HTMLPage {
        let now = clock()
        async let statistics = jobs.statistics()
        async let failed = jobs.jobs(state: .failed, kind: nil, limit: 50)
        async let recent = records.recentNotifications(limit: 30)
        var body = "<header><h1>Storekeeper</h1><nav><b>Operations</b> · <a href=\"/admin/overview\">Overview</a></nav>"
        body += "<span>\(HTMLPage.escape(HTMLPage.time(now)))</span>"
        body += "<span>signed in as \(HTMLPage.escape(viewer.name)) (\(viewer.role.rawValue))</span></header><main>"
        body += Self.queueSection(try await statistics)
        body += try await accountSection(account, found: found, notices: notices, viewer: viewer, now: now)
        body += Self.failedSection(try await failed, canRequeue: viewer.role >= .admin)
        if let events { body += Self.failedDeliveriesSection(try await events.failedDeliveries(limit: 50), canRedeliver: viewer.role >= .support) }
        if let appStore {
            body += AppStoreSupportController.massSection(
                try await appStore.massExtensions(), notice: notices.extendAll, canRequest: viewer.role >= .admin)
        }
        if let acknowledgements { body += Self.unacknowledgedSection(try await acknowledgements.late(limit: 20)) }
        body += Self.notificationsSection(try await recent)
        if let audit {
            body += Self.auditSection(try await audit.actions(.init(limit: 20)), title: "Operator actions", csv: "/admin/audit?format=csv&limit=1000")
        }
        body += "</main>"
        return HTMLPage(title: "Storekeeper admin", body: body)
    }

    static func queueSection(_ statistics: QueueStatistics) -> String {
        let totals = Dictionary(grouping: statistics.counts, by: \.state).mapValues { $0.reduce(0) { $0 + $1.count } }
        var html = "<section><h2>Queue</h2><div>"
        for state in JobState.live {
            let count = totals[state] ?? 0
            let style = state == .failed && count > 0 ? " class=\"bad\"" : ""
            html += "<span class=\"stat\"><b\(style)>\(count)</b>\(state.rawValue)</span>"
        }
        let age = statistics.oldestRunnableAgeSeconds.map { String(format: "%.1f s", $0) } ?? "none waiting"
        html += "<span class=\"stat\"><b>\(HTMLPage.escape(age))</b>oldest runnable</span></div>"
        html += HTMLPage.table(
            ["kind", "state", "jobs"],
            statistics.counts.map { [HTMLPage.Cell($0.kind), HTMLPage.Cell($0.state.rawValue), .number($0.count)] },
            empty: "no live jobs")
        let finished = statistics.finishedLastHour.map { "\($0.kind) \($0.state.rawValue) \($0.count)" }.joined(separator: " · ")
        html += "<p class=\"muted\">finished in the last hour: \(HTMLPage.escape(finished.isEmpty ? "none" : finished))</p></section>"
        return html
    }

    /// Play purchases granted more than a day ago that Google was not told of: refunded by Google after three days.
    static func unacknowledgedSection(_ late: (count: Int, oldest: [GoogleProductStore.Waiting])) -> String {
        let rows: [[HTMLPage.Cell]] = late.oldest.map {
            [
                HTMLPage.Cell(String($0.purchaseToken.prefix(24)) + "…"), HTMLPage.Cell($0.kind), HTMLPage.Cell($0.productId),
                HTMLPage.Cell(HTMLPage.time($0.grantedAt)), HTMLPage.Cell($0.lastError ?? "—"),
            ]
        }
        let count = late.count > 0 ? "<p class=\"bad\">\(late.count) waiting more than a day: Google refunds them after three</p>" : ""
        return "<section><h2>Play purchases not acknowledged</h2>\(count)"
            + HTMLPage.table(["purchase token", "kind", "product", "granted", "last error"], rows, empty: "none waiting more than a day")
            + "</section>"
    }

    static func failedDeliveriesSection(_ failed: [(event: UUID, endpoint: String, account: String, attempts: Int)], canRedeliver: Bool) -> String {
        let rows: [[HTMLPage.Cell]] = failed.map { delivery in
            let id = delivery.event.lowercasedText
            return [
                HTMLPage.Cell(id), HTMLPage.Cell(delivery.endpoint), HTMLPage.Cell(delivery.account), HTMLPage.Cell("\(delivery.attempts)"),
                .raw(
                    canRedeliver
                        ? "<form class=\"inline\" method=\"post\" action=\"/admin/deliveries/\(id)/redeliver\"><button type=\"submit\">Redeliver</button></form>"
                        : ""),
            ]
        }
        return "<section><h2>Failed webhook deliveries</h2>"
            + HTMLPage.table(["event", "endpoint", "account", "attempts", ""], rows, empty: "no failed deliveries") + "</section>"
    }

    static func failedSection(_ failed: [JobRecord], canRequeue: Bool) -> String {
        let rows: [[HTMLPage.Cell]] = failed.map { job in
            [
                HTMLPage.Cell(String(job.id)), HTMLPage.Cell(job.kind), HTMLPage.Cell("\(job.attempt)"),
                .raw(
                    "<div class=\"error\">\(HTMLPage.escape(job.errors.last.map { "attempt \($0.attempt) at \($0.at): \($0.error)" } ?? "—"))</div>"),
                .raw(
                    canRequeue
                        ? "<form class=\"inline\" method=\"post\" action=\"/admin/jobs/\(job.id)/requeue\"><button type=\"submit\">Requeue</button></form>"
                        : ""),
            ]
        }
        return "<section class=\"wide\"><h2>Failed jobs</h2>"
            + HTMLPage.table(["id", "kind", "attempts", "last error", ""], rows, empty: "no failed jobs") + "</section>"
    }

    /// What a search found when it was not one account: none, or a list to choose from (escaped here).
    static func searchResults(_ text: String, _ matches: [AccountSearch.Match]) -> String {
        guard !matches.isEmpty else { return "no account is known by \(text.prefix(128))" }
        return "\(matches.count) accounts are known by \(text.prefix(128)): "
            + matches.map { "\($0.accountId) (\($0.matchedBy.replacingOccurrences(of: "_", with: " ")))" }.joined(separator: ", ")
    }

    /// Operator actions, newest first, with a link to the CSV of the same selection.
    static func auditSection(_ actions: [OperatorAction], title: String, csv: String) -> String {
        let rows: [[HTMLPage.Cell]] = actions.map { action in
            [
                HTMLPage.Cell(HTMLPage.time(action.at)), HTMLPage.Cell("\(action.operatorName) (\(action.role))"), HTMLPage.Cell(action.action),
                .raw("<code>\(HTMLPage.escape(action.accountId ?? "—"))</code>"), .raw("<code>\(HTMLPage.escape(action.target ?? "—"))</code>"),
                .raw("<div class=\"error\">\(HTMLPage.escape(action.before ?? "—"))</div>"),
                .raw("<div class=\"error\">\(HTMLPage.escape(action.after ?? "—"))</div>"),
            ]
        }
        return "<section class=\"wide\"><h2>\(HTMLPage.escape(title))</h2>"
            + HTMLPage.table(["at", "operator", "action", "account", "target", "before", "after"], rows, empty: "no operator actions")
            + "<p><a href=\"\(HTMLPage.escape(csv))\">Download CSV</a></p></section>"
    }

    static func notificationsSection(_ events: [AccountRecords.Event]) -> String {
        let rows: [[HTMLPage.Cell]] = events.map { event in
            [
                HTMLPage.Cell(HTMLPage.time(event.receivedAt)), HTMLPage.Cell(event.type + (event.subtype.map { "/\($0)" } ?? "")),
                .raw("<code>\(HTMLPage.escape(event.originalTransactionId))</code>"), HTMLPage.Cell(event.outcomeText),
            ]
        }
        return "<section class=\"wide\"><h2>Recent notifications</h2>"
            + HTMLPage.table(["received", "type", "subscription", "outcome"], rows, empty: "no notifications yet") + "</section>"
    }
}
