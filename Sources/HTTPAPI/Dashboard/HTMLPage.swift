import Foundation
import Hummingbird
import NIOCore

/// A server-rendered HTML page with its own styles — no external assets, no scripts.
struct HTMLPage: ResponseGenerator {
    var title: String
    var body: String
    /// 200, or 400 for a page that shows why the request could not be answered as asked.
    var status: HTTPResponse.Status = .ok

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let html = """
            <!doctype html><html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1"><title>\(Self.escape(title))</title>
            <style>\(Self.styles)</style></head><body>\(body)</body></html>
            """
        return Response(
            status: status,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
            ],
            body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// Text safe inside HTML elements and attribute values.
    static func escape(_ text: String) -> String {
        // By Unicode scalar, not Character: `"` followed by a combining mark is one Character that is not `"`, yet
        // the browser reads the quote and ends the attribute.
        var escaped = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped.append(contentsOf: "&amp;".unicodeScalars)
            case "<": escaped.append(contentsOf: "&lt;".unicodeScalars)
            case ">": escaped.append(contentsOf: "&gt;".unicodeScalars)
            case "\"": escaped.append(contentsOf: "&quot;".unicodeScalars)
            case "'": escaped.append(contentsOf: "&#39;".unicodeScalars)
            // Control characters (but tab and line ends) are parse errors in HTML text and attribute values: an id
            // that carries one shows the replacement character rather than passing it to the browser.
            case "\t", "\n", "\r": escaped.append(scalar)
            case _ where scalar.properties.generalCategory == .control: escaped.append("\u{FFFD}")
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }

    /// A table; cells are escaped unless they come from ``raw(_:)``.
    static func table(_ headers: [String], _ rows: [[Cell]], empty: String = "none") -> String {
        guard !rows.isEmpty else { return "<p class=\"muted\">\(escape(empty))</p>" }
        let head = headers.map { "<th>\(escape($0))</th>" }.joined()
        let body = rows.map { "<tr>" + $0.map { $0.numeric ? "<td class=\"num\">\($0.html)</td>" : "<td>\($0.html)</td>" }.joined() + "</tr>" }
            .joined()
        return "<table><thead><tr>\(head)</tr></thead><tbody>\(body)</tbody></table>"
    }

    /// One table cell.
    struct Cell: ExpressibleByStringLiteral {
        var html: String
        /// Right-aligned (`td.num`).
        var numeric = false
        init(_ text: String) { html = HTMLPage.escape(text) }
        init(stringLiteral value: String) { self.init(value) }
        static func raw(_ html: String) -> Cell {
            var cell = Cell("")
            cell.html = html
            return cell
        }

        /// A count, right-aligned.
        static func number(_ value: Int) -> Cell {
            var cell = Cell(String(value))
            cell.numeric = true
            return cell
        }
    }

    static func time(_ date: Date?) -> String {
        guard let date else { return "—" }
        return date.formatted(Date.ISO8601FormatStyle().year().month().day().time(includingFractionalSeconds: false).timeZone(separator: .omitted))
    }

    static let styles = """
        body{font:14px/1.45 -apple-system,system-ui,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d1d1f;background:#f5f5f7}
        header{background:#1d1d1f;color:#fff;padding:12px 24px;display:flex;gap:24px;align-items:baseline}
        header h1{font-size:18px;margin:0}header span{color:#a1a1a6}
        main{padding:16px 24px;display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:16px;max-width:2400px}
        section{background:#fff;border-radius:10px;padding:12px 16px;box-shadow:0 1px 2px rgba(0,0,0,.06);overflow:auto}
        section.wide{grid-column:1/-1}@media(max-width:900px){main{grid-template-columns:minmax(0,1fr)}}h2{font-size:15px;margin:4px 0 10px}
        table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #e8e8ed;vertical-align:top}
        th{color:#6e6e73;font-weight:600}td.num,th.num{text-align:right}code{font:12px ui-monospace,Menlo,monospace}
        .muted{color:#86868b}.bad{color:#c9302c;font-weight:600}.good{color:#1e7e34;font-weight:600}
        .stat{display:inline-block;margin-right:28px}.stat b{display:block;font-size:22px}
        form.inline{display:inline}button{font:inherit;padding:3px 10px;border-radius:6px;border:1px solid #0071e3;background:#0071e3;color:#fff;cursor:pointer}
        input[type=text]{font:inherit;padding:5px 8px;width:340px;border:1px solid #d2d2d7;border-radius:6px}
        header nav{color:#a1a1a6}header a{color:#fff}
        .kind{display:inline-block;font-size:11px;padding:1px 6px;border-radius:8px;background:#e8e8ed;color:#1d1d1f}
        .kind.signed{background:#dceeff}.kind.change{background:#e3f6e8}.kind.credits{background:#fff1d6}
        .kind.end{background:#fde2e1}.kind.operator{background:#efe3fb}
        svg.chart{width:100%;height:auto;max-height:260px}.legend{font-size:12px;display:flex;flex-wrap:wrap;gap:14px;margin:4px 0}
        .legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px}
        form.filters label{margin-right:10px;color:#6e6e73}form.filters input,form.filters select{font:inherit;padding:3px 6px}
        .error{max-width:520px;white-space:pre-wrap;word-break:break-word;font:12px ui-monospace,Menlo,monospace;color:#6e6e73}
        """
}
