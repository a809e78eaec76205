import Foundation

/// A job enqueued once per fixed interval, slots aligned to the Unix epoch (every 600 s: at :00, :10, …). Every
/// worker may try to enqueue due slots; ``PostgresJobQueue/enqueueDueSlots(of:now:)`` makes sure each slot is enqueued
/// exactly once and that slots missed while no worker ran are caught up in order.
public struct PeriodicSchedule: Sendable {
    public let name: String
    public let kind: String
    public let interval: TimeInterval
    /// Slots caught up at most per call (older missed slots follow on the next calls).
    public let maximumCatchUp: Int
    private let makeArguments: @Sendable (Date) -> String

    public init<Arguments: Encodable & Sendable>(
        name: String, kind: String, every interval: TimeInterval, maximumCatchUp: Int = 100,
        arguments: @escaping @Sendable (Date) -> Arguments
    ) {
        self.name = name
        self.kind = kind
        self.interval = interval
        self.maximumCatchUp = maximumCatchUp
        self.makeArguments = { slot in
            (try? JSONEncoder().encode(arguments(slot))).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        }
    }

    /// The start of the slot containing `date`.
    public func slot(containing date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 / interval).rounded(.down) * interval)
    }

    /// Slots after `last` up to and including `current`, oldest first, at most ``maximumCatchUp``.
    func slots(after last: Date, through current: Date) -> [Date] {
        var slots: [Date] = []
        var next = last.addingTimeInterval(interval)
        while next <= current, slots.count < maximumCatchUp {
            slots.append(next)
            next = next.addingTimeInterval(interval)
        }
        return slots
    }

    func job(for slot: Date) throws(JobQueueError) -> NewJob {
        var job = try NewJob(
            kind: kind, arguments: [String: String](), runAt: slot, uniqueKey: "periodic:\(name):\(Int64(slot.timeIntervalSince1970))")
        job.arguments = makeArguments(slot)
        return job
    }
}
