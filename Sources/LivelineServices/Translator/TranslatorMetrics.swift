import CoreMetrics
import LivelineCore
import Metrics

// Tests: Tests/LivelineServicesTests/TranslatorServiceTests.swift

/// The translator's counters (swift-metrics), created once so the hot path only
/// increments. Labels follow Prometheus naming; reasons are a `reason` dimension.
struct TranslatorMetrics: Sendable {
    let received: Counter
    let translated: Counter
    let jobsPublished: Counter
    let failedBatches: Counter
    let channelFailures: Counter
    let budgetContended: Counter
    let batchDuration: Metrics.Timer
    /// From an event's time to the translator taking it: the producer's delay plus the queue's.
    let queueWait: Metrics.Timer
    /// Pushes that wanted priority 10 and went at 5 (over their activity's budget).
    let downgraded: Counter
    /// Devices started into a live shared activity after its start (``BatchProcessor/startLate(limit:now:)``).
    let lateStarts: Counter
    /// Jobs that carry an alert, by how its text is given (``AlertForm``).
    private let alertJobs: [AlertForm: Counter]
    /// Devices a push left out: their app's content-state version cannot show its state.
    private let incompatibleDevices: Counter
    private let phases: [TranslatorPhase: Metrics.Timer]
    private let factory: any MetricsFactory

    init(factory: any MetricsFactory) {
        self.factory = factory
        received = Counter(label: "liveline_translator_events_received_total", factory: factory)
        translated = Counter(label: "liveline_translator_events_translated_total", factory: factory)
        jobsPublished = Counter(label: "liveline_translator_jobs_published_total", factory: factory)
        failedBatches = Counter(label: "liveline_translator_batches_failed_total", factory: factory)
        channelFailures = Counter(label: "liveline_translator_channel_failures_total", factory: factory)
        budgetContended = Counter(label: "liveline_translator_budget_contended_total", factory: factory)
        batchDuration = Metrics.Timer(label: "liveline_translator_batch_duration_seconds", factory: factory)
        queueWait = Metrics.Timer(label: "liveline_translator_queue_wait_seconds", factory: factory)
        downgraded = Counter(label: "liveline_translator_downgrades_total", factory: factory)
        lateStarts = Counter(label: "liveline_translator_late_starts_total", factory: factory)
        alertJobs = Dictionary(uniqueKeysWithValues: AlertForm.allCases.map {
            ($0, Counter(label: "liveline_translator_alert_jobs_total", dimensions: [("form", $0.rawValue)], factory: factory))
        })
        incompatibleDevices = Counter(label: "liveline_translator_incompatible_devices_total", factory: factory)
        var phases: [TranslatorPhase: Metrics.Timer] = [:]
        for phase in TranslatorPhase.allCases {
            phases[phase] = Metrics.Timer(
                label: "liveline_translator_phase_duration_seconds", dimensions: [("phase", phase.rawValue)], factory: factory)
        }
        self.phases = phases
    }

    /// Records how long one phase of a batch took, to show where a batch's time goes.
    func record(_ phase: TranslatorPhase, since start: ContinuousClock.Instant) -> ContinuousClock.Instant {
        let now = ContinuousClock.now
        let (seconds, attoseconds) = (now - start).components
        phases[phase]?.recordNanoseconds(seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000)
        return now
    }

    /// What published jobs carried: alerts by form, content-states by version, and the
    /// devices left out as too old for the state.
    func record(_ counts: JobCounts) {
        for (form, count) in counts.alerts where count > 0 { alertJobs[form]?.increment(by: count) }
        for (version, count) in counts.versions where count > 0 {
            Counter(label: "liveline_translator_content_state_jobs_total", dimensions: [("version", "\(version)")], factory: factory)
                .increment(by: count)
        }
        if counts.incompatible > 0 { incompatibleDevices.increment(by: counts.incompatible) }
    }

    /// Events that produced no push although nothing was wrong with them.
    func dropped(_ reason: String, count: Int = 1) {
        guard count > 0 else { return }
        Counter(label: "liveline_translator_events_dropped_total", dimensions: [("reason", reason)], factory: factory)
            .increment(by: count)
    }

    /// Events sent to the dead-letter exchange.
    func deadLettered(_ reason: String, count: Int = 1) {
        guard count > 0 else { return }
        Counter(label: "liveline_translator_events_dead_lettered_total", dimensions: [("reason", reason)], factory: factory)
            .increment(by: count)
    }
}

/// What a batch's jobs carry, counted for the metrics.
struct JobCounts: Sendable {
    /// Jobs with an alert, by its form.
    var alerts: [AlertForm: Int] = [:]
    /// Jobs by the content-state version of their payload.
    var versions: [Int: Int] = [:]
    /// Devices left out as too old for the state.
    var incompatible = 0

    init(_ sends: [TranslationDecision.Send] = []) {
        for send in sends {
            if let form = send.alertForm { alerts[form, default: 0] += send.jobs.count }
            versions.merge(send.jobsByVersion, uniquingKeysWith: +)
            incompatible += send.incompatible
        }
    }

    mutating func add(_ other: JobCounts) {
        alerts.merge(other.alerts, uniquingKeysWith: +)
        versions.merge(other.versions, uniquingKeysWith: +)
        incompatible += other.incompatible
    }
}

/// The phases of a batch, as the `phase` dimension of
/// `liveline_translator_phase_duration_seconds`.
public enum TranslatorPhase: String, Sendable, CaseIterable {
    /// Parsing and validating the CloudEvents (alongside the previous batch's store work).
    case parse
    /// Coalescing each batch (alongside the previous batch's store work, like parsing).
    case coalesce
    /// The one `loadSnapshots` call.
    case load
    /// The pure translation of every event.
    case translate
    /// The one `applyChanges` transaction, with the priority-10 budget it spends.
    case apply
    /// Encoding and publishing jobs and dead letters, until every confirm.
    case publish
}
