import AppStoreModels
import ArgumentParser
import Crypto
import Foundation
import Persistence
import SignedData
import StorekeeperRuntime
import X509

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify a signed payload and print it decoded (nested JWS too), or the precise reason it fails.",
        discussion: """
            Reads a JWS — or a notification body {"signedPayload": "…"} — from FILE, or standard input with `-`. \
            Notifications, transactions, renewal infos and app transactions are recognised by their fields. Roots, \
            bundle id and environments default to STOREKEEPER_ROOT_CERTIFICATES, STOREKEEPER_BUNDLE_ID and \
            STOREKEEPER_ENVIRONMENTS; in a folder where `storekeeper dev` runs, to its local root and Apple's, its \
            bundle id and its clock. Exits 1 when the payload is not accepted.

            With --stored UUID it verifies the notification stored under that notificationUUID in DATABASE_URL: its \
            signed payload joined back from its stored parts, byte for byte as Apple sent it (its SHA-256 is printed).
            """
    )

    @Argument(help: "File with the JWS, or - for standard input.") var file: String?
    @Option(help: "The notificationUUID of a stored notification to verify instead of a file (needs DATABASE_URL).")
    var stored: String?
    @Option(name: .customLong("root"), help: "Trusted root certificate (DER or PEM); repeatable.") var roots: [String] = []
    @Option(help: "The app's bundle id.") var bundleId: String?
    @Option(name: .customLong("environment"), help: "Accepted environment (Production, Sandbox); repeatable.")
    var environments: [String] = []
    @Option(help: "The app's numeric Apple id (checked for Production).") var appAppleId: Int64?
    @Flag(help: "Validate certificates at the current time (online mode) instead of the payload's signedDate.")
    var now = false

    func validate() throws {
        guard (file == nil) != (stored == nil) else { throw ValidationError("give either FILE or --stored UUID") }
        if let stored, UUID(uuidString: stored) == nil { throw ValidationError("--stored takes a notificationUUID, got \"\(stored)\"") }
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        func list(_ name: String) -> [String] {
            (environment[name] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        // In a folder where `storekeeper dev` runs, what it trusts and signs for: its local root (beside Apple's), its
        // bundle id, and its clock — a payload `simulate` signed months ahead is not "from the future" here.
        let dev = DevEnvironment()
        let devSettings = dev.settings()
        let devRoot = dev.signingDirectory.appendingPathComponent("root.pem").path
        let devRoots =
            devSettings.isEmpty || !FileManager.default.fileExists(atPath: devRoot)
            ? [] : [devRoot] + ["config/AppleRootCA-G3.cer"].filter { FileManager.default.fileExists(atPath: $0) }
        let rootPaths = !roots.isEmpty ? roots : !list("STOREKEEPER_ROOT_CERTIFICATES").isEmpty ? list("STOREKEEPER_ROOT_CERTIFICATES") : devRoots
        guard !rootPaths.isEmpty else { throw CommandFailure("give --root PATH (Apple Root CA - G3) or set STOREKEEPER_ROOT_CERTIFICATES") }
        guard let bundleId = bundleId ?? environment["STOREKEEPER_BUNDLE_ID"] ?? devSettings["STOREKEEPER_BUNDLE_ID"] else {
            throw CommandFailure("give --bundle-id or set STOREKEEPER_BUNDLE_ID")
        }
        let names =
            environments.isEmpty
            ? (list("STOREKEEPER_ENVIRONMENTS").isEmpty ? ["Production", "Sandbox"] : list("STOREKEEPER_ENVIRONMENTS")) : environments
        let certificates = try rootPaths.map { path throws(VerificationError) in try TrustedRoots.load(path: path) }
        let clockNow = await operatorNow()
        let verifier = SignedDataVerifier(
            rootCertificates: certificates,
            policy: VerificationPolicy(
                bundleId: bundleId, appAppleId: appAppleId ?? Int64(environment["STOREKEEPER_APP_APPLE_ID"] ?? ""),
                environments: Set(names.map(AppStoreEnvironment.init(rawValue:))), validationTime: now ? .now : .signedDate),
            clock: { clockNow })

        let verified = try await verifier.verifyAnyKind(try await readPayload())
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        switch verified {
        case .notification(let notification):
            say(String(decoding: try encoder.encode(notification), as: UTF8.self))
            if case .ignored(let reason) = verifier.identityVerdict(for: notification) {
                throw CommandFailure("authentic, but Storekeeper would ignore it: \(reason)")
            }
            say("verified: notification \(notification.payload.notificationType) — accepted")
        case .transaction(let transaction):
            say(String(decoding: try encoder.encode(transaction), as: UTF8.self))
            say("verified: transaction \(transaction.transactionId)")
        case .renewalInfo(let renewal):
            say(String(decoding: try encoder.encode(renewal), as: UTF8.self))
            say("verified: renewal info of \(renewal.originalTransactionId)")
        case .appTransaction(let app):
            say(String(decoding: try encoder.encode(app), as: UTF8.self))
            say("verified: app transaction")
        }
    }

    private func readPayload() async throws -> String {
        if let stored, let uuid = UUID(uuidString: stored) { return try await storedPayload(uuid) }
        let file = file ?? "-"
        let data: Data
        if file == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let contents = FileManager.default.contents(atPath: file) else { throw CommandFailure("cannot read \(file)") }
            data = contents
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("{") {
            struct Body: Decodable { var signedPayload: String }
            guard let body = try? JSONDecoder().decode(Body.self, from: Data(text.utf8)) else {
                throw CommandFailure("\(file) is JSON without a signedPayload string")
            }
            return body.signedPayload
        }
        return text
    }

    /// The signed payload of stored notification `uuid`, as it was received.
    private func storedPayload(_ uuid: UUID) async throws -> String {
        let stored = try await withDatabase(label: "storekeeper.verify") { client, logger in
            try await client.withFencedConnection { try await SignedPayloadArchive(logger: logger).signedPayload(of: uuid, on: $0) }
        }
        let text: String
        switch stored {
        case nil: throw CommandFailure("no notification \(uuid.uuidString.lowercased()) is stored")
        case .cleared?:
            throw CommandFailure(
                "notification \(uuid.uuidString.lowercased())'s signed payload was cleared after the retention period (STOREKEEPER_SIGNED_RETENTION_DAYS)"
            )
        case .verbatim(let verbatim)?:
            text = verbatim
            say("stored verbatim: \(text.utf8.count) bytes")
        case .joined(let joined)?:
            text = joined
            say("joined from its stored parts: \(text.utf8.count) bytes")
        }
        say("sha256 \(SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined())")
        return text
    }
}
