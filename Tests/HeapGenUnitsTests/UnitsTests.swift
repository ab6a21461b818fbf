// HeapGenUnits on its own: counts, bytes and durations as heapgen prints them, sizes and
// durations as people type them, their edges (0, the largest values, bad input) and the
// round trips between printing and parsing.

@testable import HeapGenUnits
import XCTest

final class HumanUnitsTests: XCTestCase {
    func testHumanUnits() {
        XCTAssertEqual(HumanUnits.count(1_234_567), "1,234,567")
        XCTAssertEqual(HumanUnits.count(-1000), "-1,000")
        XCTAssertEqual(HumanUnits.bytes(999), "999 B")
        XCTAssertEqual(HumanUnits.bytes(1_234_567), "1.2 MB")
        XCTAssertEqual(HumanUnits.bytes(999_999), "1.0 MB")
        XCTAssertEqual(HumanUnits.signedBytes(48), "+48 B")
        XCTAssertEqual(HumanUnits.signedBytes(-1200), "-1.2 kB")
        XCTAssertEqual(HumanUnits.duration(nanoseconds: 1_500_000), "1.5 ms")
        XCTAssertEqual(HumanUnits.plural(1, "object"), "1 object")
        XCTAssertEqual(HumanUnits.plural(2, "object"), "2 objects")
    }

    func testZero() {
        XCTAssertEqual(HumanUnits.count(0), "0")
        XCTAssertEqual(HumanUnits.bytes(0), "0 B")
        XCTAssertEqual(HumanUnits.signedBytes(0), "0 B")
        XCTAssertEqual(HumanUnits.duration(nanoseconds: 0), "0 ns")
        XCTAssertEqual(HumanUnits.plural(0, "site"), "0 sites")
        XCTAssertEqual(HumanUnits.plural(0, "entry", "entries"), "0 entries")
        XCTAssertEqual(HumanUnits.mean(0), "0")
    }

    func testUnitBoundaries() {
        XCTAssertEqual(HumanUnits.count(999), "999")
        XCTAssertEqual(HumanUnits.count(1000), "1,000")
        XCTAssertEqual(HumanUnits.bytes(1000), "1.0 kB")
        XCTAssertEqual(HumanUnits.bytes(999_949), "999.9 kB")
        XCTAssertEqual(HumanUnits.duration(nanoseconds: 999), "999 ns")
        XCTAssertEqual(HumanUnits.duration(nanoseconds: 1_000), "1.0 µs")
        XCTAssertEqual(HumanUnits.duration(nanoseconds: 1_000_000), "1.0 ms")
        XCTAssertEqual(HumanUnits.duration(nanoseconds: 1_000_000_000), "1.0 s")
    }

    func testHugeValues() {
        XCTAssertEqual(HumanUnits.count(UInt64.max), "18,446,744,073,709,551,615")
        XCTAssertEqual(HumanUnits.count(Int.min), "-9,223,372,036,854,775,808")
        // PB is the largest unit: beyond it the number grows instead.
        XCTAssertEqual(HumanUnits.bytes(UInt64.max), "18446.7 PB")
        XCTAssertEqual(HumanUnits.bytes(Int.min), "-9223.4 PB")
        XCTAssertEqual(HumanUnits.duration(nanoseconds: UInt64.max), "18446744073.7 s")
    }

    func testDecimals() {
        XCTAssertEqual(HumanUnits.oneDecimal(2.04), "2.0")
        XCTAssertEqual(HumanUnits.oneDecimal(-0.06), "-0.1")
        XCTAssertEqual(HumanUnits.mean(3), "3")
        XCTAssertEqual(HumanUnits.mean(2.5), "2.5")
        XCTAssertEqual(HumanUnits.mean(-1.25), "-1.3")
    }

    /// A grouped count reads back as the same number once its commas are dropped.
    func testCountRoundTrip() {
        for n in [0, 7, 999, 1000, 65_536, 1_234_567, Int.max, -1, -1000, Int.min + 1] {
            XCTAssertEqual(Int(HumanUnits.count(n).filter { $0 != "," }), n, "\(n)")
        }
    }
}

final class ByteSizeTests: XCTestCase {
    func testSizesLikePytestMemray() {
        XCTAssertEqual(ByteSize.parse("0"), 0)
        XCTAssertEqual(ByteSize.parse("64"), 64)
        XCTAssertEqual(ByteSize.parse("64B"), 64)
        XCTAssertEqual(ByteSize.parse("1KB"), 1024)
        XCTAssertEqual(ByteSize.parse("1 KiB"), 1024)
        XCTAssertEqual(ByteSize.parse("1 kb"), 1024)
        XCTAssertEqual(ByteSize.parse("1K"), 1024)
        XCTAssertEqual(ByteSize.parse("2MB"), 2 << 20)
        XCTAssertEqual(ByteSize.parse("1.5 MB"), 3 << 19)
        XCTAssertEqual(ByteSize.parse("+100 b"), 100)
        XCTAssertEqual(ByteSize.parse(" 3 GiB "), 3 << 30)
        XCTAssertEqual(ByteSize.parse("0.5"), 0)
        for bad in ["", "KB", "-1", "1 XB", "1.2.3", "1 K B", "abc", "99999999999999999999", "9999999999 TB"] {
            XCTAssertNil(ByteSize.parse(bad), bad)
        }
    }

    func testZeroInEveryUnit() {
        for unit in ["", "B", "K", "KB", "KiB", "M", "MB", "MiB", "G", "GB", "GiB", "T", "TB", "TiB"] {
            XCTAssertEqual(ByteSize.parse("0" + unit), 0, unit)
            XCTAssertEqual(ByteSize.parse("0 " + unit.lowercased()), 0, unit)
        }
    }

    func testFractions() {
        XCTAssertEqual(ByteSize.parse("0.5 KB"), 512)
        XCTAssertEqual(ByteSize.parse(".5K"), 512)
        XCTAssertEqual(ByteSize.parse("1."), 1)
        XCTAssertEqual(ByteSize.parse("1.9"), 1, "rounded down to whole bytes")
        XCTAssertEqual(ByteSize.parse("0.001 KB"), 1)
        XCTAssertEqual(ByteSize.parse("1.25 TiB"), (1 << 40) + (1 << 38))
        for bad in [".", "1..", "..5", "1.5.", "0x10", "1e3", "1,024", "1 KB B", "1 PB", "\u{0661}"] {
            XCTAssertNil(ByteSize.parse(bad), bad)
        }
    }

    func testLargestSizes() {
        XCTAssertEqual(ByteSize.parse(String(Int.max)), Int.max)
        XCTAssertNil(ByteSize.parse(String(Int.max) + "0"))
        XCTAssertNil(ByteSize.parse(String(UInt64.max)))
        // 2^23 TiB is 2^63 bytes: one past Int.max.
        XCTAssertEqual(ByteSize.parse("8388607 TB"), 8_388_607 << 40)
        XCTAssertNil(ByteSize.parse("8388608 TB"))
        XCTAssertNil(ByteSize.parse("8388607.99999999 TB"), "the fraction overflows the sum")
    }

    func testExactAndSigned() {
        XCTAssertEqual(ByteSize.exact(0), "0 B")
        XCTAssertEqual(ByteSize.exact(1234), "1,234 B")
        XCTAssertEqual(ByteSize.exact(UInt64.max), "18,446,744,073,709,551,615 B")
        XCTAssertEqual(ByteSize.signed(0), "0 B")
        XCTAssertEqual(ByteSize.signed(192), "+192 B")
        XCTAssertEqual(ByteSize.signed(-8), "-8 B")
    }

    /// What the gate prints as a limit reads back as the same limit.
    func testExactRoundTrip() {
        for n in [0, 1, 64, 1023, 1024, 1_000_000, 3 << 30, Int.max] {
            let printed = ByteSize.exact(n)
            XCTAssertEqual(ByteSize.parse(String(printed.filter { $0 != "," })), n, printed)
        }
    }

    /// A whole number of any unit parses to that number times the unit.
    func testUnitRoundTrip() {
        let units: [(String, Int)] = [("B", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40)]
        for (unit, size) in units {
            for n in [1, 3, 1000, 4095] {
                XCTAssertEqual(ByteSize.parse("\(n) \(unit)"), n * size, "\(n) \(unit)")
            }
        }
    }
}

final class DurationArgumentTests: XCTestCase {
    func testUnits() {
        XCTAssertEqual(DurationArgument.nanoseconds("2s"), 2_000_000_000)
        XCTAssertEqual(DurationArgument.nanoseconds("500ms"), 500_000_000)
        XCTAssertEqual(DurationArgument.nanoseconds("1.5s"), 1_500_000_000)
        XCTAssertEqual(DurationArgument.nanoseconds("250us"), 250_000)
        XCTAssertEqual(DurationArgument.nanoseconds("250µs"), 250_000)
        XCTAssertEqual(DurationArgument.nanoseconds("10ns"), 10)
        XCTAssertEqual(DurationArgument.nanoseconds("1m"), 60_000_000_000)
        XCTAssertEqual(DurationArgument.nanoseconds("1h"), 3_600_000_000_000)
        XCTAssertEqual(DurationArgument.nanoseconds("3"), 3_000_000_000, "a bare number is seconds")
    }

    func testZero() {
        for text in ["0", "0s", "0ms", "0ns", "0.0m"] {
            XCTAssertEqual(DurationArgument.nanoseconds(text), 0, text)
        }
    }

    func testLargest() {
        XCTAssertEqual(DurationArgument.nanoseconds("999999999s"), 999_999_999_000_000_000)
        XCTAssertNil(DurationArgument.nanoseconds("1000000000s"), "10^18 ns and more are refused")
        XCTAssertNil(DurationArgument.nanoseconds("300000h"))
    }

    func testBadInput() {
        for bad in ["", "s", "ms", "-1s", "-0.5", "abc", "1x", "2 s", " 2s", "inf", "nan", "infs", "1s2", "2S", "1e400"] {
            XCTAssertNil(DurationArgument.nanoseconds(bad), bad)
        }
    }

    /// Whole nanoseconds written with any suffix read back exactly.
    func testRoundTrip() {
        for ns: UInt64 in [0, 1, 999, 1_000, 123_456_789, 1 << 52] {
            XCTAssertEqual(DurationArgument.nanoseconds("\(ns)ns"), ns)
        }
        for s: UInt64 in [0, 1, 59, 86_400] {
            XCTAssertEqual(DurationArgument.nanoseconds("\(s)s"), s * 1_000_000_000)
            XCTAssertEqual(DurationArgument.nanoseconds("\(s)"), s * 1_000_000_000)
        }
    }
}

/// The one XML/HTML escaper: both dialects escape the same five characters and differ only
/// in `'` and in what XML 1.0 cannot carry (what the HTML pages and JUnit files always wrote).
final class MarkupEscaperTests: XCTestCase {
    let hostile = "a&b<c>d\"e'f\u{1}g\u{7F}h\t\n\r\u{FFFE}\u{FFFF}\u{D7FF}\u{E000}\u{10000}é"

    func testHTMLDialect() {
        XCTAssertEqual(MarkupEscaper.escape(hostile, for: .html),
                       "a&amp;b&lt;c&gt;d&quot;e&#39;f\u{1}g\u{7F}h\t\n\r\u{FFFE}\u{FFFF}\u{D7FF}\u{E000}\u{10000}é")
    }

    func testXMLDialect() {
        XCTAssertEqual(MarkupEscaper.escape(hostile, for: .xml),
                       "a&amp;b&lt;c&gt;d&quot;e&apos;f?g\u{7F}h\t\n\r??\u{D7FF}\u{E000}\u{10000}é")
        XCTAssertEqual(MarkupEscaper.escape("", for: .xml), "")
        XCTAssertEqual(MarkupEscaper.escape("&amp;", for: .html), "&amp;amp;")
    }
}
