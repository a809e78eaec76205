import Application
import Hummingbird

// The status documents are the use cases' (events embed them); the HTTP layer only sends them.
extension AccountStatusResponse: ResponseEncodable {}
extension SubscriptionDetailResponse: ResponseEncodable {}
