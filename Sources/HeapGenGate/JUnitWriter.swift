// The verdict as JUnit XML, for CI test-report views.

import HeapGenReport
import HeapGenUnits

/// Renders a ``GateVerdict`` as JUnit XML (`--junit PATH`).
///
/// One `<testsuites>` holding one `<testsuite name="heapgen">` with:
/// - a testcase per abandoned or leaked finding (`classname` `heapgen.abandoned` or
///   `heapgen.leaked`, `name` the site, `file`/`line` of the user frame). A failing one has a
///   `<failure type="abandoned|leaked">` whose message is the site and its growth and whose body
///   holds the type, the per-cycle series and the stack. Suppressed, known (baseline),
///   below-limit and not-gated findings pass, with a `<system-out>` saying why.
/// - a testcase `live heap growth` with `--fail-on growth`, and `live at exit` with
///   `--max-live-at-exit` (`classname` `heapgen.gate`), failing when the criterion fails.
/// - with `--fail-on invalid-free`, a testcase per explained free of an address that was not
///   live (`classname` `heapgen.invalid-free`, `name` what it freed, `file`/`line` where the
///   block was allocated), failing unless a `free:` rule suppressed it; one failing
///   `invalid frees not explained` for those past the report's first few; and one passing
///   `no invalid frees` when there were none.
/// - when there is no abandoned or leaked finding at all and they are criteria (or nothing
///   else made a testcase), one passing testcase `no abandoned memory` (`heapgen.gate`) saying
///   how many cycles were judged, so that a clean run still shows a test.
///
/// Caches are never testcases: they are not failures.
public enum JUnitWriter {
    /// The XML document, with a final newline.
    public static func render(_ v: GateVerdict, report: Report) -> String {
        var cases: [String] = []
        var failures = 0
        for r in v.findings {
            let f = r.finding
            var attributes = "classname=\"heapgen.\(f.kind.rawValue)\" name=\"\(escape(SiteText.site(f)))\""
            if let loc = SiteText.location(f) {
                attributes += " file=\"\(escape(loc.file))\""
                if let line = loc.line { attributes += " line=\"\(line)\"" }
            }
            var body: String
            switch r.status {
            case .failing:
                failures += 1
                let limit = f.kind == .abandoned ? " (limit \(ByteSize.exact(v.policy.maxBytesPerCycle)) per cycle)" : ""
                let message = "\(SiteText.site(f)): \(SiteText.amount(f))\(limit)"
                body = "      <failure type=\"\(f.kind.rawValue)\" message=\"\(escape(message))\">"
                    + escape(details(f).joined(separator: "\n")) + "</failure>\n"
            case .suppressed(let rule):
                body = systemOut("suppressed by \(v.policy.suppressions.rules[rule]): \(SiteText.amount(f))")
            case .known:
                body = systemOut("known (baseline): \(SiteText.amount(f))")
            case .belowLimit:
                body = systemOut("below the limit of \(ByteSize.exact(v.policy.maxBytesPerCycle)) per cycle: \(SiteText.growth(f))")
            case .notGated:
                body = systemOut("not gated (--fail-on does not include \(f.kind.rawValue)): \(SiteText.amount(f))")
            case .inLibraries:
                body = systemOut("in libraries only, not judged (--include-libraries judges it): \(SiteText.growth(f))")
            }
            cases.append("    <testcase \(attributes)>\n\(body)    </testcase>\n")
        }
        if let g = v.growth {
            let text = GateMessages.growthPhrase(g)
            if g.failed { failures += 1 }
            cases.append(gateCase("live heap growth", failed: g.failed, type: "growth", text: text))
        }
        if let live = v.liveAtExit {
            let text = GateMessages.livePhrase(live)
            if live.failed { failures += 1 }
            cases.append(gateCase("live at exit", failed: live.failed, type: "live-at-exit", text: text))
        }
        if let frees = v.invalidFrees {
            for r in frees.explained {
                var attributes = "classname=\"heapgen.invalid-free\" name=\"\(escape(SiteText.strayFree(r.free)))\""
                if let frame = r.free.allocationFrame, let file = frame.file {
                    attributes += " file=\"\(escape(file))\""
                    if let line = frame.line { attributes += " line=\"\(line)\"" }
                }
                var body: String
                if let rule = r.suppressedBy {
                    body = systemOut("suppressed by \(v.policy.suppressions.rules[rule]): \(r.free.summary)")
                } else {
                    failures += 1
                    var details = [r.free.summary, "block allocated at:"]
                    details += r.free.frames.prefix(12).map { "  at " + SiteText.functionName($0) + SiteText.place($0) { $0 } }
                    body = "      <failure type=\"invalid-free\" message=\"\(escape(r.free.summary))\">"
                        + escape(details.joined(separator: "\n")) + "</failure>\n"
                }
                cases.append("    <testcase \(attributes)>\n\(body)    </testcase>\n")
            }
            if frees.unexplained > 0 {
                failures += 1
                cases.append(gateCase("invalid frees not explained", failed: true, type: "invalid-free",
                                      text: "\(HumanUnits.plural(frees.unexplained, "more free")) of addresses that were not live (the report explains the first \(frees.explained.count); heapgen info TRACE lists their events)"))
            } else if frees.total == 0 {
                cases.append(gateCase("no invalid frees", failed: false, type: "invalid-free",
                                      text: "no free or realloc of an address that was not live"))
            }
        }
        if v.findings.isEmpty && (v.judgesFindings || cases.isEmpty) {
            cases.append(gateCase("no abandoned memory", failed: false, type: "abandoned",
                                  text: "no abandoned or leaked site over \(HumanUnits.plural(v.judgedCycles, "judged cycle"))"))
        }
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<testsuites name=\"heapgen\" tests=\"\(cases.count)\" failures=\"\(failures)\" errors=\"0\">\n"
        out += "  <testsuite name=\"heapgen\" tests=\"\(cases.count)\" failures=\"\(failures)\" errors=\"0\" skipped=\"0\">\n"
        out += "    <properties>\n"
        out += "      <property name=\"trace\" value=\"\(escape(report.trace))\"/>\n"
        out += "      <property name=\"program\" value=\"\(escape(Report.Program.shellQuoted(report.program.args)))\"/>\n"
        out += "      <property name=\"judgedCycles\" value=\"\(v.judgedCycles)\"/>\n"
        out += "    </properties>\n"
        out += cases.joined()
        var notes = v.fixedEntries.map { "fixed — remove from the baseline: \($0.site)" }
        notes += v.warnings.map { "warning: \($0)" }
        notes.append("SUMMARY: heapgen: " + GateMessages.summary(v))
        out += "    <system-out>\(escape(notes.joined(separator: "\n")))</system-out>\n"
        out += "  </testsuite>\n</testsuites>\n"
        return out
    }

    /// Type, growth, per-cycle series and stack of a finding, for a failure's body.
    static func details(_ f: Report.Finding) -> [String] {
        var lines = ["type: \(f.typeName ?? "(malloc blocks, no Swift type)")"]
        if f.isLeakWithoutCycles {
            lines.append(SiteText.amount(f))
        } else {
            lines += ["growth: \(SiteText.growth(f)), grew in \(f.cyclesWithGrowth) of \(f.cycles) judged cycles",
                      "bytes per cycle: " + f.bytesPerCycle.map(String.init).joined(separator: " ")]
        }
        lines += ["left behind: \(HumanUnits.plural(f.survivingObjects, "object")), \(ByteSize.exact(f.survivingBytes))",
                  "stack:"]
        lines += SiteText.stack(f).map { "  " + $0 }
        return lines
    }

    static func systemOut(_ text: String) -> String {
        "      <system-out>\(escape(text))</system-out>\n"
    }

    static func gateCase(_ name: String, failed: Bool, type: String, text: String) -> String {
        let body = failed ? "      <failure type=\"\(type)\" message=\"\(escape(text))\">\(escape(text))</failure>\n" : systemOut(text)
        return "    <testcase classname=\"heapgen.gate\" name=\"\(escape(name))\">\n\(body)    </testcase>\n"
    }

    /// XML text and attribute escaping (the one escaper's XML dialect: `'` as `&apos;`,
    /// characters XML 1.0 cannot carry as `?`).
    static func escape(_ s: String) -> String {
        MarkupEscaper.escape(s, for: .xml)
    }
}
