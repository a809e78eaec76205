import Foundation
import Credits
import PostgresNIO

// The statements of every grant and spend, prepared: PostgreSQL parses and plans them once per connection.
extension CreditLedger {
    /// Opens a bucket unless it exists.
    struct OpenBucket: PostgresPreparedStatement {
        typealias Row = ()
        static let sql = """
            INSERT INTO credit_buckets (key, meter, kind, original_transaction_id, billing_period, account_id, valid_from,
                valid_until, price)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            ON CONFLICT (key) DO NOTHING
            """
        static let bindingDataTypes: [PostgresDataType] = [
            .text, .text, .text, .text, .text, .text, .timestamptz, .timestamptz, .int8,
        ]
        var bucket: CreditBucket

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 9)
            bindings.append(bucket.key)
            bindings.append(bucket.meter)
            bindings.append(bucket.kind.text)
            bindings.append(bucket.originalTransactionId)
            bindings.append(bucket.billingPeriod)
            bindings.append(bucket.accountId)
            bindings.append(bucket.validFrom)
            bindings.append(bucket.validUntil)
            bindings.append(bucket.price)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws {}
    }

    /// Appends one ledger row unless its operation key is posted already; a row comes back when it was written.
    struct PostEntry: PostgresPreparedStatement {
        static let sql = """
            INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES ($1, $2, $3, $4)
            ON CONFLICT (operation_key) DO NOTHING RETURNING id
            """
        static let bindingDataTypes: [PostgresDataType] = [.text, .text, .int8, .text]
        var operationKey: String
        var bucket: String
        var delta: Int64
        var reason: String

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 4)
            bindings.append(operationKey)
            bindings.append(bucket)
            bindings.append(delta)
            bindings.append(reason)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }
    }

    /// Opens a bucket unless it exists and appends one ledger row to it unless its operation key is posted already,
    /// in one round trip; a row comes back when the ledger row was written. (The ledger's reference to the bucket is
    /// checked at the end of the statement, when the bucket is there.)
    struct OpenBucketAndPost: PostgresPreparedStatement {
        static let sql = """
            WITH opened AS (\(OpenBucket.sql))
            INSERT INTO credit_ledger (operation_key, bucket, delta, reason) VALUES ($10, $1, $11, $12)
            ON CONFLICT (operation_key) DO NOTHING RETURNING id
            """
        static let bindingDataTypes = OpenBucket.bindingDataTypes + [.text, .int8, .text]
        var bucket: CreditBucket
        var operationKey: String
        var delta: Int64
        var reason: String

        func makeBindings() -> PostgresBindings {
            var bindings = OpenBucket(bucket: bucket).makeBindings()
            bindings.append(operationKey)
            bindings.append(delta)
            bindings.append(reason)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }
    }
}
