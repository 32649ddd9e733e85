import Foundation

// Tests: Tests/LivelineCoreTests/PayloadValidationTests.swift, Tests/LivelineCoreTests/GoldenPayloadTests.swift

extension Translator {
    /// The largest payload APNs accepts for a Live Activity push, in bytes.
    public static let maxPayloadBytes = 4_096

    /// Builds the payload, with `contentState` when given (an older version's) and the event's
    /// otherwise, and checks that it fits APNs' 4096 bytes (`payload-too-large`).
    static func payload(
        for event: DomainEvent, route: Route, inputPushChannel: String? = nil, language: String? = nil,
        contentState: Data? = nil, style: PushStyle,
        previous: ActivitySnapshot?,
        snapshot: ActivitySnapshot,
        statusPolicy: StatusPolicy, dismissalDate: EventTime? = nil, notes: inout [String]
    ) -> Result<(APSFields, Data), TranslationDecision.Rejection> {
        let eventSeconds = event.time.unixSeconds
        var timestamp = eventSeconds
        if let lastSent = previous?.lastPushTimestamp, timestamp <= lastSent {
            timestamp = lastSent &+ 1
            notes.append("aps.timestamp raised to \(timestamp) so it is newer than the last push (\(lastSent))")
        }
        var unresolved: [String] = []
        let rendering = AlertRendering(message: event.message, contentState: event.contentState, attributes: snapshot.attributes)
        let alert = style.alert.map { rendering.render($0, language: language, unresolved: &unresolved) }
        if !unresolved.isEmpty { notes.append("alert placeholders without a value: \(unresolved.joined(separator: ", "))") }

        let isStart = route.event == .start
        let fields = APSFields(
            timestamp: timestamp,
            event: route.event,
            staleDate: style.staleAfterSeconds.map { eventSeconds &+ $0 },
            relevanceScore: style.relevanceScore,
            dismissalDate: route.event == .end
                ? dismissalDate?.unixSeconds ?? LifecycleGuard.dismissalDate(statusPolicy.dismissal, endSeconds: eventSeconds) : nil,
            alert: alert,
            attributesType: isStart ? snapshot.attributesType : nil,
            // On a channel the activity needs no token of its own; elsewhere iOS 18 reports it.
            inputPushToken: isStart && inputPushChannel == nil,
            inputPushChannel: isStart ? inputPushChannel : nil
        )
        // Content-state and attributes are canonical since parsing: the model's own
        // encoding, checked to decode back (ContentStateContract).
        let payload = fields.payload(contentStateJSON: contentState ?? event.contentStateJSON, attributes: isStart ? snapshot.attributes : nil)
        guard payload.count <= maxPayloadBytes else {
            let message = "payload\(language.map { " in \($0)" } ?? "") is \(payload.count) bytes, more than the \(maxPayloadBytes)-byte APNs limit"
            return .failure(.init(reason: .payloadTooLarge, message: message, traceNotes: notes))
        }
        return .success((fields, payload))
    }
}
