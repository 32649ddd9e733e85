import Foundation
import LivelineCodecs

// Tests: Tests/LivelineRuntimeTests/TestPushSenderTests.swift

/// A push `liveline push` sends to one device, outside the pipeline.
public struct TestPush: Sendable {
    /// The domain whose activities are of the attributes type asked for.
    public var domain: String
    /// The whole push body.
    public var payload: Data
    /// The device token, lowercase hex.
    public var token: String
}

/// Why a test push was not built; the message names the flag at fault.
public struct TestPushError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension Translator {
    /// Builds one push for an app developer trying their widget: `contentState` is checked
    /// against the model of the domain whose activities are `attributesType`, as every
    /// event's content-state is, written as the pipeline writes it, and held to APNs' 4096
    /// bytes. An update, or an end dismissed at once; an alert with a title and a body.
    public func testPush(
        token: String, attributesType: String, contentState: Data, end: Bool, alert: (title: String, body: String)?, now: Date
    ) throws(TestPushError) -> TestPush {
        let lowered = DeviceToken.lowercased(token.trimmingCharacters(in: .whitespaces))
        guard DeviceToken.isValid(lowered), lowered.utf8.count >= 64 else {
            throw TestPushError("--token must be the device's push token as hex: an even number of 0-9 and a-f, at least 64")
        }
        guard let domain = configuration.domains.last(where: { $0.attributesType == attributesType }),
            let configured = domains[domain.name]
        else {
            let known = Set(configuration.domains.map(\.attributesType)).sorted().joined(separator: ", ")
            throw TestPushError("--attributes-type \(attributesType) is no configured domain's; the domains have \(known)")
        }
        let state: JSONValue
        do {
            state = try JSONValue.parse(contentState)
        } catch {
            throw TestPushError("--state is not JSON: \(error)")
        }
        let canonical: CanonicalValue
        do {
            canonical = try configured.contract.canonicalContentState(state, domain: domain.name)
        } catch {
            throw TestPushError("--state does not match \(attributesType).ContentState: \(error.message)")
        }
        let seconds = Int64(now.timeIntervalSince1970)
        let fields = APSFields(
            timestamp: seconds, event: end ? .end : .update, staleDate: nil, relevanceScore: nil,
            dismissalDate: end ? seconds : nil, alert: alert.map { RenderedAlert(title: .text($0.title), body: .text($0.body), sound: nil) })
        let payload = fields.payload(contentStateJSON: canonical.bytes, attributes: nil)
        guard payload.count <= Self.maxPayloadBytes else {
            throw TestPushError("the payload is \(payload.count) bytes, more than the \(Self.maxPayloadBytes)-byte APNs limit")
        }
        return TestPush(domain: domain.name, payload: payload, token: lowered)
    }
}
