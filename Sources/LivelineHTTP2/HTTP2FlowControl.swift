import NIOCore

/// What the peer lets this endpoint send (RFC 9113 §6.5, §6.9): its frame size, and flow control
/// for DATA. Each message body goes out as far as the connection's and its stream's windows allow;
/// the rest waits, in order, for WINDOW_UPDATE or a larger initial window.
package struct HTTP2Outbound {
    private struct Waiting {
        var streamID: UInt32
        var data: ByteBuffer
    }

    /// The peer's SETTINGS_MAX_FRAME_SIZE: no frame sent may carry more.
    package private(set) var maximumFrameSize = HTTP2Wire.defaultMaximumFrameSize
    private var connectionWindow = HTTP2Wire.defaultWindowSize
    private var initialStreamWindow = HTTP2Wire.defaultWindowSize
    /// Streams that may still send DATA, with their windows.
    private var streamWindows: [UInt32: Int] = [:]
    private var waiting: [Waiting] = []

    package init() {}

    /// A stream that will send a body; its window starts at the peer's initial window size.
    package mutating func open(_ streamID: UInt32) {
        streamWindows[streamID] = initialStreamWindow
    }

    /// Forgets a stream that was reset or answered, with whatever of its body still waits.
    package mutating func close(_ streamID: UInt32) {
        guard streamWindows.removeValue(forKey: streamID) != nil else { return }
        waiting.removeAll { $0.streamID == streamID }
    }

    /// Applies the peer's SETTINGS: the initial stream window (which moves every open stream's
    /// window by the change) and the frame size. Writes the acknowledgement, and what the new
    /// windows let through, to `buffer`. Returns every known setting, for the caller's own use;
    /// none for an acknowledgement. Throws the connection error for a malformed frame or value.
    package mutating func receiveSettings(
        _ frame: HTTP2Wire.Frame, to buffer: inout ByteBuffer
    ) throws(HTTP2Wire.ErrorCode) -> [(HTTP2Wire.Setting, Int)] {
        guard frame.streamID == 0 else { throw .protocolError }
        if frame.has(HTTP2Wire.Flag.ack) { return [] }
        var payload = frame.payload
        guard payload.readableBytes % 6 == 0 else { throw .frameSizeError }
        var settings: [(HTTP2Wire.Setting, Int)] = []
        while let identifier = payload.readInteger(as: UInt16.self), let raw = payload.readInteger(as: UInt32.self) {
            guard let setting = HTTP2Wire.Setting(rawValue: identifier) else { continue }  // unknown: ignored (§6.5.2)
            let value = Int(raw)
            switch setting {
            case .initialWindowSize:
                guard value <= Int(Int32.max) else { throw .flowControlError }
                let delta = value - initialStreamWindow
                initialStreamWindow = value
                for streamID in streamWindows.keys {
                    streamWindows[streamID]! += delta
                    if streamWindows[streamID]! > Int(Int32.max) { throw .flowControlError }
                }
            case .maxFrameSize:
                guard (16_384...16_777_215).contains(value) else { throw .protocolError }
                maximumFrameSize = value
            default:
                break
            }
            settings.append((setting, value))
        }
        HTTP2Wire.writeSettingsAcknowledgement(to: &buffer)
        sendWaiting(to: &buffer)
        return settings
    }

    /// Applies a WINDOW_UPDATE (stream 0: the connection) and writes what it lets through.
    package mutating func receiveWindowUpdate(_ frame: HTTP2Wire.Frame, to buffer: inout ByteBuffer) throws(HTTP2Wire.ErrorCode) {
        var payload = frame.payload
        guard payload.readableBytes == 4, let raw = payload.readInteger(as: UInt32.self) else { throw .frameSizeError }
        let increment = Int(raw & 0x7FFF_FFFF)
        if frame.streamID == 0 {
            connectionWindow += increment
            guard connectionWindow <= Int(Int32.max) else { throw .flowControlError }
        } else if let window = streamWindows[frame.streamID] {  // else a stream already done
            guard window + increment <= Int(Int32.max) else { throw .flowControlError }
            streamWindows[frame.streamID] = window + increment
        }
        sendWaiting(to: &buffer)
    }

    /// Queues a stream's whole body (ending the stream) and sends what the windows allow.
    package mutating func send(_ body: ByteBuffer, streamID: UInt32, to buffer: inout ByteBuffer) {
        waiting.append(Waiting(streamID: streamID, data: body))
        sendWaiting(to: &buffer)
    }

    /// Sends waiting bodies as far as the windows allow, oldest first.
    private mutating func sendWaiting(to buffer: inout ByteBuffer) {
        var index = 0
        while index < waiting.count, connectionWindow > 0 {
            var pending = waiting[index]
            var streamWindow = streamWindows[pending.streamID] ?? 0
            while pending.data.readableBytes > 0, streamWindow > 0, connectionWindow > 0 {
                let length = min(pending.data.readableBytes, streamWindow, connectionWindow, maximumFrameSize)
                let chunk = pending.data.readSlice(length: length)!
                streamWindow -= length
                connectionWindow -= length
                HTTP2Wire.writeData(chunk, streamID: pending.streamID, endStream: pending.data.readableBytes == 0, to: &buffer)
            }
            if pending.data.readableBytes == 0 {
                waiting.remove(at: index)
                streamWindows[pending.streamID] = nil
            } else {
                waiting[index] = pending
                streamWindows[pending.streamID] = streamWindow
                index += 1
            }
        }
    }
}

/// Flow control for the DATA an endpoint receives: credit goes back in WINDOW_UPDATEs of a useful
/// size rather than one per frame.
package struct HTTP2ReceiveCredit {
    /// The window this endpoint advertised for each stream (SETTINGS_INITIAL_WINDOW_SIZE).
    package let streamWindow: Int
    private var connectionUnacknowledged = 0

    package init(streamWindow: Int) {
        self.streamWindow = streamWindow
    }

    /// Counts a DATA frame's payload (padding included).
    ///
    /// The connection's credit is returned every 16 KiB. A stream's is returned each time its total
    /// crosses a multiple of half its window, so it never runs dry and, for the small bodies of APNs,
    /// costs nothing; `streamTotal` is what the open stream received so far, this frame included
    /// (`nil` for a stream no longer open).
    package mutating func received(_ bytes: Int, streamID: UInt32, streamTotal: Int?, to buffer: inout ByteBuffer) {
        connectionUnacknowledged += bytes
        if connectionUnacknowledged >= 16_384 {
            HTTP2Wire.writeWindowUpdate(streamID: 0, increment: connectionUnacknowledged, to: &buffer)
            connectionUnacknowledged = 0
        }
        guard let streamTotal else { return }
        let half = streamWindow / 2
        let crossed = streamTotal / half - (streamTotal - bytes) / half
        if crossed > 0 {
            HTTP2Wire.writeWindowUpdate(streamID: streamID, increment: crossed * half, to: &buffer)
        }
    }
}
