import Foundation

// Tests: scripts/faults

/// Questions on-call commands ask only a person at a terminal.
enum Terminal {
    /// Standard input and error are a terminal.
    static var isInteractive: Bool { isatty(STDIN_FILENO) == 1 && isatty(STDERR_FILENO) == 1 }

    /// Asks `question` on standard error; true only for y or yes. Off a terminal, false.
    static func confirm(_ question: String) -> Bool {
        guard isInteractive else { return false }
        FileHandle.standardError.write(Data("\(question) [y/N] ".utf8))
        guard let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() else { return false }
        return answer == "y" || answer == "yes"
    }
}
