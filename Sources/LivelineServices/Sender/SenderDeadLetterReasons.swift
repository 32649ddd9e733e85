import LivelineCore

/// Dead-letter reasons only the sender produces, until `DeadLetterReason` in
/// LivelineCore gets a case for them. Kebab-case, so they never collide with an APNs
/// reason (CamelCase).
public enum SenderDeadLetterReasons {
    /// The job's bundle id has no APNs credentials in this deployment.
    public static let unknownApp = DeadLetterReason(rawValue: "unknown-app")
}
