import Strata

/// `strata completion bash`: a bash completion script written from the command table, so the commands and options it
/// offers are the ones the parser accepts. What only completion needs, what each option's value is, lives here;
/// `CLITests.testCompletionOffersWhatTheParserTakesAndTheHelpShows` checks the script against the help.
enum Completion {
    /// What to offer after an option that takes a value.
    enum Value: Equatable {
        /// File names.
        case path
        /// One of these words.
        case words([String])
        /// Nothing: a number, a name or an id the user types.
        case free
    }

    static let values: [String: Value] = [
        "manifest": .path,
        "database": .path,
        "through": .path,
        "from": .words(ForeignTool.allCases.map(\.rawValue)),
        "format": .words(Invocation.formats),
        "backend": .words(DatabaseBackend.allCases.map(\.rawValue)),
        "context": .free,
        "timeout": .free,
        "plan-id": .free,
        "lock-timeout": .free,
        "lock-retries": .free,
        "statement-timeout": .free,
        "wait": .free,
        "direct-database": .free,
    ]

    /// What to offer for each command's positional argument (commands without one are absent).
    static let positionals: [String: Value] = [
        "resolve": .path,
        "new": .free,
        "completion": .words(shells),
    ]

    static let shells = ["bash"]

    /// The script; `source <(strata completion bash)` loads it.
    static func bash() -> String {
        let names = CLI.commands.map(\.name)
        var script = """
            # bash completion for strata, written by `strata completion bash` (strata \(Strata.version)) from the
            # command's own table of commands and options.
            _strata() {
                local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
                COMPREPLY=()
                # `--name=value`: bash makes '=' a word of its own (COMP_WORDBREAKS).
                if [[ $cur == = ]]; then cur=""; elif [[ $prev == = ]]; then prev=${COMP_WORDS[COMP_CWORD-2]}; fi
                if [[ $COMP_CWORD -eq 1 ]]; then
                    COMPREPLY=($(compgen -W '\((names + ["help", "--help", "--version"]).joined(separator: " "))' -- "$cur"))
                    return
                fi
                local command=${COMP_WORDS[1]}
                if [[ $command == help ]]; then
                    [[ $COMP_CWORD -eq 2 ]] && COMPREPLY=($(compgen -W '\(names.joined(separator: " "))' -- "$cur"))
                    return
                fi
                case $prev in

            """
        // An option missing from `values` is offered and takes a value, but nothing is suggested for it.
        let valueOptions = Set(CLI.commands.flatMap(\.valueOptions))
        let kinds = Dictionary(uniqueKeysWithValues: valueOptions.map { ($0, values[$0] ?? .free) })
        for value in [Value.path, .free] {
            let options = kinds.filter { $0.value == value }.keys.sorted().map { "--" + $0 }
            if options.isEmpty { continue }
            script += "        \(options.joined(separator: "|"))) \(reply(value)); return ;;\n"
        }
        for (name, value) in kinds.sorted(by: { $0.key < $1.key }) {
            guard case .words = value else { continue }
            // A command whose --format takes more than the others' offers its own words.
            let own = name == "format" ? CLI.commands.filter { $0.formats != Invocation.formats } : []
            if own.isEmpty {
                script += "        --\(name)) \(reply(value)); return ;;\n"
            } else {
                script += "        --\(name)) case $command in "
                    + own.map { "\($0.name)) \(reply(.words($0.formats))) ;; " }.joined()
                    + "*) \(reply(value)) ;; esac; return ;;\n"
            }
        }
        script += """
                esac
                local options
                case $command in

            """
        for spec in CLI.commands {
            let options = spec.valueOptions.union(spec.flags).sorted().map { "--" + $0 }
            script += "        \(spec.name)) options='\(options.joined(separator: " "))' ;;\n"
        }
        script += """
                    *) return ;;
                esac
                if [[ $cur != -* ]]; then
                    case $command in

            """
        for spec in CLI.commands where spec.positionals.upperBound > 0 {
            script += "            \(spec.name)) \(reply(positionals[spec.name] ?? .free)); return ;;\n"
        }
        script += """
                    esac
                fi
                COMPREPLY=($(compgen -W "$options" -- "$cur"))
            }
            complete -F _strata strata

            """
        return script
    }

    private static func reply(_ value: Value) -> String {
        switch value {
        case .path: "compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\"))"
        case .words(let words): "COMPREPLY=($(compgen -W '\(words.joined(separator: " "))' -- \"$cur\"))"
        case .free: ":"
        }
    }
}
