import Foundation
import Hummingbird

/// The clock of a `storekeeper dev` server, which `storekeeper simulate advance` moves (the seam `dev` fills).
public protocol AdjustableClock: Sendable {
    /// The server's "now".
    func now() -> Date
    /// Moves "now" on by `seconds` (never back) and returns the new "now".
    func advance(by seconds: TimeInterval) -> Date
}

/// `GET /admin/dev/clock` and `POST /admin/dev/clock {"advanceSeconds": N}`: only `storekeeper dev` has them, behind
/// its admin key, so a month can pass in a walkthrough. Every rule reads the same clock, so expiry, credit windows
/// and status follow it.
struct DevClockController: Sendable {
    let clock: any AdjustableClock
    /// Brings the jobs waiting for a dev instant forward as far as the clock moved.
    let advanced: @Sendable (TimeInterval) async throws -> Void

    struct Reading: ResponseEncodable {
        var now: Date
        /// `now` to the millisecond (dates are written in whole seconds), for `simulate`'s signed dates.
        var nowMilliseconds: Int64

        init(_ now: Date) {
            self.now = now
            nowMilliseconds = Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        }
    }

    struct Advance: Decodable {
        var advanceSeconds: Double
    }

    func addRoutes(to group: RouterGroup<StorekeeperRequestContext>) {
        group.get("dev/clock") { _, _ in Reading(clock.now()) }
        group.post("dev/clock") { request, _ -> Reading in
            let body = try await request.decodeJSONBody(
                as: Advance.self, upTo: 1024, otherwise: #"the body must be {"advanceSeconds": number of seconds, at least 0}"#)
            // A clock that goes back would let a period's credits be granted twice; ten years is plenty of story.
            guard body.advanceSeconds.isFinite, (0...(10 * 366 * 86_400)).contains(body.advanceSeconds) else {
                throw APIError.badRequest("advanceSeconds must be 0 to 10 years: the dev clock only moves forward")
            }
            let before = Reading(clock.now())
            let now = clock.advance(by: body.advanceSeconds)
            try await withDatabase { try await advanced(body.advanceSeconds) }
            OperatorAudit.note("dev.clock.advance", before: before, after: Reading(now))
            return Reading(now)
        }
    }
}
