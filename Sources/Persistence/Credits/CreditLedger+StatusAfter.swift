import Credits
import Foundation
import Subscriptions

// The status inputs an apply leaves its owner, known without reading them again (sql/0054): pure, held to the
// database's read by ScenarioPipelineTests (every apply's event status against the status endpoint) and worked by hand
// in StatusAfterApplyTests.
extension CreditLedger.StatusInputs {
    /// Whether ``after(_:of:in:posting:posted:at:)`` can tell every bucket the operations leave, as the read would at
    /// `now`: each bucket they open is in `ledger` already, or is one of the subscription's own (the snapshot holds
    /// every one of those, so one it lacks is new) — a bucket of the owner's own that the snapshot lacks may exist
    /// without being live now (posting keeps the stored one) —, every row goes to a bucket it holds or opens, and no
    /// window ends within a millisecond of `now` (the read compares microseconds; a bucket read back has its times to
    /// the millisecond).
    public static func canFollow(_ operations: [LedgerOperation], of subscription: String, in ledger: LedgerSnapshot, at now: Date) -> Bool {
        var ends = ledger.buckets.values.compactMap(\.validUntil)
        var opened = Set<String>()
        for operation in operations {
            switch operation {
            case .post(_, let opening?) where ledger.buckets[opening.key] == nil:
                guard opening.originalTransactionId == subscription, opening.accountId == nil else { return false }
                ends += opening.validUntil.map { [$0] } ?? []
                opened.insert(opening.key)
            case .post(let entry, .none) where ledger.buckets[entry.bucket] == nil && !opened.contains(entry.bucket):
                // A row given back to a former owner's top-up (a claw-back's, noted from outside the snapshot): posted
                // now, since deferred as this owner's it would not be flushed for an apply that reads that account.
                return false
            case .setWindowEnd(_, let end?):
                ends.append(end)
            case .post, .setWindowEnd:
                break
            }
        }
        return ends.allSatisfy { abs($0.timeIntervalSince(now)) >= 0.001 }
    }

    /// What `account_status_inputs` (sql/0022, `or_later`) reads for `account` once `operations` are posted, when the
    /// account's only subscription is `subscription` and it has no grant or purchase in force and no bucket of its own
    /// live only later (``CreditLedger/DerivationSnapshot/ownerHasMore`` is `false`), and ``canFollow(_:of:in:at:)``:
    /// `ledger` (read under the owner's lock) holds the subscription's buckets and the account's live ones with every
    /// entry. `posted` are the keys of the rows the posting wrote (``CreditLedger/Posting``); what each operation opens
    /// or moves is as the database keeps it (a bucket that exists is kept, times to the microsecond, then read to the
    /// millisecond). No meter's holds: sql/0022's read has none either.
    public static func after(
        _ subscription: SubscriptionState, of account: AccountID, in ledger: LedgerSnapshot, posting operations: [LedgerOperation],
        posted: Set<String>, at now: Date
    ) -> Self {
        // As the database kept them: the snapshot's own rule (a bucket that exists is kept, a zero delta changes
        // nothing), with the rows the post skipped as zero and times as stored.
        var after = ledger
        for operation in operations {
            switch operation {
            case .post(var entry, let opening):
                if !posted.contains(entry.operationKey) { entry.delta = 0 }
                let stored = opening.map { bucket in
                    var bucket = bucket
                    (bucket.validFrom, bucket.validUntil) = (Self.asStored(bucket.validFrom), bucket.validUntil.map(Self.asStored))
                    return bucket
                }
                after.apply(.post(entry, opening: stored))
            case .setWindowEnd(let key, let end):
                after.apply(.setWindowEnd(bucket: key, end: end.map(Self.asStored)))
            }
        }
        let live = after.buckets.values
            .filter { bucket in
                (bucket.accountId == account || bucket.originalTransactionId == subscription.originalTransactionId)
                    && (bucket.validUntil.map { $0 > now } ?? true)
            }
            .sorted {
                ($0.kind.spendRank, $0.validUntil ?? .distantFuture, $0.key) < ($1.kind.spendRank, $1.validUntil ?? .distantFuture, $1.key)
            }
            .map { AccountCredits.LiveBalance(bucket: $0, balance: after.balance(of: $0.key)) }
        return Self(subscriptions: [subscription], records: [], buckets: live)
    }

    /// A time as posting stores it (microseconds since 2000, truncated: ``CreditLedger/PostedOperation``) and a read
    /// gives it back (to the millisecond).
    static func asStored(_ date: Date) -> Date {
        let microseconds = CreditLedger.PostedOperation.microseconds(date)
        return Date(timeInterval: Double(microseconds) / 1_000_000, since: CreditLedger.PostedOperation.postgresEpoch).wholeMilliseconds
    }
}
