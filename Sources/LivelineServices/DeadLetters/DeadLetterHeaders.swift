// Tests: none needed (declarations only)

/// AMQP headers every dead letter Liveline publishes carries besides the reason, domain and
/// activity (``TranslatorHeaders``, ``SenderHeaders``), so the keeper can read any letter the
/// same way.
public enum DeadLetterHeaders {
    /// Who wrote the letter: `translator` or `sender`. A letter without it was moved by the broker.
    public static let source = "x-liveline-source"
    /// The broker's dead-letter history. The sender copies it from the job it gave up on,
    /// so a letter shows the retry tiers the job went through.
    public static let deaths = "x-death"
    /// On a republished event or job: the id of the dead letter it was replayed from.
    public static let replayOf = "x-liveline-replay-of"
}
