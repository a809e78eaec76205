import ArgumentParser

/// The options of a store's end-to-end benchmark (`stripe`, `play`).
struct StoreIntakeOptions: ParsableArguments {
    @Option(help: "Customers who subscribe.") var subscriptions = 2000
    @Option(help: "Concurrent HTTP clients.") var clients = 32
    @Option(help: "Store messages per second of the steady phase (open loop).") var rate = 200
    @Flag(help: "Print one JSON object on the last line.") var json = false

    func validate() throws {
        guard subscriptions > 0, clients > 0, rate > 0 else { throw ValidationError("--subscriptions, --clients and --rate must be positive") }
    }
}

/// What a store's end-to-end benchmark measured, and its report: intake burst, processing rate, the steady open-loop
/// phase and the same run's TPC-B.
struct StoreIntakeMeasurement {
    /// `stripe` or `play`.
    var benchmark: String
    /// The first line: what was sent to what.
    var headline: String
    /// What one message is called in the report (`events`, `notifications`).
    var unit: String
    /// The store's API reads behind each message (`Stripe API reads`, `Play API reads`).
    var reads: String
    var options: StoreIntakeOptions
    var burst: SystemUnderTest.SendPhase
    var processed: Double
    var steady: SystemUnderTest.SendPhase
    var readsPerMessage: Double
    var tpcb: Double
    var residentBytes: Int

    var report: BenchmarkReport {
        let intake = Double(burst.accepted) / max(burst.seconds, 0.001)
        let format = { (value: Double) in String(format: "%.2f", value) }
        var report = BenchmarkReport()
        report.lines = [
            headline,
            "  intake:    \(Int(intake)) \(unit)/s (\(burst.accepted) accepted, \(burst.failed) failed); latency p50 \(format(burst.percentile(0.5))) ms, p99 \(format(burst.percentile(0.99))) ms",
            "  processed: \(Int(processed)) \(unit)/s while the intake ran (first received to last processed), \(format(readsPerMessage)) \(reads) per message",
            "  steady \(options.rate)/s (open loop, \(steady.sent) renewal \(unit)): \(steady.accepted) accepted, \(steady.failed) failed; "
                + "latency p50 \(format(steady.percentile(0.5))) ms, p99 \(format(steady.percentile(0.99))) ms",
            "  reference: pgbench TPC-B (durable, \(options.clients) clients, scale \(options.clients)) \(Int(tpcb)) tps on the same cluster; "
                + "intake \(format(intake / max(tpcb, 0.001)))×, processed \(format(processed / max(tpcb, 0.001)))×",
            "  peak resident: serve + work \(format(Double(residentBytes) / 1_048_576)) MB",
        ]
        report.fields = [
            ("benchmark", .text(benchmark)), (unit, .integer(burst.sent)), ("clients", .integer(options.clients)),
            ("intakePerSecond", .integer(Int(intake))), ("intakeP50Ms", .number(burst.percentile(0.5))),
            ("intakeP99Ms", .number(burst.percentile(0.99))),
            ("processedPerSecond", .integer(Int(processed))), ("readsPerMessage", .number(readsPerMessage)), ("steadyRate", .integer(options.rate)),
            ("steadyP50Ms", .number(steady.percentile(0.5))), ("steadyP99Ms", .number(steady.percentile(0.99))),
            ("failed", .integer(burst.failed + steady.failed)), ("pgbenchTPCB", .integer(Int(tpcb))),
            ("intakeRatio", .number(intake / max(tpcb, 0.001))), ("processedRatio", .number(processed / max(tpcb, 0.001))),
        ]
        return report
    }
}
