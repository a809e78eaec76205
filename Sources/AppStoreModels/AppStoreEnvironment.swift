import Entitlements

/// The App Store environment a payload was signed for: a store environment (``StoreEnvironment``), under the name
/// Apple's documentation gives it.
public typealias AppStoreEnvironment = StoreEnvironment
