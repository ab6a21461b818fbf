import XCTest
final class PlaceholderHeapGenTestingTests: XCTestCase {}
