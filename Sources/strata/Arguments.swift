/// A usage mistake on the command line; the tool prints it with a hint and exits 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A command that cannot do what was asked for a reason that is not a usage mistake; exit 1.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// What one command accepts: options taking a value, bare flags, and positional arguments.
struct CommandSpec {
    let name: String
    let summary: String
    let usage: String
    let valueOptions: Set<String>
    let repeatableOptions: Set<String>
    let flags: Set<String>
    let positionals: ClosedRange<Int>
    let details: String
    /// What its `--format` takes.
    let formats: [String]

    init(name: String, summary: String, usage: String, valueOptions: Set<String> = [],
         repeatableOptions: Set<String> = [], flags: Set<String> = [], positionals: ClosedRange<Int> = 0...0,
         details: String = "", formats: [String] = Invocation.formats) {
        self.name = name
        self.summary = summary
        self.usage = usage
        self.valueOptions = valueOptions.union(repeatableOptions).union(["format"])
        self.repeatableOptions = repeatableOptions
        self.flags = flags.union(["quiet", "help"])
        self.positionals = positionals
        self.details = details
        self.formats = formats
    }
}

/// The parsed command line of one command.
struct Invocation {
    let spec: CommandSpec
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func has(_ name: String) -> Bool { flags.contains(name) }

    /// What `--format` takes (`CommandSpec.formats` for a command that takes more).
    static let formats = ["text", "json"]

    /// Parses `--name value`, `--name=value` and `--flag`; `--` ends the options.
    static func parse(_ arguments: [String], spec: CommandSpec) throws -> Invocation {
        var invocation = Invocation(spec: spec)
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard !optionsEnded, argument.hasPrefix("--"), argument.count > 2 else {
                if argument == "--" && !optionsEnded { optionsEnded = true; continue }
                invocation.positionals.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if spec.flags.contains(name) {
                guard inlineValue == nil else { throw UsageError("--\(name) takes no value") }
                invocation.flags.insert(name)
            } else if spec.valueOptions.contains(name) {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else { throw UsageError("--\(name) needs a value") }
                    value = arguments[index]
                    index += 1
                }
                if invocation.values[name] != nil && !spec.repeatableOptions.contains(name) {
                    throw UsageError("--\(name) given twice")
                }
                invocation.values[name, default: []].append(value)
            } else {
                throw UsageError("unknown option --\(name) for 'strata \(spec.name)'")
            }
        }
        if !invocation.has("help") && !spec.positionals.contains(invocation.positionals.count) {
            if invocation.positionals.count > spec.positionals.upperBound {
                throw UsageError("unexpected argument '\(invocation.positionals[spec.positionals.upperBound])'")
            }
            throw UsageError("missing argument; usage: \(spec.usage)")
        }
        if let format = invocation.value("format"), !spec.formats.contains(format) {
            let quoted = spec.formats.map { "'\($0)'" }
            throw UsageError("--format must be \(quoted.dropLast().joined(separator: ", ")) or \(quoted.last ?? ""), not '\(format)'")
        }
        return invocation
    }
}
