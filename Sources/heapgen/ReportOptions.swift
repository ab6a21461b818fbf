import ArgumentParser
import HeapGenAnalysis
import HeapGenRecord
import HeapGenReport
import HeapGenSymbolication
#if canImport(Glibc)
import Glibc
#endif

/// The options `report` and `run` share: how to judge growth and where the report goes.
struct ReportOptions: ParsableArguments {
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Option(name: .long, help: "Report format: text (one screen) or json (heapgen-report/1, see docs/report-schema.md).")
    var format: Format = .text

    @Option(name: .long, help: ArgumentHelp(
        "Write the report to this file (created owner-only) instead of standard output.", valueName: "path"))
    var output: String?

    @Option(name: .customLong("warm-up"), help: ArgumentHelp(
        "Leading cycles not judged for growth: caches and lazy singletons fill there.", valueName: "n"))
    var warmUp: Int = AnalysisOptions().warmUp

    @Option(name: .customLong("tolerate"), help: ArgumentHelp(
        "Judged cycles a site may skip growing and still count as abandoned.", valueName: "n"))
    var tolerate: Int = AnalysisOptions().toleratedMisses

    func validate() throws {
        if warmUp < 0 { throw ValidationError("--warm-up takes a number of cycles, 0 or more.") }
        if tolerate < 0 { throw ValidationError("--tolerate takes a number of cycles, 0 or more.") }
        if let output, output.isEmpty { throw ValidationError("--output needs a file name.") }
    }

    /// The analysis settings these options ask for.
    var analysisOptions: AnalysisOptions {
        AnalysisOptions(warmUp: warmUp, toleratedMisses: tolerate)
    }

    /// Analyzes `trace` and builds its report.
    ///
    /// - Throws: ``TraceError`` when the trace cannot be read.
    func makeReport(trace: String, otherTraces: [String] = [], notes: [String] = []) throws -> Report {
        var report = try ReportBuilder().build(tracePath: trace, options: analysisOptions, otherTraces: otherTraces)
        report.notes += notes
        return report
    }

    /// Prints `report` in the chosen format to standard output or writes it to ``output``.
    /// Failures print one line and become exit status 125.
    func emit(_ report: Report) throws {
        let text: String
        switch format {
        case .text:
            let color = output == nil && TextStyle.shouldColor(fileDescriptor: 1)
            text = TextReport.render(report, color: color)
        case .json:
            do {
                text = try JSONReport.render(report)
            } catch {
                standardError("heapgen: cannot encode the report: \(error)\n")
                throw ExitCode(ExitCodes.heapgenFailed)
            }
        }
        guard let output else {
            let out = OutputBuffer()
            out.write(text)
            out.flush()
            return
        }
        if let problem = Self.write(text, to: output) {
            standardError("heapgen: cannot write the report \(output): \(problem)\n")
            throw ExitCode(ExitCodes.heapgenFailed)
        }
    }

    /// Writes `text` to `path` (created or truncated, mode 0600, never through a symbolic
    /// link); returns a description of the failure, or nil.
    static func write(_ text: String, to path: String) -> String? {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode_t(0o600))
        if fd < 0 { return String(cString: strerror(errno)) }
        defer { close(fd) }
        // O_TRUNC keeps the mode of an existing file: reports name files and arguments.
        _ = fchmod(fd, mode_t(0o600))
        var text = text
        return text.withUTF8 { buf -> String? in
            guard let base = buf.baseAddress else { return nil }
            var off = 0
            while off < buf.count {
                let n = Glibc.write(fd, base + off, buf.count - off)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return String(cString: strerror(errno)) }
                off += n
            }
            return nil
        }
    }
}
