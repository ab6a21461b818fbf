import XCTest
final class PlaceholderHeapGenDiffExportTests: XCTestCase {}
