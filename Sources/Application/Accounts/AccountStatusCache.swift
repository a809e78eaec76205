import Credits
import Foundation
import Persistence
import Subscriptions
import Synchronization

/// What an account's status is computed from — its subscriptions and its buckets that are live now or later, with
/// balances — kept per process so a status read costs no query. The status itself is evaluated at each read's own
/// now, so expiry by the clock needs no write.
///
/// Entries are dropped by the commits that change their account: this process's writers call ``invalidate(_:)``
/// (or ``invalidateAll()``) after they commit — jobs, whose commits are visible before they return, bracket their
/// run with ``beginWrite()`` and ``endWrite()`` — and the database NOTIFYs every other process's changes
/// (`sql/0012_account_changes.sql`) to the listener, which calls ``invalidate(_:)``. A read that started before an
/// invalidation never stores what it read. While the listener is not connected nothing is served from the cache.
///
/// With a read replica, the cache also keeps the ``ReplicaPositions`` its changes feed: which misses the replica may
/// answer.
public final class AccountStatusCache: Sendable {
    /// The inputs of one account's status, as read.
    public typealias Inputs = CreditLedger.StatusInputs

    private enum Entry {
        case inputs(Inputs, storedAt: ContinuousClock.Instant)
        /// Changed at this sequence number: a read that began before must not store.
        case changed(UInt64)
    }

    private struct State {
        var entries: [AccountID: Entry] = [:]
        var sequence: UInt64 = 0
        var clearedAt: UInt64 = 0
        var listening = false
        /// Writes of this process under way whose accounts are not known (jobs): nothing is stored meanwhile.
        var writesUnderWay = 0
        /// With a read replica: which accounts it has replayed every heard change of.
        var replica: ReplicaPositions?
    }

    private let state = Mutex(State())
    /// The longest an entry is served: a bound on staleness should a notification ever be lost.
    let maximumAge: Duration
    /// Entries kept at most; past it the cache starts over.
    let capacity: Int

    /// - Parameter replica: status reads that miss may go to a read replica, so positions are kept for it.
    public init(maximumAge: Duration = .seconds(30), capacity: Int = 200_000, replica: Bool = false) {
        self.maximumAge = maximumAge
        self.capacity = capacity
        if replica { state.withLock { $0.replica = ReplicaPositions() } }
    }

    /// The cached inputs of `account`, if fresh.
    func inputs(of account: AccountID) -> Inputs? {
        state.withLock { state in
            guard state.listening, case .inputs(let inputs, let storedAt)? = state.entries[account],
                storedAt.duration(to: .now) < maximumAge
            else { return nil }
            return inputs
        }
    }

    /// Marks the start of a database read; pass the answer to ``store(_:of:readSince:)``.
    func beginRead() -> UInt64 { state.withLock { $0.sequence } }

    /// Keeps what a read found unless the account changed (or everything was dropped) since it began.
    func store(_ inputs: Inputs, of account: AccountID, readSince sequence: UInt64) {
        state.withLock { state in
            guard state.listening, state.writesUnderWay == 0, state.clearedAt <= sequence else { return }
            if case .changed(let at)? = state.entries[account], at > sequence { return }
            if state.entries.count >= capacity { Self.clear(&state) }
            state.entries[account] = .inputs(inputs, storedAt: .now)
        }
    }

    /// Drops `account`: it changed.
    public func invalidate(_ account: AccountID) {
        state.withLock { state in
            state.sequence += 1
            if state.entries.count >= capacity { Self.clear(&state) }
            state.entries[account] = .changed(state.sequence)
            state.replica?.changed(account)
        }
    }

    /// Drops every account: a change whose accounts are not known.
    public func invalidateAll() {
        state.withLock { Self.clear(&$0) }
    }

    /// Before a write whose accounts are not known and whose commit others may see before it returns (a job: its
    /// commit shows in the database at once): every entry goes, and nothing is stored until ``endWrite()``.
    public func beginWrite() {
        state.withLock { state in
            Self.clear(&state)
            state.writesUnderWay += 1
        }
    }

    /// After that write committed (or rolled back); reads begun during it do not store.
    public func endWrite() {
        state.withLock { state in
            state.writesUnderWay -= 1
            Self.clear(&state)
        }
    }

    /// The replay position at which the read replica shows every change of `account` heard so far, when it has
    /// reached it as last read; never while changes of other processes are not being heard, nor while a job of this
    /// process writes (its commit is seen by others before it ends, and by this cache only at its end).
    func replicaRequirement(of account: AccountID) -> UInt64? {
        state.withLock { state in
            guard state.listening, state.writesUnderWay == 0 else { return nil }
            return state.replica?.requirement(of: account)
        }
    }

    /// Runs `body` on the replica's positions under the cache's lock; `nil` without a replica.
    public func replicaPositions<Result>(_ body: (inout ReplicaPositions) -> Result) -> Result? {
        state.withLock { state in
            guard state.replica != nil else { return nil }
            return body(&state.replica!)
        }
    }

    /// Whether changes of other processes are being heard, so that reads may be served from memory.
    public var isListening: Bool { state.withLock { $0.listening } }

    /// Whether changes of other processes are being heard; entries are dropped on every change of it.
    public func setListening(_ listening: Bool) {
        state.withLock { state in
            Self.clear(&state)
            state.listening = listening
        }
    }

    private static func clear(_ state: inout State) {
        state.sequence += 1
        state.clearedAt = state.sequence
        state.entries.removeAll(keepingCapacity: true)
        state.replica?.changedEverything()
    }
}
