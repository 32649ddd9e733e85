// Tests: Tests/LivelineCoreTests/GoldenPayloadTests.swift, Tests/LivelineCoreTests/RoundTripTests.swift

/// The default policies of the built-in domains. They are starting points: a
/// deployment overrides any of them in its configuration file.
extension DomainConfiguration {
    /// Rides: driver arrived alerts at priority 10, in English, German or Spanish by the
    /// device's locale; ETA ticks are routine (5, no alert); completed ends and stays 1 h; cancelled ends immediately; failed ends
    /// immediately with `data.message` as the alert body.
    public static func ride(bundleId: String) -> DomainConfiguration {
        DomainConfiguration(
            name: "ride", kind: .ride, attributesType: "RideAttributes", bundleId: bundleId,
            policy: DomainPolicy(
                staleAfterSeconds: 300,
                relevanceScore: 50,
                statuses: [
                    "driverAssigned": StatusPolicy(),
                    "driverEnRoute": StatusPolicy(),
                    "driverArrived": StatusPolicy(
                        alert: AlertTemplate(
                            title: "Your driver has arrived",
                            body: "{driverName} is waiting in a {vehicleDescription}.",
                            sound: "default",
                            translations: [
                                "de": .init(title: "Ihr Fahrer ist da", body: "{driverName} wartet: {vehicleDescription}."),
                                "es": .init(title: "Tu conductor ha llegado", body: "{driverName} te espera: {vehicleDescription}."),
                            ]
                        ),
                        priority: .high, relevanceScore: 100
                    ),
                    "inProgress": StatusPolicy(),
                    "arriving": StatusPolicy(relevanceScore: 80),
                    "completed": StatusPolicy(isTerminal: true, dismissal: .after(seconds: 3_600), relevanceScore: 0),
                    "cancelled": StatusPolicy(isTerminal: true, dismissal: .immediate, relevanceScore: 0),
                    "failed": StatusPolicy(
                        isTerminal: true, dismissal: .immediate,
                        alert: AlertTemplate(
                            title: "Ride failed",
                            body: "{message|Your ride could not be completed.}",
                            sound: "default"
                        ),
                        relevanceScore: 0
                    ),
                ],
                pushToStartAlert: AlertTemplate(
                    title: "Ride matched",
                    body: "{driverName} is on the way in a {vehicleDescription}.",
                    sound: "default"
                )
            )
        )
    }

    /// Deliveries: picked up alerts at 10; delivered ends with the default
    /// dismissal and an alert; cancelled ends immediately.
    public static func delivery(bundleId: String) -> DomainConfiguration {
        DomainConfiguration(
            name: "delivery", kind: .delivery, attributesType: "DeliveryAttributes", bundleId: bundleId,
            policy: DomainPolicy(
                staleAfterSeconds: 900,
                relevanceScore: 50,
                statuses: [
                    "confirmed": StatusPolicy(),
                    "preparing": StatusPolicy(),
                    "pickedUp": StatusPolicy(
                        alert: AlertTemplate(title: "Order picked up", body: "{driverName} is on the way.", sound: "default"),
                        priority: .high, relevanceScore: 80
                    ),
                    "delivering": StatusPolicy(relevanceScore: 80),
                    "delivered": StatusPolicy(
                        isTerminal: true, dismissal: .default,
                        alert: AlertTemplate(
                            title: "Order delivered",
                            body: "Enjoy your order from {restaurantName|the restaurant}.",
                            sound: "default"
                        ),
                        relevanceScore: 0
                    ),
                    "cancelled": StatusPolicy(isTerminal: true, dismissal: .immediate, relevanceScore: 0),
                ],
                pushToStartAlert: AlertTemplate(
                    title: "Order #{orderNumber} confirmed",
                    body: "{restaurantName|The restaurant} has your order.",
                    sound: "default"
                )
            )
        )
    }

    /// Game scores: a shared activity per game, broadcast on its channel; a score change
    /// alerts at 10; clock ticks are routine; final ends and stays 30 min;
    /// postponed/cancelled end immediately with an alert.
    public static func score(bundleId: String, finalDismissalSeconds: Int64 = 1_800) -> DomainConfiguration {
        let postponedAlert = AlertTemplate(
            title: "{homeTeam.abbreviation} vs {awayTeam.abbreviation}",
            body: "The game will not be played today.",
            sound: "default"
        )
        return DomainConfiguration(
            name: "score", kind: .score, attributesType: "ScoreAttributes", bundleId: bundleId,
            // A game is one activity for all its fans, on one broadcast channel.
            delivery: .channel, shared: true,
            policy: DomainPolicy(
                staleAfterSeconds: 300,
                relevanceScore: 50,
                statuses: [
                    "scheduled": StatusPolicy(),
                    "live": StatusPolicy(
                        alert: AlertTemplate(
                            title: "{homeTeam.abbreviation} vs {awayTeam.abbreviation}",
                            body: "The game has started.",
                            sound: "default"
                        ),
                        priority: .high, relevanceScore: 75
                    ),
                    "halftime": StatusPolicy(),
                    "intermission": StatusPolicy(),
                    "final": StatusPolicy(
                        isTerminal: true, dismissal: .after(seconds: finalDismissalSeconds),
                        alert: AlertTemplate(
                            title: "Final: {homeTeam.abbreviation} {homeScore} - {awayScore} {awayTeam.abbreviation}",
                            body: "{lastPlay|Full time.}",
                            sound: "default"
                        ),
                        relevanceScore: 0
                    ),
                    "postponed": StatusPolicy(isTerminal: true, dismissal: .immediate, alert: postponedAlert, relevanceScore: 0),
                    "cancelled": StatusPolicy(isTerminal: true, dismissal: .immediate, alert: postponedAlert, relevanceScore: 0),
                ],
                changeRules: [
                    ChangeRule(
                        name: "score",
                        fields: ["homeScore", "awayScore"],
                        alert: AlertTemplate(
                            title: "{homeTeam.abbreviation} {homeScore} - {awayScore} {awayTeam.abbreviation}",
                            body: "{lastPlay|Score update}",
                            sound: "default"
                        ),
                        priority: .high, relevanceScore: 100
                    ),
                ],
                pushToStartAlert: AlertTemplate(
                    title: "{homeTeam.name} vs {awayTeam.name}",
                    body: "Follow the game live.",
                    sound: "default"
                )
            )
        )
    }
}
