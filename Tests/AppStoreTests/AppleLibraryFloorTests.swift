import Foundation
import TestSupport
import Testing

@testable import IntegrationSupport

/// Apple's own Python library (PyPI `app-store-server-library`) as a floor under ``AppleLists``: every field of its
/// models and every notification type and subtype it knows must be on our lists, which the models are checked
/// against (`AppleListsTests`). The library lags Apple's changelogs, so the lists hold more than it does.
@Suite("Apple's library, a floor under our lists")
struct AppleLibraryFloorTests {
    @Test("every field, notification type and subtype of Apple's Python models is on our lists")
    func floor() async throws {
        guard let python = ProcessInfo.processInfo.environment["STOREKEEPER_TEST_APPLE_PYTHON"] else {
            print("skipped: app-store-server-library is not installed (scripts/test installs it from PyPI)")
            return
        }
        let script = """
            import attr, importlib
            models = {"transaction": "JWSTransactionDecodedPayload", "renewalInfo": "JWSRenewalInfoDecodedPayload",
                      "appTransaction": "AppTransaction", "notification": "ResponseBodyV2DecodedPayload",
                      "retentionRequest": "DecodedRealtimeRequestBody"}
            for key, name in models.items():
                cls = getattr(importlib.import_module("appstoreserverlibrary.models." + name), name)
                print(key, " ".join(a.name for a in attr.fields(cls) if not a.name.startswith("raw")))
            from appstoreserverlibrary.models.NotificationTypeV2 import NotificationTypeV2
            from appstoreserverlibrary.models.Subtype import Subtype
            print("types", " ".join(e.value for e in NotificationTypeV2))
            print("subtypes", " ".join(e.value for e in Subtype))
            """
        let (status, lines) = try await PythonScript.run(python, script, arguments: [])
        #expect(status == 0, "\(lines)")
        let ours: [String: Set<String>] = [
            "transaction": Set(AppleLists.transaction.map(\.name)), "renewalInfo": Set(AppleLists.renewalInfo.map(\.name)),
            "appTransaction": Set(AppleLists.appTransaction.map(\.name)), "notification": Set(AppleLists.notification.map(\.name)),
            "retentionRequest": Set(AppleLists.retentionRequest.map(\.name)),
            "types": Set(AppleLists.notificationTypes.map(\.0)), "subtypes": Set(AppleLists.subtypes.map(\.0)),
        ]
        var seen: Set<String> = []
        for line in lines {
            let words = line.split(separator: " ").map(String.init)
            guard let key = words.first, let list = ours[key] else { continue }
            seen.insert(key)
            let missing = Set(words.dropFirst()).subtracting(list)
            #expect(missing.isEmpty, "Apple's library knows \(key) items our lists lack: \(missing.sorted())")
        }
        #expect(seen == Set(ours.keys), "\(lines)")
    }
}
