// Tests: Tests/LivelineCoreTests/PayloadValidationTests.swift, Tests/LivelineCoreTests/EnvelopeParsingTests.swift

/// Which content-state contract a domain uses.
public enum DomainKind: String, Codable, Hashable, Sendable {
    /// `RideAttributes`; status is `contentState.status`.
    case ride
    /// `DeliveryAttributes`; status is `contentState.currentStep`.
    case delivery
    /// `ScoreAttributes`; status is `contentState.status`.
    case score
    /// Opaque JSON objects; status is `data.status`.
    case generic

    var contract: any ContentStateContract {
        switch self {
        case .ride:
            ModelContract<RideModel.Attributes, RideModel.State>(
                statusKey: "status", modelStatuses: Set(RideModel.statuses))
        case .delivery:
            ModelContract<DeliveryModel.Attributes, DeliveryModel.State>(
                statusKey: "currentStep", modelStatuses: Set(DeliveryModel.statuses))
        case .score:
            ModelContract<ScoreModel.Attributes, ScoreModel.State>(
                statusKey: "status", modelStatuses: Set(ScoreModel.statuses))
        case .generic:
            OpaqueContract()
        }
    }
}
