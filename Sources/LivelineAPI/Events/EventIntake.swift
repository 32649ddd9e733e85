// Tests: Tests/LivelineRuntimeTests/EventIntakeTests.swift

/// The api's side of events over HTTPS: its configuration, who its producers are, and where it counts them.
struct EventIntake: Sendable {
    let configuration: EventIntakeConfiguration
    let authenticator: ProducerAuthenticator
    let metrics: RequestMetrics

    init(_ configuration: EventIntakeConfiguration, metrics: RequestMetrics) {
        self.configuration = configuration
        authenticator = ProducerAuthenticator(configuration.producers)
        self.metrics = metrics
    }
}
