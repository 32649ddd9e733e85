import Foundation

extension Translator {
    /// Reads an event off the wire and checks its `data` against the domain.
    ///
    /// `data` shape (all domains): `activityId` and `userId` (non-empty strings),
    /// `contentState` (object, the full current state), optional `attributes`
    /// (object; needed for push-to-start), optional `message` (string, for alerts);
    /// generic domains also need `status` (string).
    public func parse(_ body: Data) throws(EventError) -> DomainEvent {
        try domainEvent(from: parser.parse(body))
    }

    /// Checks an already-parsed envelope against its domain.
    public func domainEvent(from envelope: CloudEvent) throws(EventError) -> DomainEvent {
        let typeParts = envelope.type.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard typeParts.count == 2, !typeParts[0].isEmpty, !typeParts[1].isEmpty else {
            throw .invalidField("type", reason: "\"\(envelope.type)\" is not <domain>.<name>")
        }
        let domainName = String(typeParts[0])
        guard let domain = domains[domainName] else { throw .unknownDomain(domainName) }
        guard case .object(let data) = envelope.data else {
            throw .mistypedField("data", expected: "an object", found: envelope.data.typeName)
        }

        let activityId = try CloudEventParser.requiredString("activityId", in: data, prefix: "data.")
        let userId = try CloudEventParser.requiredString("userId", in: data, prefix: "data.")
        guard let rawState = data["contentState"] else { throw .missingField("data.contentState") }
        guard case .object(let stateFields) = rawState else {
            throw .mistypedField("data.contentState", expected: "an object", found: rawState.typeName)
        }
        let message = try CloudEventParser.optionalString("message", in: data, prefix: "data.")

        let contract = domain.contract
        let status = try contract.status(contentState: stateFields, data: data, domain: domainName)
        // Generic domains declare their statuses in configuration; typed domains
        // were checked against the model's enum by the contract.
        if contract.modelStatuses == nil, domain.configuration.policy.statuses[status] == nil {
            throw .unknownStatus(domain: domainName, status: status)
        }
        let contentState = try contract.canonicalContentState(rawState, domain: domainName)
        var attributes: JSONValue?
        if let rawAttributes = data["attributes"], rawAttributes != .null {
            attributes = try contract.canonicalAttributes(rawAttributes, domain: domainName)
        }
        return DomainEvent(
            envelope: envelope, domain: domainName, name: String(typeParts[1]), activityId: activityId,
            userId: userId, status: status, contentState: contentState.value, attributes: attributes, message: message,
            contentStateJSON: contentState.bytes
        )
    }
}
