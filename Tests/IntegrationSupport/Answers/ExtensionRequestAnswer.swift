/// `POST /admin/accounts/{accountId}/extensions` and `GET /admin/extensions/{requestIdentifier}`: one request to
/// extend renewal dates (openapi `RenewalExtension`).
struct ExtensionRequestAnswer: Decodable, Sendable {
    var requestIdentifier: String
    var kind: String
    var environment: String
    @RequiredNullable var subscription: String?
    @RequiredNullable var accountId: String?
    @RequiredNullable var productId: String?
    @RequiredNullable var storefrontCountryCodes: [String]?
    var days: Int
    var reasonCode: Int
    var requestedBy: String
    var requestedAt: String
    @RequiredNullable var answeredAt: String?
    @RequiredNullable var success: Bool?
    @RequiredNullable var effectiveDate: String?
    @RequiredNullable var error: String?
    var complete: Bool
    @RequiredNullable var completeDate: String?
    @RequiredNullable var succeededCount: Int?
    @RequiredNullable var failedCount: Int?
}

/// `GET /admin/accounts/{accountId}/extensions` and `GET /admin/extensions`: the extension requests.
struct ExtensionRequestListAnswer: Decodable, Sendable {
    var extensions: [ExtensionRequestAnswer]
}

/// `POST /admin/extensions`: extending every active subscriber of a product, or a dry run of it
/// (openapi `MassExtensionAnswer`).
struct MassExtensionAnswer: Decodable, Sendable {
    var dryRun: Bool
    var productId: String
    var environment: String
    var activePaidHere: Int
    var canAskApple: Bool
    @RequiredNullable var request: ExtensionRequestAnswer?
}
