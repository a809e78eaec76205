import Foundation

/// Times in requests: RFC 3339, strictly (`ISO8601DateFormatter` takes trailing junk, `+0100` and February 30th, and
/// refuses fractional seconds).
public enum RFC3339 {
    /// An RFC 3339 time, strictly: a date that does not exist (February 30th) is refused, not rolled over.
    public static func date(_ text: String) -> Date? {
        let pattern = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/
        guard let match = text.wholeMatch(of: pattern) else { return nil }
        let zone = String(match.output.8)
        var offset = 0
        if zone.count == 6 {
            // +24:00 or +00:60 is no offset: refused, never read as UTC.
            guard let hours = Int(zone.dropFirst().prefix(2)), let minutes = Int(zone.suffix(2)), hours < 24, minutes < 60 else { return nil }
            offset = (hours * 60 + minutes) * 60 * (zone.hasPrefix("-") ? -1 : 1)
        }
        // The wall time is read in UTC and the offset subtracted: `TimeZone(secondsFromGMT:)` stops at ±18 hours, and
        // RFC 3339 allows offsets up to ±23:59.
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0)!
        let parts = [match.output.1, match.output.2, match.output.3, match.output.4, match.output.5, match.output.6].compactMap { Int($0) }
        guard parts.count == 6 else { return nil }
        let components = DateComponents(year: parts[0], month: parts[1], day: parts[2], hour: parts[3], minute: parts[4], second: parts[5])
        guard let date = calendar.date(from: components) else { return nil }
        let back = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        guard [back.year, back.month, back.day, back.hour, back.minute, back.second] == parts.map(Optional.some) else { return nil }
        let fraction = match.output.7.flatMap { Double("0" + $0) } ?? 0
        return date.addingTimeInterval(fraction - TimeInterval(offset))
    }
}
