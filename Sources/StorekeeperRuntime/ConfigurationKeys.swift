import Yams

/// The keys a configuration file may hold, so that a misspelt one is an error instead of a setting silently lost —
/// `trail_cap: 100` for `trial_cap` once loaded and left a trial free to burn a month of usage. Checked before
/// decoding; every unknown key is named with its place and the nearest known key.
indirect enum ConfigurationKeys: Sendable {
    /// A mapping with exactly these keys (each optional or not; the decoder says which are required).
    case object([String: ConfigurationKeys])
    /// A sequence of one shape.
    case list(ConfigurationKeys)
    /// A mapping whose keys are the file's own (meter ids), each value of one shape.
    case map(ConfigurationKeys)
    /// A value not looked into.
    case value

    /// One problem per unknown key in `yaml`, each prefixed with `place`; none when the YAML does not parse (the
    /// decoder reports that).
    func problems(in yaml: String, place: String) -> [String] {
        guard let node = try? Yams.compose(yaml: yaml) else { return [] }
        var problems: [String] = []
        check(node, at: "", into: &problems)
        return problems.map { "\(place): \($0)" }
    }

    private func check(_ node: Node, at path: String, into problems: inout [String]) {
        switch (self, node) {
        case (.object(let keys), .mapping(let mapping)):
            for (key, value) in mapping {
                guard let name = key.string else { continue }
                let place = path.isEmpty ? name : "\(path).\(name)"
                guard let shape = keys[name] else {
                    let nearest = keys.keys.min { EditDistance.between(name, $0) < EditDistance.between(name, $1) }
                    let hint = nearest.map { EditDistance.between(name, $0) <= max(2, name.count / 3) ? "; did you mean \($0)?" : "" } ?? ""
                    let known = keys.keys.sorted().joined(separator: ", ")
                    let line = key.mark.map { "line \($0.line): " } ?? ""
                    problems.append("\(line)\(place) is not a known key\(hint) (known\(path.isEmpty ? "" : " in \(path)"): \(known))")
                    continue
                }
                shape.check(value, at: place, into: &problems)
            }
        case (.list(let element), .sequence(let sequence)):
            // An item named as `YAMLDiagnosis` names it: its id, else its name, else its position.
            for (index, value) in sequence.enumerated() {
                element.check(
                    value, at: "\(path)[\(YAMLDiagnosis.itemName(value, position: index))]", into: &problems)
            }
        case (.map(let element), .mapping(let mapping)):
            for (key, value) in mapping { element.check(value, at: "\(path).\(key.string ?? "?")", into: &problems) }
        default:
            return  // a value, or a shape the decoder will refuse with its own message
        }
    }
}

extension ConfigurationKeys {
    static let allowance = ConfigurationKeys.object(["per_cycle": .value, "per_day": .value, "unlimited": .value, "trial_cap": .value])

    /// `STOREKEEPER_TIERS` (`TierCatalogue`'s coding keys).
    static let tierCatalogue = ConfigurationKeys.object([
        "meters": .list(.object(["id": .value, "display_name": .value, "description": .value, "warn_at": .value])),
        "feature_definitions": .list(
            .object([
                "id": .value, "display_name": .value, "description": .value, "type": .value, "levels": .value, "teaser": .value,
                "upgrade_call_to_action": .value, "default": .value,
            ])),
        // `features`: a mapping of feature values keyed by the file's own feature ids (checked against the
        // definitions), or a list of bullets as written before typed features.
        "free": .object([
            "display_name": .value, "description": .value, "highlights": .value, "features": .value, "allowances": .map(allowance),
        ]),
        "tiers": .list(
            .object([
                "id": .value, "level": .value, "display_name": .value, "description": .value, "highlights": .value, "features": .value,
                "products": .list(
                    .object([
                        "id": .value, "store": .value, "type": .value, "period": .value, "duration": .value, "price": .value, "currency": .value,
                    ])),
                "allowances": .map(allowance), "grantable_only": .value, "group": .value,
            ])),
        "top_ups": .list(.object(["id": .value, "store": .value, "meter": .value, "credits": .value, "price": .value, "currency": .value])),
        "upgrade_credits": .value,
    ])

    /// `STOREKEEPER_WEBHOOKS`.
    static let webhooks = ConfigurationKeys.object([
        "endpoints": .list(.object(["name": .value, "url": .value, "secrets": .value, "types": .value]))
    ])

    /// `STOREKEEPER_OFFERS`.
    static let offers = ConfigurationKeys.object([
        "offers": .list(.object(["id": .value, "product": .value, "audience": .value, "once_per_account": .value]))
    ])

    /// `STOREKEEPER_REFUND_POLICY`.
    static let currencyRates = ConfigurationKeys.object(["reporting": .value, "rates": .map(.value)])

    static let refundPolicy = ConfigurationKeys.object([
        "answerAfterMinutes": .value, "sampleContentProvided": .value, "subscriptionDeclineAbovePercent": .value,
        "consumableDeclineAbovePercent": .value,
    ])
}
