import Foundation
import TestSupport
import Testing

@testable import IntegrationSupport

/// `docs/architecture.md` is the map a newcomer reads first, so it must stay true: its module table has one row per
/// library and executable target of `Package.swift` (test targets apart), each row's "depends on" cell names exactly
/// that target's in-package dependencies, and its HTTPAPI folder table names every folder of `Sources/HTTPAPI`. A new
/// module, a changed dependency or a new folder fails here until the map says so.
@Suite("The architecture map is true to Package.swift and Sources/HTTPAPI")
struct ArchitectureMapTests {
    static let package = read("Package.swift")
    static let document = read("docs/architecture.md")

    static func read(_ path: String) -> String {
        (try? String(contentsOf: AppleSamples.repository.appendingPathComponent(path), encoding: .utf8)) ?? ""
    }

    // MARK: Package.swift

    /// Every `.target(…)` and `.executableTarget(…)` of `manifest` (never `.testTarget(…)`), by name, with its
    /// in-package dependencies: the plain string literals of its `dependencies: […]` list. A `.product(name: "X",
    /// package: "y")` entry is another package's and is left out (its strings sit inside parentheses).
    static func targets(in manifest: String) -> [String: Set<String>] {
        let text = Array(manifest)
        var targets: [String: Set<String>] = [:]
        var index = 0
        while index < text.count {
            if let skipped = skipLiteralOrComment(text, at: index) {
                index = skipped
                continue
            }
            var call: String?
            for opening in [".target(", ".executableTarget("] where matches(text, at: index, opening) {
                call = opening
            }
            guard let opening = call else {
                index += 1
                continue
            }
            let open = index + opening.count - 1
            let close = closing(text, from: open, open: "(", close: ")")
            let body = Array(text[(open + 1)..<close])
            if let name = name(in: body) {
                targets[name] = dependencies(in: body)
            }
            // Past the whole call: nothing inside it declares a target.
            index = close + 1
        }
        return targets
    }

    /// Whether `word` is spelt in `text` from `index` on.
    static func matches(_ text: [Character], at index: Int, _ word: String) -> Bool {
        let characters = Array(word)
        guard index + characters.count <= text.count else { return false }
        for offset in 0..<characters.count where text[index + offset] != characters[offset] {
            return false
        }
        return true
    }

    /// When a string literal or a `//` comment starts at `index`: the index just past it.
    static func skipLiteralOrComment(_ text: [Character], at index: Int) -> Int? {
        if text[index] == "\"" {
            var position = index + 1
            while position < text.count, text[position] != "\"" {
                position += text[position] == "\\" ? 2 : 1
            }
            return position + 1
        }
        if matches(text, at: index, "//") {
            var position = index
            while position < text.count, text[position] != "\n" { position += 1 }
            return position
        }
        return nil
    }

    /// The index of the bracket that closes the one at `start`, string literals and comments skipped; the end of
    /// `text` when it is never closed.
    static func closing(_ text: [Character], from start: Int, open: Character, close: Character) -> Int {
        var depth = 0
        var index = start
        while index < text.count {
            if let skipped = skipLiteralOrComment(text, at: index) {
                index = skipped
                continue
            }
            if text[index] == open { depth += 1 }
            if text[index] == close {
                depth -= 1
                if depth == 0 { return index }
            }
            index += 1
        }
        return text.count
    }

    /// The string literal that follows the call's first `name:`.
    static func name(in body: [Character]) -> String? {
        var index = 0
        while index < body.count, !matches(body, at: index, "name:") { index += 1 }
        while index < body.count, body[index] != "\"" { index += 1 }
        guard index < body.count else { return nil }
        var end = index + 1
        while end < body.count, body[end] != "\"" { end += 1 }
        guard end < body.count else { return nil }
        return String(body[(index + 1)..<end])
    }

    /// The plain string literals of the call's `dependencies: […]`, outside any parentheses.
    static func dependencies(in body: [Character]) -> Set<String> {
        var index = 0
        while index < body.count, !matches(body, at: index, "dependencies:") {
            if let skipped = skipLiteralOrComment(body, at: index) { index = skipped } else { index += 1 }
        }
        while index < body.count, body[index] != "[" { index += 1 }
        guard index < body.count else { return [] }
        let end = closing(body, from: index, open: "[", close: "]")
        var found: Set<String> = []
        var depth = 0
        var position = index + 1
        while position < end {
            let character = body[position]
            if character == "\"" {
                var stop = position + 1
                while stop < end, body[stop] != "\"" { stop += body[stop] == "\\" ? 2 : 1 }
                if depth == 0 { found.insert(String(body[(position + 1)..<min(stop, end)])) }
                position = stop + 1
                continue
            }
            if matches(body, at: position, "//") {
                while position < end, body[position] != "\n" { position += 1 }
                continue
            }
            if character == "(" { depth += 1 }
            if character == ")" { depth -= 1 }
            position += 1
        }
        return found
    }

    // MARK: docs/architecture.md

    /// The document's section under `## title`, up to the next `## `.
    static func section(_ title: String) -> String {
        guard let start = document.range(of: "\n## \(title)\n") else { return "" }
        let rest = document[start.upperBound...]
        return String(rest[..<(rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex)])
    }

    /// A table row's cells, trimmed.
    static func cells(_ line: String) -> [String] {
        var text = line.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("|") { text.removeFirst() }
        if text.hasSuffix("|") { text.removeLast() }
        return text.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// The table in `section` whose header's first cell is `firstHeader`: its header (lowercased) and its rows.
    static func table(in section: String, firstHeader: String) -> (header: [String], rows: [[String]]) {
        let lines = section.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (index, line) in lines.enumerated() where line.hasPrefix("|") {
            let header = cells(line).map { $0.lowercased() }
            guard header.first == firstHeader else { continue }
            var rows: [[String]] = []
            // The line after the header is its `|---|` separator.
            for row in lines.dropFirst(index + 2) {
                guard row.hasPrefix("|") else { break }
                rows.append(cells(row))
            }
            return (header, rows)
        }
        return ([], [])
    }

    /// The `code spans` of a cell, in order.
    static func codeSpans(_ cell: String) -> [String] {
        let parts = cell.split(separator: "`", omittingEmptySubsequences: false)
        return stride(from: 1, to: parts.count - 1, by: 2).map { String(parts[$0]) }
    }

    /// The module table: each row's module (its cell's one code span) with the code spans of its "depends on" cell.
    static func moduleRows() -> [(module: String, dependencies: Set<String>)] {
        let (header, rows) = table(in: section("Modules"), firstHeader: "module")
        guard let column = header.firstIndex(of: "depends on") else { return [] }
        var result: [(module: String, dependencies: Set<String>)] = []
        for cells in rows {
            let names = codeSpans(cells[0])
            let dependencies: Set<String> = column < cells.count ? Set(codeSpans(cells[column])) : []
            result.append((module: names.count == 1 ? names[0] : cells[0], dependencies: dependencies))
        }
        return result
    }

    // MARK: Tests

    @Test("Package.swift's targets are read as they are written")
    func manifestIsRead() {
        let targets = Self.targets(in: Self.package)
        #expect(!targets.isEmpty, "no target found in Package.swift: the test's reading of it is broken")
        #expect(targets["AppStoreTests"] == nil, "a test target was read as a module")
        // A target whose list mixes plain names with products and spans several lines.
        #expect(targets["HTTPAPI"]?.contains("Application") == true, "HTTPAPI's dependencies were not read")
        #expect(targets["HTTPAPI"]?.contains("Hummingbird") == false, "a .product(…) was read as an in-package dependency")
    }

    @Test("every non-test target of Package.swift has exactly one row in the module table")
    func everyTargetHasOneRow() {
        let targets = Self.targets(in: Self.package)
        let rows = Self.moduleRows()
        #expect(!rows.isEmpty, "docs/architecture.md has no module table (`| module | owns | depends on |` under `## Modules`)")
        let listed = Set(rows.map(\.module))
        for name in targets.keys.sorted() where !listed.contains(name) {
            let dependencies = targets[name, default: []].sorted().map { "`\($0)`" }.joined(separator: ", ")
            Issue.record("docs/architecture.md, ## Modules: add a row `| `\(name)` | … | \(dependencies.isEmpty ? "—" : dependencies) |`")
        }
        for name in listed.sorted() where rows.filter({ $0.module == name }).count > 1 {
            Issue.record("docs/architecture.md, ## Modules: `\(name)` has more than one row; keep one")
        }
    }

    @Test("every row of the module table names a target of Package.swift")
    func everyRowIsATarget() {
        let targets = Self.targets(in: Self.package)
        for row in Self.moduleRows() where targets[row.module] == nil {
            Issue.record("docs/architecture.md, ## Modules: `\(row.module)` is not a target of Package.swift; remove its row or fix its name")
        }
    }

    @Test("each row's depends-on cell is its target's in-package dependencies")
    func dependenciesMatch() {
        let targets = Self.targets(in: Self.package)
        for row in Self.moduleRows() {
            guard let expected = targets[row.module], expected != row.dependencies else { continue }
            let missing = expected.subtracting(row.dependencies).sorted()
            let extra = row.dependencies.subtracting(expected).sorted()
            var message = "docs/architecture.md, ## Modules: fix the depends-on cell of `\(row.module)`"
            if !missing.isEmpty { message += "; add \(missing.joined(separator: ", "))" }
            if !extra.isEmpty { message += "; remove \(extra.joined(separator: ", "))" }
            Issue.record(Comment(rawValue: message))
        }
    }

    @Test("every folder of Sources/HTTPAPI has a row in the HTTPAPI folder table, and every row is a folder")
    func httpFolders() throws {
        let root = AppleSamples.repository.appendingPathComponent("Sources/HTTPAPI")
        let names = try FileManager.default.contentsOfDirectory(atPath: root.path)
        var folders: Set<String> = []
        for name in names {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: root.appendingPathComponent(name).path, isDirectory: &isDirectory), isDirectory.boolValue {
                folders.insert(name)
            }
        }
        #expect(!folders.isEmpty, "no folder found in Sources/HTTPAPI")
        let rows = Self.table(in: Self.section("HTTPAPI folders"), firstHeader: "folder").rows
        #expect(!rows.isEmpty, "docs/architecture.md has no HTTPAPI folder table (`| folder | serves |` under `## HTTPAPI folders`)")
        var listed: Set<String> = []
        for cells in rows {
            guard var name = Self.codeSpans(cells[0]).first else { continue }
            if name.hasSuffix("/") { name.removeLast() }
            listed.insert(name)
        }
        for name in folders.subtracting(listed).sorted() {
            Issue.record("docs/architecture.md, ## HTTPAPI folders: add a row `| `\(name)/` | … |`")
        }
        for name in listed.subtracting(folders).sorted() {
            Issue.record("docs/architecture.md, ## HTTPAPI folders: `\(name)/` is not a folder of Sources/HTTPAPI; remove its row")
        }
    }
}
