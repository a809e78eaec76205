import Foundation
import SignedData
import TestSupport
import X509

/// The real Apple-signed sandbox samples in `../shared/fixtures/apple-real/` (read in place, never copied).
enum RealAppleSamples {
    enum Kind { case notification, transaction, renewal }

    struct Sample {
        let number: Int
        let kind: Kind
        /// The bundle id the payload names (renewal infos name none).
        let bundleId: String?
        /// 2021-format payloads carry no `environment`.
        let hasEnvironment: Bool

        var fileName: String {
            let suffix: String
            switch kind {
            case .notification: suffix = "notification"
            case .transaction: suffix = "transaction"
            case .renewal: suffix = "renewal"
            }
            return "\(number)-\(suffix).jws"
        }

        var text: String {
            get throws {
                try String(contentsOf: RealAppleSamples.directory.appendingPathComponent(fileName), encoding: .utf8)
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            }
        }
    }

    static let directory = AppleSamples.directory

    static let all: [Sample] = [
        Sample(number: 46, kind: .notification, bundleId: "com.tuyoo.testing", hasEnvironment: true),
        Sample(number: 47, kind: .transaction, bundleId: "com.tuyoo.testing", hasEnvironment: true),
        Sample(number: 48, kind: .renewal, bundleId: nil, hasEnvironment: true),
        Sample(number: 49, kind: .notification, bundleId: "com.Abilities", hasEnvironment: true),
        Sample(number: 50, kind: .transaction, bundleId: "com.leinotek.LovePush", hasEnvironment: true),
        Sample(number: 51, kind: .renewal, bundleId: nil, hasEnvironment: true),
        Sample(number: 52, kind: .renewal, bundleId: nil, hasEnvironment: true),
        Sample(number: 53, kind: .transaction, bundleId: "com.app.qysmat", hasEnvironment: true),
        Sample(number: 54, kind: .renewal, bundleId: nil, hasEnvironment: true),
        Sample(number: 55, kind: .transaction, bundleId: "com.app.qysmat", hasEnvironment: true),
        Sample(number: 56, kind: .renewal, bundleId: nil, hasEnvironment: true),
        Sample(number: 57, kind: .transaction, bundleId: "com.app.qysmat", hasEnvironment: true),
        Sample(number: 58, kind: .renewal, bundleId: nil, hasEnvironment: true),
        Sample(number: 59, kind: .transaction, bundleId: "club.omnichess.ios", hasEnvironment: false),
        Sample(number: 60, kind: .renewal, bundleId: nil, hasEnvironment: false),
        Sample(number: 61, kind: .transaction, bundleId: "club.omnichess.ios", hasEnvironment: false),
        Sample(number: 62, kind: .transaction, bundleId: "club.omnichess.ios", hasEnvironment: false),
        Sample(number: 63, kind: .transaction, bundleId: "club.omnichess.ios", hasEnvironment: false),
        Sample(number: 64, kind: .transaction, bundleId: "club.omnichess.ios", hasEnvironment: false),
        Sample(number: 65, kind: .transaction, bundleId: "club.omnichess.ios", hasEnvironment: false),
    ]

    static func appleRoot() throws -> Certificate {
        try TrustedRoots.load(path: AppleSamples.rootCertificate.path)
    }

    /// A Sandbox verifier for `bundleId`, validating at each payload's signedDate.
    static func verifier(bundleId: String, roots: [Certificate]) -> SignedDataVerifier {
        SignedDataVerifier(
            rootCertificates: roots,
            policy: VerificationPolicy(bundleId: bundleId, appAppleId: nil, environments: [.sandbox]))
    }
}
