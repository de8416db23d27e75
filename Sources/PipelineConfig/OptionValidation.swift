/// Checks option maps against a schema: typed values, defaults, required options, unknown keys.
extension Validator {
    /// Validates the options of a component or of an `.object` option.
    /// - Parameters:
    ///   - anchor: the key that holds these options (a missing required option is reported there).
    ///   - component: the kind when these are a component's options (enables `name:` and the shorthand).
    mutating func options(_ node: Tree, schema: OptionSchema, path: String, anchor: Position,
                          owner: String, component: Bool) -> (values: OptionValues, name: (String, Position)?) {
        var entries: [Tree.Entry] = []
        switch node {
        case _ where node.isNull:
            break
        case .scalar:
            if component, let shorthand = schema.shorthand, schema.field(shorthand) != nil {
                entries = [Tree.Entry(key: shorthand, keyPosition: node.position, value: node)]
            } else {
                error(node.position, path, "\(node.shortDescription) is not a map of options (write e.g. \(example(owner, schema)))")
                return (OptionValues(), nil)
            }
        case .list:
            error(node.position, path, "a list is not a map of options (write e.g. \(example(owner, schema)))")
            return (OptionValues(), nil)
        case .map(let e, _):
            entries = e
        }

        var values = OptionValues()
        var name: (String, Position)?
        var rejected: Set<String> = []
        for entry in entries {
            let keyPath = "\(path).\(entry.key)"
            if component, entry.key == "name" {
                name = componentName(entry.value, path: keyPath)
                continue
            }
            guard let field = schema.field(entry.key) else {
                let known = schema.fields.map(\.name)
                var hint: [String] = []
                if let guess = Suggest.closest(to: entry.key, in: known + (component ? ["name"] : [])) {
                    hint.append("did you mean \(guess)?")
                }
                hint.append(known.isEmpty ? "\(owner) takes no options" : "known keys: " + known.joined(separator: ", "))
                error(entry.keyPosition, keyPath, "unknown key (\(hint.joined(separator: " ")))")
                continue
            }
            if let value = value(entry.value, field: field, path: keyPath, keyPosition: entry.keyPosition) {
                values[field.name] = value
            } else if !entry.value.isNull {
                rejected.insert(field.name)
            }
        }

        let missing: [OptionField]
        (values, missing) = schema.withDefaults(values)
        for field in missing where !rejected.contains(field.name) {
            error(anchor, "\(path).\(field.name)", "required option is missing (add \(field.name): \(Validator.sample(field)))")
        }
        return (values, name)
    }

    /// `delay: { initial: 0s }` — for "write e.g. ..." fixes.
    func example(_ owner: String, _ schema: OptionSchema) -> String {
        guard let field = schema.fields.first(where: { $0.isRequired }) ?? schema.fields.first else {
            return "\(owner): {}"
        }
        return "\(owner): { \(field.name): \(Validator.sample(field)) }"
    }

    /// A plausible value for a field, as config text.
    static func sample(_ field: OptionField) -> String {
        switch field.type {
        case .duration:
            if case .duration(let d)? = field.defaultValue, d != .zero { return d.configText }
            return "10s"
        case .object(let schema):
            guard let first = schema.fields.first else { return "{}" }
            return "{ \(first.name): \(sample(first)) }"
        case .string, .secret:
            if case .string(let s)? = field.defaultValue, !s.isEmpty { return YAMLText.scalar(s) }
            return "<\(field.type.displayName)>"
        default:
            if let d = field.defaultValue { return d.description }
        }
        switch field.type {
        case .int(let range): return String(range?.lowerBound ?? 1)
        case .double(let range): return String(range?.lowerBound ?? 1.0)
        case .bool: return "true"
        case .bitrate: return "2500k"
        case .choice(let values): return values.first ?? "<text>"
        default: return "<\(field.type.displayName)>"
        }
    }

    /// One option value. `nil` (after recording an error, or for an explicit null) means "not set".
    mutating func value(_ node: Tree, field: OptionField, path: String, keyPosition: Position) -> OptionValue? {
        if case .object(let schema) = field.type {
            // `video:` (null) means "video with its defaults".
            let result = options(node, schema: schema, path: path, anchor: keyPosition, owner: field.name, component: false)
            return .object(result.values)
        }
        if node.isNull { return nil }
        guard case .scalar(let raw, _, let position) = node else {
            error(node.position, path, "\(node.shortDescription) is not \(article(field.type)) "
                  + "(write a single value, e.g. \(field.name): \(Validator.sample(field)))")
            return nil
        }
        let text: String
        let usedVariables: Bool
        switch Interpolation.expand(raw, environment: environment) {
        case .success(let r): (text, usedVariables) = (r.value, r.usedVariables)
        case .failure(.unset(let names)) where field.type == .secret && deferringUnsetSecrets:
            // Stands in for the secret, which nothing checking the file reveals: its own reference.
            for name in names where !neededAtRunTime.contains(name) { neededAtRunTime.append(name) }
            return .secret(.unresolved(raw))
        case .failure(let f):
            error(position, path, f.message)
            return nil
        }
        func bad(_ message: String) -> OptionValue? {
            error(position, path, message)
            return nil
        }
        let shown = Self.shown(raw, as: text, usedVariables: usedVariables)
        let written = usedVariables ? raw : text
        switch field.type {
        case .string:
            return .string(text)
        case .secret:
            return .secret(Secret(text, reference: usedVariables ? raw : nil))
        case .bool:
            if ["true", "True", "TRUE"].contains(text) { return .bool(true) }
            if ["false", "False", "FALSE"].contains(text) { return .bool(false) }
            return bad("\(shown) is not a bool (use true or false)")
        case .int:
            guard let i = Int(text) else {
                if !usedVariables, let d = Validator.number(text), let whole = Int(exactly: d.rounded(.towardZero)) {
                    return bad("\(shown) is not an int (use a whole number, e.g. \(whole))")
                }
                return bad("\(shown) is not an int (try \(Validator.sample(field)))")
            }
            if let problem = field.problem(with: .int(i), shown: usedVariables ? shown : "\(i)") { return bad(problem) }
            return .int(i)
        case .double:
            guard let d = Validator.number(text) else {
                return bad("\(shown) is not a number (try \(Validator.sample(field)))")
            }
            if let problem = field.problem(with: .double(d), shown: usedVariables ? shown : text) { return bad(problem) }
            return .double(d)
        case .duration:
            if let d = Duration(configText: text) { return .duration(d) }
            switch DurationText.problem(text) {
            case .noUnit: return bad("\(shown) has no unit (add a unit, e.g. \(written)s)")
            case .negative: return bad("\(shown) is negative (use 0 or more, e.g. \(Validator.sample(field)))")
            case .notADuration: return bad("\(shown) is not a duration (try \(Validator.sample(field)))")
            }
        case .bitrate:
            if let b = Bitrate(configText: text) { return .bitrate(b) }
            if text.hasPrefix("-") { return bad("\(shown) is negative (try \(Validator.sample(field)))") }
            if Bitrate.lacksUnit(text) { return bad("\(shown) has no unit (write \(written)k for kbit/s, or \(written)bps)") }
            return bad("\(shown) is not a bitrate (try \(Validator.sample(field)))")
        case .choice:
            if let problem = field.problem(with: .string(text), shown: shown) { return bad(problem) }
            return .string(text)
        case .object:
            return nil  // handled above
        }
    }

    /// A finite decimal number ("30", "30.5", "-1e3"); not "inf", "nan" or hex.
    static func number(_ text: String) -> Double? {
        guard !text.isEmpty, text.allSatisfy({ "0123456789.eE+-".contains($0) }),
              let d = Double(text), d.isFinite else { return nil }
        return d
    }

    func article(_ type: OptionType) -> String {
        switch type {
        case .int: "an int"
        case .double: "a number"
        case .choice(let values): "one of " + values.joined(separator: ", ")
        case .object: "a map"
        default: "a " + type.displayName
        }
    }

    /// A value as errors show it. One from the environment is named by its reference, never
    /// echoed: the variable may hold a secret that this field was not meant for.
    static func shown(_ raw: String, as text: String, usedVariables: Bool) -> String {
        usedVariables ? "the value of \(quote(raw))" : quote(text)
    }

    /// A component's `name:` (letters, digits, `-`, `_`).
    mutating func componentName(_ node: Tree, path: String) -> (String, Position)? {
        guard case .scalar(let raw, _, let position) = node, !node.isNull else {
            error(node.position, path, "\(node.shortDescription) is not a name (write e.g. name: tap-1)")
            return nil
        }
        let text: String
        let usedVariables: Bool
        switch Interpolation.expand(raw, environment: environment) {
        case .success(let r): (text, usedVariables) = (r.value, r.usedVariables)
        case .failure(let f):
            error(position, path, f.message)
            return nil
        }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
        guard !text.isEmpty, text.allSatisfy(allowed.contains) else {
            let cleaned = usedVariables ? "" : String(text.map { allowed.contains($0) ? $0 : "-" })
            let fixed = cleaned.isEmpty ? "tap-1" : cleaned
            error(position, path, "\(Self.shown(raw, as: text, usedVariables: usedVariables)) is not a valid name "
                  + "(use letters, digits, - and _, e.g. \(fixed))")
            return nil
        }
        return (text, position)
    }
}

extension OptionSchema {
    /// `values` with every field they leave unset given its declared default (an object default
    /// with its own fields' defaults), and the required fields that have none: how the loader
    /// completes a file and `PipelineSpec.completed` a command's flags.
    func withDefaults(_ values: OptionValues) -> (OptionValues, missing: [OptionField]) {
        var values = values
        var missing: [OptionField] = []
        for field in fields where values[field.name] == nil {
            if let value = field.filledDefault {
                values[field.name] = value
            } else if field.isRequired {
                missing.append(field)
            }
        }
        return (values, missing)
    }
}

extension OptionField {
    /// The declared default as a loaded file holds it: an object's with its own fields' defaults.
    var filledDefault: OptionValue? {
        guard case .object(let schema) = type, case .object(let values)? = defaultValue else { return defaultValue }
        return .object(schema.withDefaults(values).0)
    }

    /// What is wrong with a value of the right type for this option: outside its range, or not one
    /// of its choices (`shown`: the value as the user wrote it); nil when it fits. The loader's
    /// check of a file and `PipelineSpec.completed`'s of flags both ask here.
    func problem(with value: OptionValue, shown: String) -> String? {
        switch (type, value) {
        case (.int(let range?), .int(let number)) where !range.contains(number):
            "\(shown) is out of range (use \(range.lowerBound)...\(range.upperBound))"
        case (.double(let range?), _) where Double(optionValue: value).map { !range.contains($0) } ?? false:
            "\(shown) is out of range (use \(range.lowerBound)...\(range.upperBound))"
        case (.choice(let values), .string(let text)) where !values.contains(text):
            "\(shown) is not one of \(values.joined(separator: ", ")) (try \(Suggest.closest(to: text, in: values) ?? values.first ?? ""))"
        default:
            nil
        }
    }
}
