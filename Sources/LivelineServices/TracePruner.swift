import Foundation
import LivelineLogging
import LivelineStore
import Logging
import ServiceLifecycle

/// Deletes trace lines older than the retention, at start and then every `interval`.
/// Every translator and sender runs one; a prune is one `DELETE` by time, so several at once
/// only find less to delete.
public struct TracePruner: Service {
    private let store: any ActivityStore
    private let retention: Duration
    private let interval: Duration
    private let logger: Logger

    /// - Parameters:
    ///   - retention: how long trace lines are kept (`liveline.trace.retention-days`, default 7 days).
    ///   - interval: how often to prune (default hourly).
    public init(store: any ActivityStore, retention: Duration, interval: Duration = .seconds(3600), logger: Logger) {
        self.store = store
        self.retention = retention
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            await prune()
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }

    /// One prune; failures are logged and tried again at the next interval.
    func prune() async {
        let cutoff = Date().addingTimeInterval(-TimeInterval(retention.components.seconds))
        do {
            let deleted = try await store.pruneTrace(olderThan: cutoff)
            logger.info("trace pruned", metadata: ServiceLogKey.metadata([.traceDeleted: "\(deleted)", .traceCutoff: "\(cutoff)"]))
        } catch {
            logger.warning("could not prune the trace", metadata: ServiceLogKey.metadata([.traceError: "\(error)"]))
        }
    }
}
