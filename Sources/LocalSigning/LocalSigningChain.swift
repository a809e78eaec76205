import Crypto
import Foundation
import SwiftASN1
import X509

/// An Apple-shaped signing chain made on this machine: a P-384 root, a P-384 intermediate with the WWDR marker
/// `1.2.840.113635.100.6.2.1`, and a P-256 leaf with the receipt-signing marker `1.2.840.113635.100.6.11.1`.
///
/// `storekeeper dev` trusts its root, `storekeeper simulate` signs with its leaf, and tests build good and bad
/// variants through ``Options``.
public struct LocalSigningChain: Sendable {
    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate
    public let leafKey: P256.Signing.PrivateKey
    /// The issuers' keys, kept in memory only (tests sign OCSP responses with them); `nil` for a loaded chain.
    public let intermediateKey: P384.Signing.PrivateKey?
    public let rootKey: P384.Signing.PrivateKey?

    /// What to put in the generated certificates; the defaults are the Apple profile.
    public struct Options: Sendable {
        public var notValidBefore: Date
        public var notValidAfter: Date
        /// Leaf validity, when it must differ from the rest of the chain.
        public var leafValidity: ClosedRange<Date>?
        public var intermediateMarker: ASN1ObjectIdentifier?
        public var leafMarker: ASN1ObjectIdentifier?
        public var rootName: String
        /// An OCSP responder URI for the leaf's and the intermediate's Authority Information Access, as Apple's have.
        public var ocspResponderURI: String?

        public init(
            notValidBefore: Date = Date(timeIntervalSince1970: 1_600_000_000),
            notValidAfter: Date = Date(timeIntervalSince1970: 2_200_000_000),
            leafValidity: ClosedRange<Date>? = nil,
            intermediateMarker: ASN1ObjectIdentifier? = [1, 2, 840, 113635, 100, 6, 2, 1],
            leafMarker: ASN1ObjectIdentifier? = [1, 2, 840, 113635, 100, 6, 11, 1],
            rootName: String = "Storekeeper Local Root CA", ocspResponderURI: String? = nil
        ) {
            self.notValidBefore = notValidBefore
            self.notValidAfter = notValidAfter
            self.leafValidity = leafValidity
            self.intermediateMarker = intermediateMarker
            self.leafMarker = leafMarker
            self.rootName = rootName
            self.ocspResponderURI = ocspResponderURI
        }
    }

    public init(
        root: Certificate, intermediate: Certificate, leaf: Certificate, leafKey: P256.Signing.PrivateKey,
        intermediateKey: P384.Signing.PrivateKey? = nil, rootKey: P384.Signing.PrivateKey? = nil
    ) {
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.leafKey = leafKey
        self.intermediateKey = intermediateKey
        self.rootKey = rootKey
    }

    /// Generates a fresh chain with new keys.
    public static func generate(_ options: Options = Options()) throws -> LocalSigningChain {
        let rootKey = P384.Signing.PrivateKey()
        let intermediateKey = P384.Signing.PrivateKey()
        let leafKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName {
            CommonName(options.rootName)
            OrganizationName("Storekeeper")
        }
        let intermediateName = try DistinguishedName {
            CommonName("Storekeeper Local WWDR Intermediate")
            OrganizationName("Storekeeper")
        }
        let leafName = try DistinguishedName {
            CommonName("Storekeeper Local Receipt Signing")
            OrganizationName("Storekeeper")
        }
        let rootPublic = Certificate.PublicKey(rootKey.publicKey)
        let intermediatePublic = Certificate.PublicKey(intermediateKey.publicKey)
        let leafPublic = Certificate.PublicKey(leafKey.publicKey)

        let root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: rootPublic,
            notValidBefore: options.notValidBefore, notValidAfter: options.notValidAfter,
            issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA384,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: rootPublic)
            },
            issuerPrivateKey: .init(rootKey)
        )
        let intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: intermediatePublic,
            notValidBefore: options.notValidBefore, notValidAfter: options.notValidAfter,
            issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA384,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: rootPublic).keyIdentifier)
                SubjectKeyIdentifier(hash: intermediatePublic)
                if let uri = options.ocspResponderURI {
                    AuthorityInformationAccess([.init(method: .ocspServer, location: .uniformResourceIdentifier(uri))])
                }
                if let marker = options.intermediateMarker {
                    Certificate.Extension(oid: marker, critical: false, value: [0x05, 0x00])
                }
            },
            issuerPrivateKey: .init(rootKey)
        )
        let leafValidity = options.leafValidity ?? options.notValidBefore...options.notValidAfter
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: leafPublic,
            notValidBefore: leafValidity.lowerBound, notValidAfter: leafValidity.upperBound,
            issuer: intermediateName, subject: leafName, signatureAlgorithm: .ecdsaWithSHA384,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: intermediatePublic).keyIdentifier)
                SubjectKeyIdentifier(hash: leafPublic)
                if let uri = options.ocspResponderURI {
                    AuthorityInformationAccess([.init(method: .ocspServer, location: .uniformResourceIdentifier(uri))])
                }
                if let marker = options.leafMarker {
                    Certificate.Extension(oid: marker, critical: false, value: [0x05, 0x00])
                }
            },
            issuerPrivateKey: .init(intermediateKey)
        )
        return LocalSigningChain(
            root: root, intermediate: intermediate, leaf: leaf, leafKey: leafKey, intermediateKey: intermediateKey,
            rootKey: rootKey)
    }
}
