import Crypto
import Foundation
import Hummingbird
import LivelineCodecs
import LivelineCore
import LivelineStore
import NIOCore

// Tests: Tests/LivelineRuntimeTests/EventIntakeTests.swift

/// Events over HTTPS, for producers that do not speak AMQP: `POST /v1/events` checks each
/// event as the translator will, claims its id, publishes it with confirms, and answers
/// `202` only once the broker confirmed it.
enum EventRoutes {
    static let routes: [APIRoute] = [
        APIRoute(method: .post, path: "/v1/events", handler: .producer(post)),
        APIRoute(method: .get, path: "/v1/events/{eventId}", handler: .producer(get)),
    ]

    /// The outcomes heard so far for an event, oldest first: those of the domains the
    /// producer may publish. None yet is a `404`: the event may still be on its way, or its
    /// domain does not report outcomes (`liveline.outcomes.domains`).
    @Sendable static func get(
        _ services: APIServices, _ request: Request, context: APIRequestContext, producer: ProducerCredential, intake: EventIntake
    ) async throws -> Response {
        let id = try context.parameter("eventId") { !$0.isEmpty && $0.utf8.count <= 256 }
        let outcomes = try await services.store.outcomes(eventID: id, limit: 1_000).filter { producer.mayPublish($0.domain) }
        guard !outcomes.isEmpty else {
            throw APIError.notFound(
                "no outcome is known for event \(id) yet; outcomes are kept for the domains in liveline.outcomes.domains")
        }
        // Each body is the outcome CloudEvent as it was published, written as it is.
        var writer = JSONWriter()
        writer.raw("{")
        writer.key("eventId")
        writer.string(id)
        writer.raw(",")
        writer.key("outcomes")
        writer.raw("[")
        for (index, outcome) in outcomes.enumerated() {
            if index > 0 { writer.raw(",") }
            writer.json(Array(outcome.body.utf8))
        }
        writer.raw("]}")
        return JSONResponse.make(data: writer.data)
    }

    /// All or nothing: one event the translator would dead-letter, one outside the
    /// producer's domains, or one id taken by another body refuses the whole request, and
    /// nothing is published. So a producer retries the same request, unchanged, until it
    /// gets a `202`.
    @Sendable static func post(
        _ services: APIServices, _ request: Request, context: APIRequestContext, producer: ProducerCredential, intake: EventIntake
    ) async throws -> Response {
        let configuration = intake.configuration
        let mode = try CloudEventsHTTP.mode(of: request)
        let limit = configuration.maximumBodyBytes
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            throw APIError.bodyTooLarge(limit: limit)
        }
        let body: Data
        do {
            body = Data(try await request.body.collect(upTo: limit).readableBytesView)
        } catch is NIOTooManyBytesError {
            // A body without a length: the middleware would name the app routes' smaller limit.
            throw APIError.bodyTooLarge(limit: limit)
        }
        let items = try CloudEventsHTTP.items(
            in: body, mode: mode, headers: request.headers, translator: configuration.translator,
            maximumBatch: configuration.maximumBatchEvents)

        let events = try checked(items, translator: configuration.translator, producer: producer)
        let accepted = events.map(AcceptedEvent.init)
        let claims = accepted.map { EventClaim(eventID: $0.id, producer: producer.name, digest: digest($0.body)) }
        let outcomes = try await services.store.claimEvents(claims, now: Date())
        let conflicts = zip(accepted.indices, outcomes).filter { $0.1 == .conflict }.map(\.0)
        guard conflicts.isEmpty else {
            intake.metrics.events(producer: producer.name, outcome: "conflict", count: events.count)
            throw APIError(
                .conflict, code: "event-id-conflict",
                message: "\(conflicts.count) event id(s) were taken by an event with another body; nothing was published",
                events: conflicts.map {
                    EventReport(index: $0, id: accepted[$0].id, reason: "event-id-conflict",
                                message: "this id was sent before with another body; a new event needs a new id")
                })
        }
        let toPublish = zip(accepted, outcomes).filter { $0.1 == .publish }.map(\.0)
        if !toPublish.isEmpty {
            do {
                try await configuration.sink.publish(toPublish)
            } catch {
                intake.metrics.events(producer: producer.name, outcome: "unavailable", count: events.count)
                context.logger.warning(
                    "events not confirmed by the broker", metadata: APILogKey.metadata([.error: "\(error)"]))
                throw APIError(
                    .serviceUnavailable, code: "broker-unavailable",
                    message: "the broker did not confirm the events in time; nothing is lost by retrying the same request",
                    retryAfter: configuration.retryAfterSeconds)
            }
            try await services.store.markEventsPublished(toPublish.map(\.id), now: Date())
        }
        let reports = zip(accepted.indices, outcomes).map { index, outcome in
            EventReport(index: index, id: accepted[index].id, status: outcome == .publish ? "accepted" : "duplicate")
        }
        intake.metrics.events(producer: producer.name, outcome: "accepted", count: toPublish.count)
        intake.metrics.events(producer: producer.name, outcome: "duplicate", count: events.count - toPublish.count)
        return try JSONResponse.make(EventsResponse(events: reports), status: .accepted)
    }

    /// The events, once each reads as its domain asks, is within its overrides' bounds, has
    /// an id of its own in the request and is in the producer's domains; 400 or 403 otherwise.
    private static func checked(_ items: [CloudEventsHTTP.Item], translator: Translator, producer: ProducerCredential) throws -> [DomainEvent] {
        var problems: [EventReport] = []
        var events: [DomainEvent] = []
        var seen: Set<String> = []
        for item in items {
            switch item.result {
            case .failure(let error):
                problems.append(EventReport(index: item.index, id: item.id, reason: error.deadLetterReason.rawValue, message: error.message))
            case .success(let event):
                if let violation = translator.overrideViolation(in: event) {
                    problems.append(EventReport(index: item.index, id: event.id, reason: DeadLetterReason.invalidOverride.rawValue, message: violation))
                } else if !seen.insert(event.id).inserted {
                    problems.append(EventReport(
                        index: item.index, id: event.id, reason: "repeated-id", message: "another event of this batch has this id"))
                } else {
                    events.append(event)
                }
            }
        }
        guard problems.isEmpty else {
            throw APIError(
                .badRequest, code: "invalid-events",
                message: "\(problems.count) of \(items.count) event(s) would be dead-lettered; nothing was published",
                events: problems)
        }
        let foreign = events.enumerated().filter { !producer.mayPublish($0.element.domain) }
        guard foreign.isEmpty else {
            let domains = Set(foreign.map(\.element.domain)).sorted().joined(separator: ", ")
            throw APIError(
                .forbidden, code: "forbidden-domain",
                message: "producer \(producer.name) may not publish to \(domains); nothing was published",
                events: foreign.map {
                    EventReport(index: $0.offset, id: $0.element.id, reason: "forbidden-domain",
                                message: "producer \(producer.name) may publish \(producer.domains.joined(separator: ", ")) only")
                })
        }
        return events
    }

    private static func digest(_ body: Data) -> String {
        Hex.encode(Array(SHA256.hash(data: body)))
    }
}

/// What `POST /v1/events` says about one event of the request.
public struct EventReport: Sendable, Hashable, Encodable {
    /// Its place in the request, from 0.
    public var index: Int
    public var id: String?
    /// `accepted` (published now) or `duplicate` (published before; nothing new), in a 202.
    public var status: String?
    /// In a refusal: the dead-letter reason the translator would give, `repeated-id`,
    /// `forbidden-domain` or `event-id-conflict`.
    public var reason: String?
    public var message: String?

    init(index: Int, id: String?, status: String? = nil, reason: String? = nil, message: String? = nil) {
        self.index = index
        self.id = id
        self.status = status
        self.reason = reason
        self.message = message
    }
}

/// `POST /v1/events`' `202`.
struct EventsResponse: Encodable {
    let events: [EventReport]
}
