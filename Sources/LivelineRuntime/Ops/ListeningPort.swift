import Foundation
import NIOCore
import NIOPosix
import ServiceLifecycle

/// A port a role listens on, with the setting that chose it, so that a port the role cannot
/// take is a one-line error naming that setting (`liveline.ops.port: port 9091 is already in
/// use (LIVELINE_OPS_PORT)`), not a socket call's errno.
public struct ListeningPort: Sendable, Hashable {
    public var host: String
    public var port: Int
    /// The setting's key, `liveline.ops.port` or `liveline.api.port`.
    public var key: String

    public init(host: String, port: Int, key: String) {
        self.host = host
        self.port = port
        self.key = key
    }

    /// The setting's environment variable: `liveline.ops.port` is `LIVELINE_OPS_PORT`.
    public var variable: String {
        key.uppercased().replacingOccurrences(of: ".", with: "_").replacingOccurrences(of: "-", with: "_")
    }

    /// Binds the port and lets it go at once, so a role whose port another process holds
    /// fails at start, before it waits minutes for a broker or a store. Port 0 always binds.
    public func checkFree() async throws {
        guard port != 0 else { return }
        do {
            // SO_REUSEADDR as the server will bind: a port in TIME_WAIT is free for it.
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
                .bind(host: host, port: port).get()
            try await channel.close()
        } catch {
            throw failure(error) ?? PortError(description: "\(key): cannot listen on \(host):\(port): \(error)")
        }
    }

    /// `error` as the one-line error naming the setting, when it is a failure to listen:
    /// the port taken or privileged, the host not this machine's, or a name that does not resolve.
    public func failure(_ error: any Error) -> PortError? {
        if let error = error as? IOError {
            switch error.errnoCode {
            case EADDRINUSE: return PortError(description: "\(key): port \(port) is already in use (\(variable))")
            case EACCES:
                return PortError(description: "\(key): port \(port) needs privileges this process lacks; choose one above 1023 (\(variable))")
            case EADDRNOTAVAIL:
                return PortError(description: "\(hostKey): \(host) is not an address of this machine (\(hostVariable))")
            default: return nil
            }
        }
        if error is SocketAddressError {
            return PortError(description: "\(hostKey): cannot resolve \(host) to listen on (\(hostVariable))")
        }
        return nil
    }

    private var hostKey: String { key.replacingOccurrences(of: ".port", with: ".host") }
    private var hostVariable: String { variable.replacingOccurrences(of: "_PORT", with: "_HOST") }
}

/// A role could not listen on its port; the message names the setting.
public struct PortError: Error, CustomStringConvertible, Sendable {
    public var description: String
}

/// An HTTP server that listens on `port`. A failure to listen ends the role with
/// ``ListeningPort/failure(_:)``, which ServiceLifecycle passes up to the command.
struct ListeningService: Service {
    let server: any Service
    let port: ListeningPort

    func run() async throws {
        do {
            try await server.run()
        } catch {
            throw port.failure(error) ?? error
        }
    }
}
