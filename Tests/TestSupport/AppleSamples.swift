import Foundation

/// Where the tests find Apple's certificates and real signed data. Apple Root CA - G3 is public and ships with the
/// repository (`config/AppleRootCA-G3.cer`, SHA-256 63343abf…3e9179 as Apple publishes it); the real sandbox samples
/// do not (they are the steering repository's, in `../shared/fixtures/apple-real`), so the tests built on them are
/// skipped, with the reason, in a clone that has none — and fail instead where `STOREKEEPER_REQUIRE_APPLE_SAMPLES=1`
/// (`.ci/run`), so CI cannot skip them silently.
public enum AppleSamples {
    /// The repository's root folder.
    public static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Apple Root CA - G3, as the repository ships it.
    public static let rootCertificate = repository.appendingPathComponent("config/AppleRootCA-G3.cer")

    /// The real samples: `STOREKEEPER_APPLE_SAMPLES`, else `../shared/fixtures/apple-real` beside the repository.
    public static let directory: URL = {
        if let path = ProcessInfo.processInfo.environment["STOREKEEPER_APPLE_SAMPLES"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        return repository.deletingLastPathComponent().appendingPathComponent("shared/fixtures/apple-real")
    }()

    /// Whether the samples are here (or required, so that their tests run and fail loudly without them).
    public static var available: Bool {
        required || FileManager.default.fileExists(atPath: directory.appendingPathComponent("46-notification.jws").path)
    }

    /// Whether this run must have them (`STOREKEEPER_REQUIRE_APPLE_SAMPLES=1`, set by `.ci/run`).
    public static var required: Bool { ProcessInfo.processInfo.environment["STOREKEEPER_REQUIRE_APPLE_SAMPLES"] == "1" }

    /// Why their tests are skipped.
    public static let absence =
        "Apple's real sandbox samples are not in ../shared/fixtures/apple-real (set STOREKEEPER_APPLE_SAMPLES to their folder); CI always has them"
}
