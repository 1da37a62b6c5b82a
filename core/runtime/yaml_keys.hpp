// A YAML mapping that gives one key twice: yaml-cpp keeps both ("a: 1\na: 2" parses, and lookups
// find the first), so every file this project reads (manifests, product profiles, the aclInit
// config) is checked with this, at any depth, before its keys are read.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace aclcpu {

struct DuplicateKey {
    std::string key;
    int line = 0;        // 1-based line of the second occurrence
    int first_line = 0;  // and of the first
    std::string message() const {
        return "'" + key + "' is given twice (first on line " + std::to_string(first_line) + ")";
    }
};

// A duplicate key (a mapping's own before its children's), or none. Walks iteratively (no recursion) and
// visits at most `limit` nodes (an alias may repeat a subtree; the walk stays bounded).
inline std::optional<DuplicateKey> find_duplicate_key(const YAML::Node &root, size_t limit = 1000000) {
    std::vector<YAML::Node> stack{root};
    for (size_t visited = 0; !stack.empty() && visited < limit; ++visited) {
        const YAML::Node n = stack.back();
        stack.pop_back();
        std::vector<YAML::Node> children;
        if (n.IsMap()) {
            std::map<std::string, int> seen;
            for (const auto &kv : n) {
                const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
                const int line = kv.first.Mark().line + 1;
                if (kv.first.IsScalar())
                    if (const auto [it, fresh] = seen.emplace(key, line); !fresh) return DuplicateKey{key, line, it->second};
                children.push_back(kv.second);
            }
        } else if (n.IsSequence()) {
            for (const auto &e : n) children.push_back(e);
        }
        stack.insert(stack.end(), children.rbegin(), children.rend());  // document order
    }
    return std::nullopt;
}

}  // namespace aclcpu
