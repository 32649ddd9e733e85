import LivelineCodecs
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

    /// The content-state versions of the Swift model; nil for the generic domain, whose
    /// file declares them.
    var modelVersions: ContentStateVersions? {
        switch self {
        case .ride: ContentStateVersions(of: RideModel.State.self)
        case .delivery: ContentStateVersions(of: DeliveryModel.State.self)
        case .score: ContentStateVersions(of: ScoreModel.State.self)
        case .generic: nil
        }
    }

    /// An example content-state and attributes of the Swift model, every field set; nil for
    /// the generic domain, which has no model.
    var modelExample: (state: JSONValue, attributes: JSONValue)? {
        func encoded<State: Encodable, Attributes: Encodable>(_ example: (State, Attributes)) -> (JSONValue, JSONValue)? {
            guard let state = try? JSONValueEncoder().encode(example.0), let attributes = try? JSONValueEncoder().encode(example.1)
            else { return nil }
            return (state, attributes)
        }
        switch self {
        case .ride: return encoded(RideModel.example)
        case .delivery: return encoded(DeliveryModel.example)
        case .score: return encoded(ScoreModel.example)
        case .generic: return nil
        }
    }

    /// The model's enum fields with their cases, which a version's changes may name.
    var modelCases: [String: Set<String>] {
        switch self {
        case .ride: ["status": Set(RideModel.statuses)]
        case .delivery: ["currentStep": Set(DeliveryModel.statuses)]
        case .score: ["status": Set(ScoreModel.statuses)]
        case .generic: [:]
        }
    }
}
