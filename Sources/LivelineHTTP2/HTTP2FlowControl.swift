import NIOCore

/// Flow control for the DATA an endpoint sends (RFC 9113 §6.9): each message body goes out as far as
/// the connection's and its stream's windows allow; the rest waits, in order, for WINDOW_UPDATE.
package struct HTTP2SendWindows {
    private struct Waiting {
        var streamID: UInt32
        var data: ByteBuffer
    }

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

    /// Forgets a stream that was reset, with whatever of its body still waits.
    package mutating func close(_ streamID: UInt32) {
        guard streamWindows.removeValue(forKey: streamID) != nil else { return }
        waiting.removeAll { $0.streamID == streamID }
    }

    /// The peer's SETTINGS_INITIAL_WINDOW_SIZE, which moves every open stream's window by the change.
    /// Returns `false` when a window would exceed 2^31-1 (a flow-control error).
    package mutating func setInitialStreamWindow(_ size: Int) -> Bool {
        let delta = size - initialStreamWindow
        initialStreamWindow = size
        for streamID in streamWindows.keys {
            streamWindows[streamID]! += delta
            if streamWindows[streamID]! > Int(Int32.max) { return false }
        }
        return true
    }

    /// A WINDOW_UPDATE from the peer (stream 0: the connection). Returns `false` on overflow.
    package mutating func windowUpdate(streamID: UInt32, increment: Int) -> Bool {
        if streamID == 0 {
            connectionWindow += increment
            return connectionWindow <= Int(Int32.max)
        }
        guard let window = streamWindows[streamID] else { return true }  // a stream already done
        streamWindows[streamID] = window + increment
        return window + increment <= Int(Int32.max)
    }

    /// Queues a stream's whole body (ending the stream) and sends what the windows allow.
    package mutating func send(_ body: ByteBuffer, streamID: UInt32, maximumFrameSize: Int, to buffer: inout ByteBuffer) {
        waiting.append(Waiting(streamID: streamID, data: body))
        sendWaiting(maximumFrameSize: maximumFrameSize, to: &buffer)
    }

    /// Sends waiting bodies as far as the windows allow, oldest first; call after windows grew.
    package mutating func sendWaiting(maximumFrameSize: Int, to buffer: inout ByteBuffer) {
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
