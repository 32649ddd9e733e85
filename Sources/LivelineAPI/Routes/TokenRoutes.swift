import Foundation
import Hummingbird
import LivelineLogging
import LivelineStore

// Tests: Tests/LivelineAPITests/TokenRouteTests.swift

/// Update-token and push-to-start-token registration.
enum TokenRoutes {
    static let routes: [APIRoute] = [
        APIRoute(method: .put, path: "/v1/activities/{activityId}/tokens/{deviceId}", handler: .authenticated(putUpdateToken)),
        APIRoute(method: .delete, path: "/v1/activities/{activityId}/tokens/{deviceId}", handler: .authenticated(deleteUpdateToken)),
        APIRoute(method: .put, path: "/v1/push-to-start-tokens/{attributesType}", handler: .authenticated(putPushToStartToken)),
        APIRoute(method: .delete, path: "/v1/push-to-start-tokens/{attributesType}", handler: .authenticated(deletePushToStartToken)),
        APIRoute(method: .put, path: "/v1/push-to-start-tokens/{attributesType}/{deviceId}", handler: .authenticated(putPushToStartToken)),
        APIRoute(method: .delete, path: "/v1/push-to-start-tokens/{attributesType}/{deviceId}", handler: .authenticated(deletePushToStartToken)),
    ]

    @Sendable static func putUpdateToken(_ services: APIServices, _ request: Request, context: APIRequestContext, user: AuthenticatedUser) async throws -> Response {
        let activityID = try context.parameter("activityId", where: Validation.isIdentifier)
        let deviceID = try context.parameter("deviceId", where: Validation.isIdentifier)
        let input = try await services.body.decode(UpdateTokenBody.self, from: request)
        guard let token = Validation.normalizedToken(input.token) else {
            throw APIError.invalidField("'token' must be hex of an even length between 64 and 200")
        }
        let environment = try services.environment(input.environment)
        let locale = try Validation.locale(input.locale)
        let version = try Validation.contentVersion(input.contentStateVersion)
        if let domain = input.domain, !Validation.isDomain(domain) { throw APIError.invalidField("'domain' is not valid") }
        if let type = input.attributesType, !Validation.isAttributesType(type) {
            throw APIError.invalidField("'attributesType' is not valid")
        }
        if let domain = input.domain { try services.checkServes(domain: domain, user) }
        if let type = input.attributesType { try services.checkServes(attributesType: type, user) }
        let now = Date().roundedToMilliseconds
        // A device subscribing to a shared activity (a game on a device too old for its
        // channel) registers under the activity's owner, as the caller's own device: the
        // caller owns the subscription, not the activity.
        let shared = try await services.sharedActivity(user.key(activityID))
        let outcome = try await services.store.registerUpdateToken(UpdateTokenRegistration(
            activityID: user.key(activityID), deviceID: shared == nil ? deviceID : Self.subscriber(user, deviceID),
            userID: shared?.userID ?? user.key, token: token, environment: environment, locale: locale,
            contentVersion: version, domain: input.domain, attributesType: input.attributesType, at: now))
        var logger = context.logger
        logger[APILogKey.activityID] = "\(activityID)"
        logger[APILogKey.tokenPrefix] = "\(Validation.redacted(token))"
        let status: HTTPResponse.Status
        switch outcome {
        case .ownedByAnotherUser:
            throw APIError.forbidden("the activity belongs to another user")
        case .activityEnded:
            throw APIError.conflict(code: "activity-ended", "the activity has ended")
        case .created:
            status = .created
        case .replaced:
            status = .ok
        }
        logger.debug("update token registered", metadata: APILogKey.metadata([.outcome: "\(outcome)"]))
        return try JSONResponse.make(
            TokenRegistrationResponse(
                activityId: activityID, deviceId: deviceID, environment: environment, locale: locale,
                contentStateVersion: version, registeredAt: now),
            status: status)
    }

    @Sendable static func deleteUpdateToken(_ services: APIServices, _ request: Request, context: APIRequestContext, user: AuthenticatedUser) async throws -> Response {
        let activityID = try context.parameter("activityId", where: Validation.isIdentifier)
        let deviceID = try context.parameter("deviceId", where: Validation.isIdentifier)
        let shared = try await services.sharedActivity(user.key(activityID))
        switch try await services.store.removeUpdateToken(
            activityID: user.key(activityID), deviceID: shared == nil ? deviceID : Self.subscriber(user, deviceID),
            userID: shared?.userID ?? user.key)
        {
        case .removed: return Response(status: .noContent)
        case .notFound: throw APIError.notFound("no token is registered for this activity and device")
        case .ownedByAnotherUser: throw APIError.forbidden("the activity belongs to another user")
        }
    }

    /// One token per device and type; without `{deviceId}` the device is `default` (the
    /// route of apps that register a single device).
    @Sendable static func putPushToStartToken(_ services: APIServices, _ request: Request, context: APIRequestContext, user: AuthenticatedUser) async throws -> Response {
        let attributesType = try context.parameter("attributesType", where: Validation.isAttributesType)
        try services.checkServes(attributesType: attributesType, user)
        let deviceID = try deviceParameter(context) ?? PushToStartToken.defaultDeviceID
        let input = try await services.body.decode(PushToStartTokenBody.self, from: request)
        guard let token = Validation.normalizedToken(input.token) else {
            throw APIError.invalidField("'token' must be hex of an even length between 64 and 200")
        }
        let environment = try services.environment(input.environment)
        let osVersion = try Validation.osVersion(input.osVersion)
        let locale = try Validation.locale(input.locale)
        let version = try Validation.contentVersion(input.contentStateVersion)
        // Checked before the write: a refused device leaves nothing stored. Two new devices
        // registering in the same instant may both pass; the request limits bound that race.
        let devices = try await services.store.pushToStartDevices(userID: user.key)
        let limit = services.limits.devicesPerUser
        if !devices.contains(deviceID), devices.count >= limit {
            throw APIError.overLimit(
                code: "too-many-devices",
                "a user may have push-to-start tokens on \(limit) device(s) at most (liveline.api.limits.devices-per-user); "
                    + "remove one with DELETE /v1/push-to-start-tokens/{attributesType}/{deviceId} first",
                limit: "devices")
        }
        let now = Date().roundedToMilliseconds
        try await services.store.registerPushToStartToken(PushToStartToken(
            userID: user.key, attributesType: attributesType, deviceID: deviceID, token: token, registeredAt: now,
            environment: environment, osVersion: osVersion, locale: locale, contentVersion: version))
        context.logger.debug("push-to-start token registered", metadata: APILogKey.metadata([.tokenPrefix: "\(Validation.redacted(token))"]))
        return try JSONResponse.make(TokenRegistrationResponse(
            deviceId: deviceID, attributesType: attributesType, environment: environment, osVersion: osVersion, locale: locale,
            contentStateVersion: version, registeredAt: now))
    }

    /// Without `{deviceId}`, removes the caller's token for the type on every device.
    @Sendable static func deletePushToStartToken(_ services: APIServices, _ request: Request, context: APIRequestContext, user: AuthenticatedUser) async throws -> Response {
        let attributesType = try context.parameter("attributesType", where: Validation.isAttributesType)
        try services.checkServes(attributesType: attributesType, user)
        let deviceID = try deviceParameter(context)
        guard try await services.store.removePushToStartTokens(userID: user.key, attributesType: attributesType, deviceID: deviceID) > 0 else {
            throw APIError.notFound("no push-to-start token is registered for this type" + (deviceID == nil ? "" : " and device"))
        }
        return Response(status: .noContent)
    }

    /// A subscriber's device in a shared activity: the user's key and the device's id, so two
    /// fans' devices named alike stay apart, and erasing the user finds it. `/` cannot occur in
    /// a user id or a device id.
    private static func subscriber(_ user: AuthenticatedUser, _ deviceID: String) -> String {
        "\(user.key)/\(deviceID)"
    }

    private static func deviceParameter(_ context: APIRequestContext) throws -> String? {
        guard context.parameters.get("deviceId") != nil else { return nil }
        return try context.parameter("deviceId", where: Validation.isIdentifier)
    }
}
