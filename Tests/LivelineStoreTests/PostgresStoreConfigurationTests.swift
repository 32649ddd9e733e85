import LivelineStore
import Testing

@Suite("PostgreSQL configuration")
struct PostgresStoreConfigurationTests {
    @Test func aURLGivesTheConnectionSettings() throws {
        let configuration = try PostgresStoreConfiguration(url: "postgres://app:s3cret@db.internal:6543/liveline_prod")
        #expect(configuration.host == "db.internal")
        #expect(configuration.port == 6543)
        #expect(configuration.username == "app")
        #expect(configuration.password == "s3cret")
        #expect(configuration.database == "liveline_prod")
        #expect(configuration.schema == nil)
        #expect(configuration.maximumConnections == 16)
    }

    @Test(arguments: ["", "mysql://a@b/c", "postgres:///nohost", "not a url"])
    func anythingElseIsRefused(url: String) {
        #expect(throws: StoreError.self) { try PostgresStoreConfiguration(url: url) }
    }
}
