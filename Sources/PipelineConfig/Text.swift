/// `${VAR}` interpolation in scalar strings; `$${` is a literal `${`.
enum Interpolation {
    struct Result: Sendable {
        var value: String
        /// True when the text referenced at least one variable.
        var usedVariables: Bool
    }

    enum Failure: Error, Sendable {
        case unset([String])
        case unterminated
        case badName(String)

        var message: String {
            switch self {
            case .unset(let names) where names.count == 1:
                "environment variable \(names[0]) is not set (export it, or use --set)"
            case .unset(let names):
                "environment variables \(names.joined(separator: ", ")) are not set (export them, or use --set)"
            case .unterminated:
                "\"${\" has no closing \"}\" (write ${NAME}, or $${ for a literal ${)"
            case .badName(let name):
                "\(quote(name)) is not an environment variable name (use letters, digits and _, e.g. ${MY_KEY}; "
                    + "write $${ for a literal ${)"
            }
        }
    }

    static func expand(_ text: String, environment: [String: String]) -> Swift.Result<Result, Failure> {
        guard text.contains("${") else { return .success(Result(value: text, usedVariables: false)) }
        var out = ""
        var used = false
        var unset: [String] = []
        var rest = text[...]
        while let dollar = rest.firstIndex(of: "$") {
            out += rest[..<dollar]
            rest = rest[dollar...]
            if rest.hasPrefix("$${") {
                out += "${"
                rest = rest.dropFirst(3)
            } else if rest.hasPrefix("${") {
                guard let close = rest.firstIndex(of: "}") else { return .failure(.unterminated) }
                let name = String(rest[rest.index(rest.startIndex, offsetBy: 2)..<close])
                guard isVariableName(name) else { return .failure(.badName(name)) }
                used = true
                if let value = environment[name] {
                    out += value
                } else if !unset.contains(name) {
                    unset.append(name)
                }
                rest = rest[rest.index(after: close)...]
            } else {
                out += "$"
                rest = rest.dropFirst()
            }
        }
        out += rest
        if !unset.isEmpty { return .failure(.unset(unset)) }
        return .success(Result(value: out, usedVariables: used))
    }

    /// The inverse of expansion for literal text: `${` → `$${`.
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "${", with: "$${")
    }

    static func isVariableName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || (first.properties.isAlphabetic && first.isASCII)
        else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && ($0 == "_" || $0.properties.isAlphabetic || ("0"..."9").contains($0)) }
    }
}

enum Suggest {
    /// The closest candidate by edit distance (transpositions count as one edit), if it is close enough.
    static func closest(to word: String, in candidates: [String]) -> String? {
        let limit = word.count <= 3 ? 1 : word.count <= 6 ? 2 : 3
        var best: (String, Int)?
        for candidate in candidates {
            let d = candidate.lowercased() == word.lowercased() ? 0 : distance(word.lowercased(), candidate.lowercased())
            if d <= limit, d < (best?.1 ?? .max) { best = (candidate, d) }
        }
        return best?.0
    }

    /// Optimal string alignment distance.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var d = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }
}

/// Text for YAML output.
enum YAMLText {
    /// A scalar as YAML text: plain when that reads back as the same string, double-quoted otherwise.
    static func scalar(_ text: String, isKey: Bool = false) -> String {
        let plainStart = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_/.$")
        let plainRest = plainStart.union(":@%+=?&,-{}")  // block context only: braces are plain here
        let reserved: Set = ["", "~", "null", "Null", "NULL"]
        if let first = text.first, plainStart.contains(first), text.allSatisfy(plainRest.contains),
           !text.hasSuffix(":"), isKey || !reserved.contains(text) {
            return text
        }
        return doubleQuoted(text)
    }

    /// `"text"` with YAML double-quote escapes; also how error messages quote values.
    static func doubleQuoted(_ text: String) -> String {
        var out = "\""
        for ch in text.unicodeScalars {
            switch ch {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case _ where ch.value < 0x20 || ch.value == 0x7F:
                let hex = String(ch.value, radix: 16)
                out += "\\x" + String(repeating: "0", count: 2 - hex.count) + hex
            default: out.unicodeScalars.append(ch)
            }
        }
        return out + "\""
    }
}
