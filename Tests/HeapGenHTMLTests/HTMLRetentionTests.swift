// "Why is it alive" on the HTML page: path, cycle, held findings linked, names escaped.

import HeapGenHTML
import HeapGenReport
import XCTest

final class HTMLRetentionTests: XCTestCase {
    func testRetentionIsShownEscapedWithHeldFindingsLinked() {
        var report = HTMLScaleTests.bigReport(findings: 3)
        for i in report.findings.indices { report.findings[i].kind = .abandoned }
        report.findings[0].retention = [
            .init(kind: .root, name: "static App.Bus<T>.shared", detail: "App", offset: 0),
            .init(kind: .block, name: "App.Bus", field: "subscribers", offset: 16, typeName: "App.Bus"),
            .init(kind: .block, name: "App.Model", typeName: "App.Model"),
        ]
        report.findings[0].retainedBytes = 4096
        report.findings[1].heldBy = 0
        report.findings[1].heldReason = "dominated"
        report.findings[2].cycle = [.init(kind: .block, name: "App.A", field: "b", offset: 16, typeName: "App.A"),
                                    .init(kind: .block, name: "App.B", field: "a", offset: 16, typeName: "App.B")]
        let html = HTMLReport.render(report)
        XCTAssertTrue(html.contains("<li>static App.Bus&lt;T&gt;.shared (App)</li>"), "root escaped")
        XCTAssertTrue(html.contains("<li>App.Bus .subscribers</li>"))
        XCTAssertTrue(html.contains("Retains <b>4.1 kB</b>"))
        XCTAssertTrue(html.contains("<li>holds <a href=\"#finding-2\">"), "the held finding is linked from its holder")
        XCTAssertTrue(html.contains("Held by <a href=\"#finding-1\">"), "and links back")
        XCTAssertTrue(html.contains("cycle: A.b → B.a → A"))
        XCTAssertFalse(html.contains("Bus<T>"), "never unescaped")
    }

    func testNothingWithoutAGraph() {
        XCTAssertFalse(HTMLReport.render(HTMLScaleTests.bigReport(findings: 3)).contains("class=\"retention\""))
    }
}
