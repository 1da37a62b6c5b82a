// What the ATK replays of AvgPool2d and AvgPool2dBackward share (cann_st/README.md): the attributes
// of a call as the spec writes them (its snake_case names), each element a value or, in a few
// boundary cases, a range [lo, hi] the spec draws it from (drawn here from the case's id).
#ifndef AVGPOOL2D_TESTS_AVGPOOL2D_ATK_HPP_
#define AVGPOOL2D_TESTS_AVGPOOL2D_ATK_HPP_

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "atk_spec.hpp"
#include "avgpool2d_test_util.hpp"

namespace apt {

inline Attrs atkAttrs(const YAML::Node &at, int id) {
    Rng r(static_cast<uint64_t>(id));
    const auto value = [&](const YAML::Node &e) {
        if (!e.IsSequence()) return e.as<int64_t>();
        return e.size() == 2 ? r.integer(e[0].as<int64_t>(), e[1].as<int64_t>()) : e[0].as<int64_t>();
    };
    const auto list = [&](const YAML::Node &l) {
        std::vector<int64_t> v;
        for (const auto &e : l) v.push_back(value(e));
        return v;
    };
    Attrs a;
    a.kernel = list(at["kernel_size"]);
    a.stride = list(at["stride"]);
    a.padding = list(at["padding"]);
    a.ceilMode = at["ceil_mode"].as<bool>();
    a.countIncludePad = at["count_include_pad"].as<bool>();
    a.divisorOverride = value(at["divisor_override"]);
    a.cubeMathType = static_cast<int8_t>(at["cube_math_type"].as<int>());
    return a;
}

// A call in failure messages.
inline std::string atkName(int id, aclDataType dt, const std::vector<int64_t> &self, const Attrs &a) {
    return "case " + std::to_string(id) + " " + dtName(dt) + " self " + dimsStr(self) + " k" + dimsStr(a.kernel) + " s" + dimsStr(*a.stride) +
           " p" + dimsStr(a.padding) + (a.ceilMode ? " ceil" : "") + (a.countIncludePad ? " countPad" : "") + " divisor " +
           std::to_string(a.divisorOverride) + " cube " + std::to_string(a.cubeMathType);
}

}  // namespace apt

#endif  // AVGPOOL2D_TESTS_AVGPOOL2D_ATK_HPP_
