import Application
import Foundation
import Hummingbird
import NIOCore
import Subscriptions

/// `POST /admin/accounts/{accountId}/export`: everything Storekeeper holds about the account as one JSON document, to
/// download (a customer's access request); 404 when nothing is held. On the dashboard's routes, so its button works in
/// a signed-in browser; admin only, and in the audit log.
struct AccountExportController: Sendable {
    let exporter: AccountExport
    let clock: @Sendable () -> Date

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.post("accounts/{accountId}/export") { _, context -> Response in
            let account = try AccountsController.accountId(context)
            let now = clock()
            // The database first under the usual deadline, then as long as a large account's document takes.
            try await withDatabase { try await exporter.reachable() }
            guard let document = try await withDatabase(timeout: .seconds(30), { try await exporter.export(account, now: now) }) else {
                throw APIError(.notFound, code: .notFound, message: "Storekeeper holds nothing about account \(account.text.prefix(128))")
            }
            OperatorAudit.note("account.export", account: account.text, after: ["bytes": document.utf8.count])
            let filename =
                "storekeeper-account-"
                + String(account.text.unicodeScalars.map { $0.isASCII && CharacterSet.alphanumerics.contains($0) ? Character($0) : "_" }.prefix(64))
                + ".json"
            return Response(
                status: .ok,
                headers: [.contentType: APIError.jsonContentType, .contentDisposition: "attachment; filename=\"\(filename)\""],
                body: .init(byteBuffer: ByteBuffer(string: document)))
        }
    }
}
