import LivelineStore

// Tests: none needed (declarations only)

/// The store the sender reads and writes: token deletions, last applied event times,
/// channels and traces.
///
/// This is the only place that names the store protocol, so renaming it (to
/// a new name, say) is a one-line change.
public typealias SenderStore = ActivityStore
