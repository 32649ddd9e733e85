import Foundation

extension Translator {
    /// The largest payload APNs accepts for a Live Activity push, in bytes.
    public static let maxPayloadBytes = 4_096

    /// Builds and validates the payload: ≤ 4096 bytes (`payload-too-large`) and a
    /// content-state that decodes back into the domain's model (`schema-mismatch`).
    static func payload(
        for event: DomainEvent, route: Route, style: PushStyle, previous: ActivitySnapshot?, snapshot: ActivitySnapshot,
        statusPolicy: StatusPolicy, contract: any ContentStateContract, notes: inout [String]
    ) -> Result<(APSFields, Data), TranslationDecision.Rejection> {
        let eventSeconds = event.time.unixSeconds
        var timestamp = eventSeconds
        if let lastSent = previous?.lastPushTimestamp, timestamp <= lastSent {
            timestamp = lastSent &+ 1
            notes.append("aps.timestamp raised to \(timestamp) so it is newer than the last push (\(lastSent))")
        }
        var unresolved: [String] = []
        let rendering = AlertRendering(message: event.message, contentState: event.contentState, attributes: snapshot.attributes)
        let alert = style.alert.map { rendering.render($0, unresolved: &unresolved) }
        if !unresolved.isEmpty { notes.append("alert placeholders without a value: \(unresolved.joined(separator: ", "))") }

        let isStart = route.event == .start
        let fields = APSFields(
            timestamp: timestamp,
            event: route.event,
            staleDate: style.staleAfterSeconds.map { eventSeconds &+ $0 },
            relevanceScore: style.relevanceScore,
            dismissalDate: route.event == .end ? LifecycleGuard.dismissalDate(statusPolicy.dismissal, endSeconds: eventSeconds) : nil,
            alert: alert,
            attributesType: isStart ? snapshot.attributesType : nil,
            inputPushToken: isStart
        )
        let payload: Data
        do {
            payload = try contract.encodePayload(fields, contentState: event.contentState, attributes: isStart ? snapshot.attributes : nil)
        } catch {
            let message = "payload could not be encoded: \(ModelDecoding.describe(error))"
            return .failure(.init(reason: .schemaMismatch, message: message, traceNotes: notes))
        }
        guard payload.count <= maxPayloadBytes else {
            let message = "payload is \(payload.count) bytes, more than the \(maxPayloadBytes)-byte APNs limit"
            return .failure(.init(reason: .payloadTooLarge, message: message, traceNotes: notes))
        }
        guard contract.contentStateRoundTrips(in: payload) else {
            let message = "content-state does not decode back into the \(event.domain) ContentState"
            return .failure(.init(reason: .schemaMismatch, message: message, traceNotes: notes))
        }
        return .success((fields, payload))
    }
}
