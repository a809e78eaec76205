import Analytics
import Foundation

/// A chart drawn on the server as inline SVG: lines or grouped bars, a y axis from zero with four grid lines, the
/// first, middle and last dates under it and a legend — readable with JavaScript off, and with no asset from elsewhere.
struct SVGChart {
    enum Style { case line, bars }

    struct Line {
        var label: String
        var values: [Double?]
    }

    var title: String
    var style: Style
    var dates: [AnalyticsDay]
    var lines: [Line]
    /// How a value is written on the axis (money in major units, counts, percentages).
    var format: (Double) -> String
    /// Counts: the axis steps in whole numbers.
    var wholeNumbers = false

    static let palette = ["#0071e3", "#34c759", "#ff9f0a", "#af52de", "#ff3b30", "#5ac8fa", "#8e8e93"]
    static let (width, height) = (560.0, 220.0)
    static let (left, right, top, bottom) = (64.0, 12.0, 12.0, 28.0)

    var svg: String {
        let plotWidth = Self.width - Self.left - Self.right
        let plotHeight = Self.height - Self.top - Self.bottom
        let values = lines.flatMap { $0.values.compactMap { $0 } }
        // Counts step in whole numbers: four grid lines need a maximum that is a multiple of 4.
        let highest = max(values.max() ?? 0, 0)
        let maximum = wholeNumbers ? 4 * max(Self.niceCeiling(highest / 4, steps: [1, 2, 5, 10]), 1) : Self.niceCeiling(highest)
        let minimum = min(values.min() ?? 0, 0)
        let span = max(maximum - minimum, 1e-9)
        func y(_ value: Double) -> Double { Self.top + plotHeight * (1 - (value - minimum) / span) }
        let count = max(dates.count, 1)
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(Int(Self.width)) \(Int(Self.height))" role="img" \
            aria-label="\(HTMLPage.escape(title))" class="chart"><title>\(HTMLPage.escape(title))</title>
            """
        for step in 0...4 {
            let value = minimum + span * Double(step) / 4
            let at = y(value)
            svg +=
                "<line x1=\"\(Self.left)\" x2=\"\(Self.width - Self.right)\" y1=\"\(Self.rounded(at))\" y2=\"\(Self.rounded(at))\" stroke=\"#e8e8ed\"/>"
            svg +=
                "<text x=\"\(Self.left - 6)\" y=\"\(Self.rounded(at + 4))\" text-anchor=\"end\" font-size=\"10\" fill=\"#6e6e73\">\(HTMLPage.escape(format(value)))</text>"
        }
        for index in Set([0, count / 2, count - 1]).sorted() where dates.indices.contains(index) {
            let x = Self.left + plotWidth * (Double(index) + 0.5) / Double(count)
            // The first and last dates hang inward, so neither is cut at the edge.
            let anchor = count > 1 && index == 0 ? "start" : count > 1 && index == count - 1 ? "end" : "middle"
            svg +=
                "<text x=\"\(Self.rounded(x))\" y=\"\(Self.height - 8)\" text-anchor=\"\(anchor)\" font-size=\"10\" fill=\"#6e6e73\">\(dates[index])</text>"
        }
        switch style {
        case .line:
            for (number, line) in lines.enumerated() {
                let color = Self.palette[number % Self.palette.count]
                // A gap (no value) breaks the line.
                var segments: [[String]] = [[]]
                for (index, value) in line.values.enumerated() {
                    guard let value else {
                        segments.append([])
                        continue
                    }
                    let x = Self.left + plotWidth * (Double(index) + 0.5) / Double(count)
                    segments[segments.count - 1].append("\(Self.rounded(x)),\(Self.rounded(y(value)))")
                }
                for points in segments where !points.isEmpty {
                    svg += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\" points=\"\(points.joined(separator: " "))\"/>"
                }
            }
        case .bars:
            let group = plotWidth / Double(count)
            let bar = max(group * 0.8 / Double(max(lines.count, 1)), 0.5)
            for (number, line) in lines.enumerated() {
                let color = Self.palette[number % Self.palette.count]
                for (index, value) in line.values.enumerated() {
                    guard let value, value != 0 else { continue }
                    let x = Self.left + group * Double(index) + group * 0.1 + bar * Double(number)
                    let (top, base) = (y(max(value, 0)), y(min(value, 0)))
                    svg +=
                        "<rect x=\"\(Self.rounded(x))\" y=\"\(Self.rounded(top))\" width=\"\(Self.rounded(bar))\" height=\"\(Self.rounded(max(base - top, 0.5)))\" fill=\"\(color)\"/>"
                }
            }
        }
        svg += "</svg><div class=\"legend\">"
        for (number, line) in lines.enumerated() {
            // A line's legend gives its last value (a level), bars their sum over the range (a flow).
            let shown = style == .line ? line.values.last(where: { $0 != nil }).flatMap { $0 } : line.values.compactMap { $0 }.reduce(0, +)
            let last = shown.map(format) ?? "—"
            svg +=
                "<span><i style=\"background:\(Self.palette[number % Self.palette.count])\"></i>\(HTMLPage.escape(line.label)) <b>\(HTMLPage.escape(last))</b></span>"
        }
        return svg + "</div>"
    }

    /// The smallest of `steps` × 10ⁿ at or above `value` (1, 2, 2.5 or 5 × 10ⁿ), so the axis reads in round steps;
    /// whole-number axes leave out 2.5 and never go below 1.
    static func niceCeiling(_ value: Double, steps: [Double] = [1, 2, 2.5, 5, 10]) -> Double {
        guard value > 0 else { return 1 }
        let magnitude = max(pow(10, floor(log10(value))), steps == [1, 2, 5, 10] ? 1 : 0)
        for step in steps where step * magnitude >= value { return step * magnitude }
        return 10 * magnitude
    }

    static func rounded(_ value: Double) -> String { String(format: "%.1f", value) }

    /// Milliunits as major units to two decimals, thousands grouped (`12,980.00`).
    static func money(_ milliunits: Double) -> String {
        let text = String(format: "%.2f", milliunits / 1000)
        let negative = text.hasPrefix("-")
        let digits = negative ? text.dropFirst() : Substring(text)
        let (whole, fraction) = (digits.prefix { $0 != "." }, digits.drop { $0 != "." })
        var grouped = ""
        for (index, digit) in whole.enumerated() {
            if index > 0, (whole.count - index) % 3 == 0 { grouped += "," }
            grouped.append(digit)
        }
        return (negative ? "-" : "") + grouped + fraction
    }

    static func count(_ value: Double) -> String { value == value.rounded() ? String(Int64(value)) : String(format: "%.1f", value) }
    static func percent(_ value: Double) -> String { String(format: "%.1f %%", value * 100) }
}
