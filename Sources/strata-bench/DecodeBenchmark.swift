import Foundation
import Strata

/// Placeholder replaced by the mapper benchmark.
struct DecodeBenchmark {
    init(arguments: [String]) throws {}
    func run() throws { throw BenchError("decode benchmark not built yet") }
}
