import Foundation
import LivelineAPNs
import LivelineCore
import LivelineModels
import LivelineServices

/// `liveline push`: one Live Activity push to one device, straight to APNs through the
/// sender's own client, and APNs' answer. For an app developer trying their widget without a
/// producer: the content-state is checked as a producer's would be (``Translator/testPush(token:attributesType:contentState:end:alert:now:)``).
public struct TestPushSender: Sendable {
    /// What one push asks for.
    public struct Request: Sendable {
        public var token: String
        /// The app whose credentials sign it; the domain's bundle id when nil.
        public var bundleID: String?
        public var attributesType: String
        /// The content-state, as JSON.
        public var contentState: Data
        public var end = false
        public var alert: (title: String, body: String)?
        public var environment: APNsEnvironment = .production
        public var priority: APNsPriority = .high

        public init(token: String, bundleID: String?, attributesType: String, contentState: Data) {
            self.token = token
            self.bundleID = bundleID
            self.attributesType = attributesType
            self.contentState = contentState
        }
    }

    /// APNs' answer, with what was sent.
    public struct Answer: Codable, Sendable, Equatable {
        /// The HTTP status; nil when no answer came (the connection failed).
        public var status: Int?
        /// APNs' `reason` (`BadDeviceToken`, `TopicDisallowed`, …).
        public var reason: String?
        public var apnsID: String?
        /// Why no answer came, when none did.
        public var detail: String?
        public var bundleID: String
        public var domain: String
        public var environment: String
        /// The payload as sent.
        public var payload: String

        public var delivered: Bool { status == 200 }

        /// One line for a person, then the payload.
        public var text: String {
            let outcome: String
            if delivered {
                outcome = "APNs accepted the push (200), apns-id \(apnsID ?? "?")"
            } else if let status {
                outcome = "APNs refused the push: \(status) \(reason ?? "")".trimmingCharacters(in: .whitespaces)
                    + (apnsID.map { ", apns-id \($0)" } ?? "")
            } else {
                outcome = "no answer from APNs: \(detail ?? "the connection failed")"
            }
            return "\(outcome)\n\(bundleID) \(environment), domain \(domain)\n\(payload)"
        }
    }

    public var translator: Translator
    public var clients: APNsClientDirectory

    public init(translator: Translator, clients: APNsClientDirectory) {
        self.translator = translator
        self.clients = clients
    }

    /// Builds the push, sends it once (no retry: the answer is what the developer came for)
    /// and returns APNs' answer. Throws, naming the flag, when the push cannot be built or no
    /// credentials sign it.
    public func send(_ request: Request, now: Date = Date()) async throws -> Answer {
        let push = try translator.testPush(
            token: request.token, attributesType: request.attributesType, contentState: request.contentState,
            end: request.end, alert: request.alert, now: now)
        let bundleID = request.bundleID ?? translator.domain(named: push.domain)?.bundleId ?? ""
        guard let client = clients.client(bundleID: bundleID, environment: request.environment) else {
            let served = clients.bundleIDs.isEmpty ? "none (set liveline.apps)" : clients.bundleIDs.joined(separator: ", ")
            throw TestPushError("no APNs credentials for \(bundleID) here; the apps configured are \(served)")
        }
        var answer = Answer(
            bundleID: bundleID, domain: push.domain, environment: request.environment.rawValue,
            payload: String(decoding: push.payload, as: UTF8.self))
        do {
            let response = try await client.send(
                APNsLiveActivityPush(deviceToken: push.token, payload: Array(push.payload), priority: request.priority))
            answer.status = response.status
            answer.apnsID = response.apnsID
        } catch {
            answer.status = error.status
            answer.reason = error.reason?.rawValue
            answer.apnsID = error.apnsID
            if error.status == nil { answer.detail = error.detail }
        }
        return answer
    }
}
