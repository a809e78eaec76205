import SwiftASN1
import X509

/// The Apple-specific part of the chain rules: exactly leaf → intermediate → root, the WWDR intermediate marker
/// `1.2.840.113635.100.6.2.1` and the receipt-signing leaf marker `1.2.840.113635.100.6.11.1`.
/// Validity, signatures and CA constraints are checked by `RFC5280Policy` beside it.
struct AppleChainPolicy: VerifierPolicy {
    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]

    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        guard chain.count == 3 else {
            return .failsToMeetPolicy(reason: "expected a chain of 3 certificates, got \(chain.count)")
        }
        guard chain[1].extensions[oid: Self.intermediateMarker] != nil else {
            return .failsToMeetPolicy(reason: "intermediate lacks the Apple WWDR marker extension")
        }
        guard chain.leaf.extensions[oid: Self.leafMarker] != nil else {
            return .failsToMeetPolicy(reason: "leaf lacks the Apple receipt-signing marker extension")
        }
        return .meetsPolicy
    }
}
