import Crypto
import Foundation
import LocalSigning
import Persistence
import PostgresNIO
import SignedData
import TestSupport
import Testing

@testable import IntegrationSupport

/// Stored notifications keep Apple's signed bytes as parts (headers once); these tests hold the stored form to the
/// bytes Apple sent — compared, hashed and verified again by a separate process — not to our own encoder.
@Suite("Signed payloads stored as parts, on real PostgreSQL")
struct SignedStorageTests {
    @Test(
        "Apple's notification is stored as parts, its header once; verify --stored joins it back byte for byte and re-verifies it",
        .enabled(if: AppleSamples.available, Comment(rawValue: AppleSamples.absence)))
    func storedRealNotification() async throws {
        let text = try RealAppleDataTests.sample("46-notification.jws")
        let nested = [try RealAppleDataTests.sample("47-transaction.jws"), try RealAppleDataTests.sample("48-renewal.jws")]
        let distinctHeaders = Set(([text] + nested).map { $0.split(separator: ".")[0] })
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_BUNDLE_ID": "com.tuyoo.testing"], rootPaths: RealAppleDataTests.appleRoot) {
            harness in
            try await harness.withHTTP { client in
                for expected in ["accepted", "duplicate"] {
                    let response = try await client.postNotification(try JSONEncoder().encode(["signedPayload": text]))
                    #expect((try? response.answer(IntakeAnswer.self))?.status == expected)
                }
            }
            let uuid = try #require(UUID(uuidString: "f893890d-99f9-4f17-bfe1-13970319f260"))
            // The parts are the facts: no decoded copy beside them.
            #expect(
                try await harness.count(
                    "SELECT count(*) FROM notifications WHERE signed_payload IS NULL AND signed_parts IS NOT NULL AND decoded IS NULL") == 1)
            #expect(try await harness.count("SELECT count(*) FROM signed_headers") == distinctHeaders.count)
            // The parts cost a quarter of the text at most, after PostgreSQL's compression.
            let stored = try await harness.count("SELECT pg_column_size(signed_parts) FROM notifications")
            #expect(stored * 4 <= text.utf8.count, "\(stored) of \(text.utf8.count) bytes")

            let archive = SignedPayloadArchive(logger: TestDatabase.logger)
            let joined = try await harness.client.withConnection { try await archive.signedPayload(of: uuid, on: $0) }
            #expect(joined == .joined(text))

            let digest = SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
            let (status, output) = try await Self.verifyStored(uuid.uuidString, harness: harness)
            #expect(status == 0, "\(output)")
            #expect(output.contains("joined from its stored parts: \(text.utf8.count) bytes"))
            #expect(output.contains("sha256 \(digest)"))
            #expect(output.contains("verified: notification DID_CHANGE_RENEWAL_STATUS"))

            let (unknownStatus, unknown) = try await Self.verifyStored(UUID().uuidString, harness: harness)
            #expect(unknownStatus == 1 && unknown.contains("no notification"))
            let (badStatus, bad) = try await Self.verifyStored("not-a-uuid", harness: harness)
            #expect(badStatus != 0 && bad.contains("--stored takes a notificationUUID"))
        }
    }

    @Test(
        "a stored byte changed is caught by the signature; cleared payloads say so, and the verified facts stay",
        .enabled(if: AppleSamples.available, Comment(rawValue: AppleSamples.absence)))
    func tamperingAndRetention() async throws {
        let text = try RealAppleDataTests.sample("46-notification.jws")
        try await StorekeeperHarness.run(environment: ["STOREKEEPER_BUNDLE_ID": "com.tuyoo.testing"], rootPaths: RealAppleDataTests.appleRoot) {
            harness in
            try await harness.withHTTP { client in
                let response = try await client.postNotification(try JSONEncoder().encode(["signedPayload": text]))
                #expect((try? response.answer(IntakeAnswer.self))?.status == "accepted")
            }
            try await eventually("the notification to be applied") {
                try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome = 'applied'") == 1
            }
            let uuid = "f893890d-99f9-4f17-bfe1-13970319f260"
            let archive = SignedPayloadArchive(logger: TestDatabase.logger)
            let original = try await Self.storedParts(harness)
            // One signed digit changed (the renewal info's JSON ends in one, three bytes from the end of the encoding):
            // the parts still join, and the signature refuses them.
            var encoded = try SignedParts(storedValue: original).encoded
            let digit = encoded.count - 3
            #expect((UInt8(ascii: "0")...UInt8(ascii: "9")).contains(encoded[digit]))
            encoded[digit] ^= 1
            let changed = try #require(SignedParts(encoded: encoded))
            try await Self.storeParts(try changed.storedValue(), harness: harness)
            let (tamperedStatus, tampered) = try await Self.verifyStored(uuid, harness: harness)
            #expect(tamperedStatus == 1 && tampered.contains("signature"), "\(tampered)")
            // Damaged compressed bytes are named as such; retention leaves such a row alone, its facts are nowhere else.
            var damaged = original
            damaged.moveWriterIndex(to: damaged.writerIndex - 8)
            try await Self.storeParts(damaged, harness: harness)
            let (damagedStatus, damagedOutput) = try await Self.verifyStored(uuid, harness: harness)
            #expect(damagedStatus == 1 && damagedOutput.contains("do not decode"), "\(damagedOutput)")
            let kept = try await harness.client.withTransaction(logger: TestDatabase.logger) {
                try await archive.clearSignedPayloads(receivedBefore: Date().addingTimeInterval(60), limit: 10, on: $0)
            }
            #expect(kept == 0)
            try await Self.storeParts(original, harness: harness)

            let none = try await harness.client.withTransaction(logger: TestDatabase.logger) {
                try await archive.clearSignedPayloads(receivedBefore: Date().addingTimeInterval(-86_400), limit: 10, on: $0)
            }
            #expect(none == 0)
            let cleared = try await harness.client.withTransaction(logger: TestDatabase.logger) {
                try await archive.clearSignedPayloads(receivedBefore: Date().addingTimeInterval(60), limit: 10, on: $0)
            }
            #expect(cleared == 1)
            let stored = try await harness.client.withConnection { try await archive.signedPayload(of: UUID(uuidString: uuid)!, on: $0) }
            #expect(stored == .cleared)
            let (clearedStatus, clearedOutput) = try await Self.verifyStored(uuid, harness: harness)
            #expect(clearedStatus == 1 && clearedOutput.contains("cleared after the retention period"))
            // The facts were written from the parts before they went: replay and the API read them.
            #expect(
                try await harness.count(
                    "SELECT count(*) FROM notifications WHERE decoded->'transaction'->>'transactionId' = '2000000310357357' AND decoded->'renewalInfo'->>'autoRenewStatus' = '0' AND decoded->'payload'->'data'->>'signedTransactionInfo' IS NULL"
                ) == 1)
            let (replayStatus, replayed) = try await TestProcess.run(
                "storekeeper", ["replay", "--all"], environment: ["DATABASE_URL": harness.databaseURL.urlString])
            #expect(replayStatus == 0, "\(replayed)")
        }
    }

    @Test("a payload its parts would not give back exactly (padded signature) is kept verbatim, with its facts, and applied")
    func verbatimWhenPartsWouldNotJoin() async throws {
        try await StorekeeperHarness.run { harness in
            let subscription = harness.subscription(account: UUID())
            let uuid = UUID()
            // RFC 7515 base64url has no padding; a verifier that tolerates it must not lose it when storing.
            let padded =
                try harness.signer.signedPayload(
                    for: SimulatedEvent.scenario(.subscribe, subscription: subscription, at: Date()), notificationUUID: uuid) + "=="
            try await harness.withHTTP { client in
                let response = try await client.postNotification(try JSONEncoder().encode(["signedPayload": padded]))
                #expect((try? response.answer(IntakeAnswer.self))?.status == "accepted")
            }
            try await eventually("the notification to be applied") {
                try await harness.count("SELECT count(*) FROM notifications WHERE apply_outcome = 'applied'") == 1
            }
            #expect(
                try await harness.count(
                    "SELECT count(*) FROM notifications WHERE signed_parts IS NULL AND signed_payload IS NOT NULL AND decoded IS NOT NULL") == 1)
            let stored = try await harness.client.withConnection {
                try await SignedPayloadArchive(logger: TestDatabase.logger).signedPayload(of: uuid, on: $0)
            }
            #expect(stored == .verbatim(padded))
            #expect(
                try await harness.count(
                    "SELECT count(*) FROM subscriptions WHERE original_transaction_id = '\(subscription.originalTransactionId)' AND status = 'active'"
                ) == 1)
        }
    }

    static func storedParts(_ harness: StorekeeperHarness) async throws -> ByteBuffer {
        let rows = try await harness.client.query("SELECT signed_parts FROM notifications", logger: TestDatabase.logger)
        for try await parts in rows.decode(ByteBuffer.self) { return parts }
        throw CancellationError()
    }

    static func storeParts(_ parts: ByteBuffer, harness: StorekeeperHarness) async throws {
        try await harness.client.query("UPDATE notifications SET signed_parts = \(parts)", logger: TestDatabase.logger)
    }

    static func verifyStored(_ uuid: String, harness: StorekeeperHarness) async throws -> (Int32, String) {
        try await TestProcess.run(
            "storekeeper", ["verify", "--stored", uuid, "--root", RealAppleDataTests.appleRoot[0], "--bundle-id", "com.tuyoo.testing"],
            environment: ["DATABASE_URL": harness.databaseURL.urlString])
    }
}
