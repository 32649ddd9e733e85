import LivelineStore

// The store defines its own `ActivitySnapshot` and `UserPreferences` next to LivelineCore's.
// This file imports only the store, so the names below resolve to the store's types; every
// other file uses these aliases and can import both modules without ambiguity.

typealias StoredSnapshot = ActivitySnapshot

typealias StoredPreferences = UserPreferences
