// The "program" object of a report.

import HeapGenSymbolication
import HeapGenUnits

extension Report {
    /// The traced process and how it ended.
    public struct Program: Codable, Sendable, Equatable {
        /// Path of the executable.
        public var path: String
        /// `argv`, including `argv[0]`.
        public var args: [String]
        /// Process id.
        public var pid: Int32
        /// Exit code; `nil` when the process was killed, exec'd another program or was still
        /// running when the recording stopped.
        public var exitStatus: Int32?
        /// Number of the signal that killed the process; otherwise `nil`.
        public var signal: Int32?
        /// How the process image ended; `nil` in reports made before heapgen wrote it.
        public var ending: Ending?

        /// How a traced process image ended (its trace's end record).
        public enum Ending: String, Codable, Sendable {
            /// It exited: see ``exitStatus``.
            case exited
            /// A signal killed it: see ``signal``.
            case killed
            /// It ran another program with `execve`, which has a trace of its own.
            case exec
            /// It was still running when the recording stopped.
            case running
            /// heapgen lost track of it (or the trace was salvaged).
            case unknown
            /// It wrote over its recording segment, and recording stopped there.
            case corrupt
        }

        /// Creates the program description.
        public init(path: String, args: [String], pid: Int32, exitStatus: Int32?, signal: Int32?,
                    ending: Ending? = nil) {
            self.path = path
            self.args = args
            self.pid = pid
            self.exitStatus = exitStatus
            self.signal = signal
            self.ending = ending
        }

        private enum CodingKeys: String, CodingKey {
            case path, args, pid, exitStatus, signal, ending
        }

        /// How it ended, in words: "exited with status 0", "killed by signal 9 (SIGKILL)",
        /// "exec'd another program".
        public var endingDescription: String {
            if let exitStatus { return "exited with status \(exitStatus)" }
            if let signal { return "killed by " + HumanUnits.signal(signal) }
            switch ending {
            case .exec?: return "exec'd another program"
            case .running?: return "was still running when recording stopped"
            case .unknown?: return "ended in a way heapgen could not learn"
            case .corrupt?: return "wrote over its recording segment"
            case .exited?, .killed?, nil: return "did not exit while recorded"
            }
        }

        /// The name the program was started as: `argv[0]`'s last component (`redis-server`,
        /// not the `redis-check-rdb` its symbolic link points to), else the executable's.
        /// A server that rewrote its title over `argv` (`nginx: worker process`,
        /// `redis-server *:6379`, `postgres: checkpointer`) is named by the title's first word.
        /// One started as `/proc/self/exe` (Chromium's utility processes) is named by its
        /// executable, not `exe`.
        public var name: String {
            guard let first = args.first, !first.isEmpty, first != "/proc/self/exe" else {
                return path.isEmpty ? "program" : OwnCode.baseName(path)
            }
            let whole = OwnCode.baseName(first)
            guard first.contains(" "), whole != OwnCode.baseName(path),
                  let word = first.split(separator: " ").first else { return whole }
            let title = OwnCode.baseName(String(word.hasSuffix(":") ? word.dropLast() : word))
            return title.isEmpty ? whole : title
        }

        /// `args` as a shell would need them typed: empty arguments as `''`, arguments with
        /// spaces, quotes or other special characters in single quotes.
        public static func shellQuoted(_ args: [String]) -> String {
            args.map { arg -> String in
                if arg.isEmpty { return "''" }
                let plain = arg.unicodeScalars.allSatisfy { c in
                    isShellSafe(c) || c.value >= 0x80
                }
                if plain { return arg }
                return "'" + arg.replacingAll("'", with: "'\\''") + "'"
            }.joined(separator: " ")
        }

        /// Characters a shell takes literally.
        static func isShellSafe(_ c: Unicode.Scalar) -> Bool {
            switch c {
            case "a"..."z", "A"..."Z", "0"..."9": return true
            default: return "-_./:=,+@%^".unicodeScalars.contains(c)
            }
        }

        /// Encodes every field; `nil` as `null`.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(path, forKey: .path)
            try c.encode(args, forKey: .args)
            try c.encode(pid, forKey: .pid)
            try c.encode(exitStatus, forKey: .exitStatus)
            try c.encode(signal, forKey: .signal)
            try c.encodeIfPresent(ending, forKey: .ending)
        }
    }

    /// The analysis settings that shape the findings.
    public struct Options: Codable, Sendable, Equatable {
        /// Leading cycles not judged for growth.
        public var warmUp: Int
        /// Judged cycles a site may skip and still be called abandoned.
        public var toleratedMisses: Int

        /// Creates the options object.
        public init(warmUp: Int, toleratedMisses: Int) {
            self.warmUp = warmUp
            self.toleratedMisses = toleratedMisses
        }
    }
}

extension String {
    /// Every `target` replaced by `replacement` (no Foundation needed).
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
