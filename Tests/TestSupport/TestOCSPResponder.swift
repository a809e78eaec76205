import Crypto
import Foundation
import LocalSigning
import SignedData
import SwiftASN1
import Synchronization
import X509

/// A real OCSP responder for a ``LocalSigningChain``: parses DER requests and answers DER `BasicOCSPResponse`s
/// signed by the issuer (leaf → intermediate key, intermediate → root key), with `good` or `revoked` per serial.
/// It can also play an unreachable responder. Used in-process as an ``OCSPTransport`` and behind a test HTTP server.
public final class TestOCSPResponder: OCSPTransport {
    public enum Behaviour: Sendable { case answer, unreachable }

    private let chain: LocalSigningChain
    private let state = Mutex<(revoked: Set<Certificate.SerialNumber>, behaviour: Behaviour, queries: Int)>(([], .answer, 0))

    public init(chain: LocalSigningChain) { self.chain = chain }

    public func revoke(_ certificate: Certificate) { state.withLock { _ = $0.revoked.insert(certificate.serialNumber) } }
    public func behave(_ behaviour: Behaviour) { state.withLock { $0.behaviour = behaviour } }
    public var queries: Int { state.withLock { $0.queries } }

    public struct Unreachable: Error {}

    public func fetch(request: [UInt8], responderURI: String) async throws -> [UInt8] {
        let (behaviour, revoked) = state.withLock { state in
            state.queries += 1
            return (state.behaviour, state.revoked)
        }
        guard behaviour == .answer else { throw Unreachable() }
        return try respond(to: request, revoked: revoked)
    }

    /// Answers one DER OCSP request.
    public func respond(to request: [UInt8], revoked: Set<Certificate.SerialNumber>? = nil) throws -> [UInt8] {
        let revoked = revoked ?? state.withLock { $0.revoked }
        // OCSPRequest → tbsRequest → requestList → first Request → reqCert (CertID), kept byte for byte.
        let root = try DER.parse(request)
        guard case .constructed(let requestNodes) = root.content, let tbs = Array(requestNodes).first,
            case .constructed(let tbsNodes) = tbs.content,
            let requestList = Array(tbsNodes).first(where: { $0.identifier == .sequence }),
            case .constructed(let requests) = requestList.content, let single = Array(requests).first,
            case .constructed(let singleNodes) = single.content, let certID = Array(singleNodes).first,
            case .constructed(let certIDNodes) = certID.content, Array(certIDNodes).count == 4,
            case .primitive(let serialBytes) = Array(certIDNodes)[3].content
        else { throw Malformed() }
        let serial = Certificate.SerialNumber(bytes: serialBytes)
        let (issuer, issuerKey): (Certificate, P384.Signing.PrivateKey?) =
            serial == chain.leaf.serialNumber ? (chain.intermediate, chain.intermediateKey) : (chain.root, chain.rootKey)
        guard let issuerKey else { throw Malformed() }

        let now = Date()
        var tbsSerializer = DER.Serializer()
        try tbsSerializer.appendConstructedNode(identifier: .sequence) { data in
            // responderID: byName [1] EXPLICIT Name — the issuer's subject.
            try data.appendConstructedNode(identifier: .init(tagWithNumber: 1, tagClass: .contextSpecific)) { name in
                try name.serialize(issuer.subject)
            }
            try data.serialize(try Self.generalizedTime(now.addingTimeInterval(-60)))
            try data.appendConstructedNode(identifier: .sequence) { responses in
                try responses.appendConstructedNode(identifier: .sequence) { response in
                    response.serializeRawBytes(certID.encodedBytes)
                    if revoked.contains(serial) {
                        try response.appendConstructedNode(identifier: .init(tagWithNumber: 1, tagClass: .contextSpecific)) { info in
                            try info.serialize(try Self.generalizedTime(now.addingTimeInterval(-3600)))
                        }
                    } else {
                        response.appendPrimitiveNode(identifier: .init(tagWithNumber: 0, tagClass: .contextSpecific)) { _ in }
                    }
                    try response.serialize(try Self.generalizedTime(now.addingTimeInterval(-60)))
                    try response.appendConstructedNode(identifier: .init(tagWithNumber: 0, tagClass: .contextSpecific)) { next in
                        try next.serialize(try Self.generalizedTime(now.addingTimeInterval(86_400)))
                    }
                }
            }
        }
        let tbsBytes = tbsSerializer.serializedBytes
        let signature = try issuerKey.signature(for: tbsBytes).derRepresentation

        var basic = DER.Serializer()
        try basic.appendConstructedNode(identifier: .sequence) { basic in
            basic.serializeRawBytes(tbsBytes)
            try basic.appendConstructedNode(identifier: .sequence) { algorithm in
                try algorithm.serialize(ASN1ObjectIdentifier("1.2.840.10045.4.3.3"))  // ecdsa-with-SHA384
            }
            try basic.serialize(ASN1BitString(bytes: ArraySlice(signature)))
        }
        var response = DER.Serializer()
        try response.appendConstructedNode(identifier: .sequence) { response in
            response.appendPrimitiveNode(identifier: .enumerated) { $0.append(0) }  // successful
            try response.appendConstructedNode(identifier: .init(tagWithNumber: 0, tagClass: .contextSpecific)) { bytes in
                try bytes.appendConstructedNode(identifier: .sequence) { responseBytes in
                    try responseBytes.serialize(ASN1ObjectIdentifier("1.3.6.1.5.5.7.48.1.1"))  // id-pkix-ocsp-basic
                    try responseBytes.serialize(ASN1OctetString(contentBytes: ArraySlice(basic.serializedBytes)))
                }
            }
        }
        return response.serializedBytes
    }

    struct Malformed: Error {}

    static func generalizedTime(_ date: Date) throws -> GeneralizedTime {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return try GeneralizedTime(
            year: parts.year!, month: parts.month!, day: parts.day!, hours: parts.hour!, minutes: parts.minute!,
            seconds: parts.second!, fractionalSeconds: 0)
    }
}
