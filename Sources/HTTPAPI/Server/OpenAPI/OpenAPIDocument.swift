import Foundation
import Persistence

/// The OpenAPI 3.1 document `GET /openapi.json` serves: `openapi.json`, a resource of this package (`docs/openapi.json`
/// links to it), read once. SwiftPM copies it into `storekeeper_HTTPAPI.resources` beside the executable; an install
/// may keep that folder in `share/storekeeper` instead, as it keeps `sql`. Foundation's generated `Bundle.module` is
/// not used because it stops the process when the folder is missing; `serve` refuses to start with a clear message.
public enum OpenAPIDocument {
    /// The document's text, or nil when no copy of the resource is where a build or an install puts it.
    public static let text: String? = locations.lazy.compactMap { try? String(contentsOf: $0, encoding: .utf8) }.first

    static let resourceFolder = "storekeeper_HTTPAPI.resources"

    /// Where the document is looked for, first to last: beside the executable (a build, a test run), in an installed
    /// `share/storekeeper`, in the source tree this binary was built from.
    public static var locations: [URL] {
        let executable = RunningExecutable.url.deletingLastPathComponent()
        return [
            Bundle.main.bundleURL.appendingPathComponent(resourceFolder),
            executable.appendingPathComponent(resourceFolder),
            executable.deletingLastPathComponent().appendingPathComponent("share/storekeeper").appendingPathComponent(resourceFolder),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent(),
        ].map { $0.appendingPathComponent("openapi.json") }
    }
}
