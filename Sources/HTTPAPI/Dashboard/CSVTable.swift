import Hummingbird
import NIOCore

/// A table written as CSV (RFC 4180): every cell quoted, quotes doubled, CRLF between rows. A cell a spreadsheet would
/// run as a formula (`=`, `+`, `-`, `@`, tab or CR first, after any spaces) is prefixed with `'`, as OWASP advises, since operators open
/// these files in one and their cells hold text customers and operators typed.
struct CSVTable: ResponseGenerator {
    var header: [String]
    var rows: [[String]]
    /// The name a browser saves it as.
    var filename: String

    var text: String {
        ([header] + rows).map { $0.map(Self.cell).joined(separator: ",") }.joined(separator: "\r\n") + "\r\n"
    }

    static func cell(_ value: String) -> String {
        // Spaces before the formula character do not stop every spreadsheet: the first character that is not one decides.
        let first = value.first { $0 != " " } ?? value.first
        let guarded = first.map { "=+-@\t\r".contains($0) } == true ? "'" + value : value
        return "\"" + guarded.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "text/csv; charset=utf-8", .contentDisposition: "attachment; filename=\"\(filename)\""],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
