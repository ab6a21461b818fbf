// The control answers that need analysis, symbolication or report types: `object` (frames)
// and growth sessions (`begin` … `growth`). Moved from the collector's ControlChannel,
// which calls them through ControlResponder. See docs/control-protocol.md.

import Foundation
import HeapGenAnalysis
import HeapGenControlProtocol
import HeapGenRecord
import HeapGenReport
import HeapGenSymbolication
import HeapGenTrace

/// A growth session's generation analysis.
final class SessionAnalysis: GrowthAnalysis {
    /// Unchecked: fed one event at a time on the collector's one thread (a hot path).
    @exclusivity(unchecked) var analyzer: GenerationAnalyzer
    let options: GrowthOptions

    init(options: GrowthOptions) {
        self.options = options
        analyzer = GenerationAnalyzer(options: AnalysisOptions(
            warmUp: options.warmUp, toleratedMisses: options.toleratedMisses,
            minBytesPerCycle: options.minBytesPerCycle, minObjectsPerCycle: options.minObjectsPerCycle))
    }

    @inline(__always)
    func consume(_ record: TraceRecord) { analyzer.consume(record) }
}

/// Answers `object` and `growth` with heapgen-report/1 frames and findings.
final class InTestAnswers: ControlResponder {
    /// Created on the first answer that needs frames.
    private var symbolizerStorage: Symbolizer?

    var symbolizer: Symbolizer {
        if let symbolizerStorage { return symbolizerStorage }
        let made = Symbolizer()
        symbolizerStorage = made
        return made
    }

    func makeGrowthAnalysis(options: GrowthOptions) -> any GrowthAnalysis {
        SessionAnalysis(options: options)
    }

    func objectAnswer(_ facts: ControlObjectFacts, segment: ControlSegmentView) -> Result<String, ControlProtocolError> {
        var answer = ControlObjectAnswer(address: Report.Frame.formatAddress(facts.address))
        if let block = facts.block {
            answer.live = true
            answer.allocation = block.allocation
            answer.typeName = block.typeName
            answer.size = block.size
            answer.generation = block.generation
            answer.generationLabel = block.generationLabel
            answer.previousMark = block.previousMark
            let frames = StackSymbolication(symbolizer: symbolizer)
                .frames(of: segment.readStack(block.stack), at: .max, timeline: ModuleTimeline(events: segment.moduleEvents))
            answer.frames = frames.map {
                ControlFrame(function: $0.function, shortFunction: $0.shortFunction, file: $0.file, line: $0.line,
                             column: $0.column, module: $0.module, address: Report.Frame.formatAddress($0.address),
                             inlined: $0.inlined)
            }
            answer.userFrame = OwnCode.firstUserFrame(frames)
        }
        return Self.encode(answer)
    }

    static func encode<T: Encodable>(_ value: T) -> Result<String, ControlProtocolError> {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return .success(String(decoding: try encoder.encode(value), as: UTF8.self))
        } catch {
            return .failure(ControlProtocolError("cannot encode the answer: \(error)"))
        }
    }

    /// The `growth` answer. Its findings are heapgen-report/1 findings, encoded by the report's
    /// own model (every member a report has); the client reads the members it uses with
    /// `ControlGrowthAnswer`/`ControlFinding` (docs/control-protocol.md).
    private struct GrowthAnswer: Encodable {
        var ok = true
        var op = "growth"
        var label: String?
        var marks: Int
        var cycles: Int
        var judgedCycles: Int
        var warmUp: Int
        var toleratedMisses: Int
        var findings: [Report.Finding]
        var notes: [String]
    }

    func growthAnswer(_ session: ControlGrowthSession, segment: ControlSegmentView) -> Result<String, ControlProtocolError> {
        guard let analysisOfSession = session.analysis as? SessionAnalysis else {
            return .failure(ControlProtocolError("the growth session was not started by this responder"))
        }
        let base = analysisOfSession.options
        var analysis = analysisOfSession.analyzer.finish()
        // The session's analyzer saw heap events and marks only: give it the
        // definitions it needs for the findings (stacks from the arena, names,
        // the module map as it is now).
        var stacks: [UInt32: [UInt64]] = [:]
        var positions: [UInt32: UInt64] = [:]
        for finding in analysis.findings where finding.stackID != 0 && stacks[finding.stackID] == nil {
            stacks[finding.stackID] = segment.readStack(finding.stackID)
            positions[finding.stackID] = UInt64.max
        }
        analysis.stacks = stacks
        analysis.stackRecordIndices = positions
        analysis.modules = segment.moduleEvents
        for i in analysis.findings.indices where analysis.findings[i].typeID != 0 {
            analysis.findings[i].typeName = segment.typeNames[analysis.findings[i].typeID]
        }
        analysis.sites = []   // only the findings are symbolicated
        analysis.notes.removeAll { $0.hasPrefix("No process record") || $0.hasPrefix("No end record") }
        let report = ReportBuilder(symbolizer: symbolizer).build(analysis, trace: segment.tracePath)
        let notes = report.notes.filter { !$0.hasPrefix("How the program ended") }
        return Self.encode(GrowthAnswer(label: session.label, marks: session.marks, cycles: report.cycles,
                                        judgedCycles: report.judgedCycles, warmUp: base.warmUp,
                                        toleratedMisses: base.toleratedMisses, findings: report.findings,
                                        notes: notes))
    }
}
