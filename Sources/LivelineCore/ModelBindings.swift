import LivelineModels

// Tests: none needed (declarations only)

// The model types each typed domain binds to, in one place.

enum RideModel {
    typealias Attributes = RideAttributes
    typealias State = RideAttributes.ContentState
    static let statuses = RideStatus.allCases.map(\.rawValue)
}

enum DeliveryModel {
    typealias Attributes = DeliveryAttributes
    typealias State = DeliveryAttributes.ContentState
    static let statuses = DeliveryStep.allCases.map(\.rawValue)
}

enum ScoreModel {
    typealias Attributes = ScoreAttributes
    typealias State = ScoreAttributes.ContentState
    static let statuses = GameStatus.allCases.map(\.rawValue)
}
