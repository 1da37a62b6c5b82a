// Huawei's ATK system-test specs as data (plugins/<plugin>/tests/cann_st/*.yaml, one flow mapping a
// call): the file's cases, each parsed by the operator's test into its own case type, and its
// recorded deviations (the cases' `ids:`, or `match:` keys a case must equal; the status we answer
// instead in `ours:`, the reason in `why:`); the spec's value distributions; which calls a test runs
// whole; and, for the others, a phase 1 alone over unreadable reservations.
#ifndef ACLNN_CPU_TESTS_SUPPORT_ATK_SPEC_HPP_
#define ACLNN_CPU_TESTS_SUPPORT_ATK_SPEC_HPP_

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn_cpu/dtype.hpp"
#include "acltest.hpp"
#include "reserved_storage.hpp"

namespace acltest {

template <class Case>
struct AtkSpec {
    std::vector<Case> cases;
    std::vector<YAML::Node> nodes;  // each case as written, for the deviations' `match:`
    YAML::Node deviations;

    template <class Parse>
    static AtkSpec load(const std::string &path, Parse parse) {
        AtkSpec s;
        const YAML::Node root = YAML::LoadFile(path);
        for (const auto &n : root["cases"]) {
            s.cases.push_back(parse(n));
            s.nodes.push_back(n);
        }
        s.deviations = root["deviations"];
        return s;
    }

    // 0 .. cases - 1: the parameters of a test over the spec.
    std::vector<size_t> indices() const {
        std::vector<size_t> v(cases.size());
        for (size_t i = 0; i < v.size(); ++i) v[i] = i;
        return v;
    }

    // The status phase 1 must answer for case i: success, or its recorded deviation's `ours:`; and
    // the deviation's reason, for a failure's message.
    aclnnStatus expected(size_t i) const {
        const std::optional<YAML::Node> d = deviation(i);
        return d ? d->operator[]("ours").as<aclnnStatus>() : ACLNN_SUCCESS;
    }
    std::string why(size_t i) const {
        const std::optional<YAML::Node> d = deviation(i);
        return d ? " (deviation: " + d->operator[]("why").as<std::string>() + ")" : "";
    }

    // Case i answers phase 1 (`phase1(case, message)`) as expected(i); `describe(case)` names it.
    template <class Phase1, class Describe>
    void expectPhase1(size_t i, Phase1 phase1, Describe describe) const {
        std::string message;
        EXPECT_EQ(phase1(cases[i], message), expected(i)) << describe(cases[i]) << ": " << message << why(i);
    }
    template <class Phase1, class Describe>
    void expectEveryPhase1(Phase1 phase1, Describe describe) const {
        for (size_t i = 0; i < cases.size(); ++i) expectPhase1(i, phase1, describe);
    }

    // Whether case k is one a test runs whole: its size (elements, or work) within `budget`, or the
    // smallest case of its kind (`kind(case)` comparable), so that every kind the spec has runs once.
    template <class Size, class Kind>
    bool runsWhole(const Case &k, int64_t budget, Size size, Kind kind) const {
        if (size(k) <= budget) return true;
        bool before = true;  // c comes before k in the spec: a tie goes to the first
        for (const Case &c : cases) {
            if (&c == &k) {
                before = false;
                continue;
            }
            if (kind(c) == kind(k) && (size(c) < size(k) || (before && size(c) == size(k)))) return false;
        }
        return true;
    }

    // The recorded deviation case i falls under, if any: one that lists its id in `ids`, or one whose
    // `match` keys all equal the case's.
    std::optional<YAML::Node> deviation(size_t i) const {
        for (const auto &d : deviations) {
            if (d["ids"]) {
                for (const auto &id : d["ids"])
                    if (id.as<int>() == nodes[i]["id"].as<int>()) return d;
                continue;
            }
            bool all = true;
            for (const auto &m : d["match"])
                all = all && nodes[i][m.first.as<std::string>()].as<std::string>() == m.second.as<std::string>();
            if (all) return d;
        }
        return std::nullopt;
    }
};

// A case's dtype by its name in the spec (FLOAT, FLOAT16, BF16, DOUBLE, ...), the library's names.
inline aclDataType atkDtype(const YAML::Node &n) {
    const auto dt = acp::parse_dtype(n.as<std::string>());
    if (!dt) throw std::runtime_error("unknown dtype " + n.as<std::string>());
    return static_cast<aclDataType>(*dt);
}

// n values as the spec's generator draws them: uniform in [lo, hi], each rounded to the tensor's
// dtype by `round`.
template <class Round>
std::vector<double> atkDraw(int64_t n, double lo, double hi, uint64_t seed, Round round) {
    Rng r(seed);
    std::vector<double> v(static_cast<size_t>(n));
    for (auto &x : v) x = round(r.uniform(lo, hi));
    return v;
}

// How the spec draws a tensor's values (its `range_values`): uniform in [lo, hi]; `nd`, a normal
// distribution whose mean and deviation are drawn from the ranges given; or one value everywhere
// (its boundary cases: ["inf"], ["-inf"], ["nan"]).
struct AtkDistribution {
    enum class Kind { Uniform, Normal, Constant } kind = Kind::Uniform;
    double lo = 0, hi = 0;        // uniform: the range; normal: the mean's range; constant: the value
    double stdLo = 0, stdHi = 0;  // normal: the deviation's range

    static AtkDistribution of(const YAML::Node &n) {
        AtkDistribution d;
        const auto number = [](const YAML::Node &v) {
            const auto t = v.as<std::string>();
            return t == "inf" ? INFINITY : t == "-inf" ? -INFINITY : t == "nan" ? NAN : std::stod(t);
        };
        if (n.IsMap()) {
            if (n["name"].as<std::string>() != "nd") throw std::runtime_error("unknown distribution " + n["name"].as<std::string>());
            d.kind = Kind::Normal;
            d.lo = n["mean"][0].as<double>(), d.hi = n["mean"][1].as<double>();
            d.stdLo = n["std"][0].as<double>(), d.stdHi = n["std"][1].as<double>();
        } else if (n.size() == 1) {
            d.kind = Kind::Constant;
            d.lo = number(n[0]);
        } else {
            d.lo = number(n[0]), d.hi = number(n[1]);
        }
        return d;
    }

    // n values, each rounded to the tensor's dtype by `round`.
    template <class Round>
    std::vector<double> draw(int64_t n, uint64_t seed, Round round) const {
        if (kind == Kind::Constant) return std::vector<double>(static_cast<size_t>(n), round(lo));
        if (kind == Kind::Uniform) return atkDraw(n, lo, hi, seed, round);
        Rng r(seed);
        const double mean = r.uniform(lo, hi), sd = r.uniform(stdLo, stdHi);
        std::vector<double> v(static_cast<size_t>(n));
        for (auto &x : v) {  // Box-Muller
            const double u1 = 1.0 - r.uniform(0.0, 1.0), u2 = r.uniform(0.0, 1.0);
            x = round(mean + sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
        }
        return v;
    }
};

// A phase 1 alone: its status, its message when it failed, its executor released when it did not.
inline aclnnStatus atkPhase1(aclnnStatus st, aclOpExecutor *exec, std::string &message) {
    if (st != ACLNN_SUCCESS) message = recentErr();
    else aclDestroyAclOpExecutor(exec);
    return st;
}

// Dense tensors whose data are unreadable reservations: a phase 1 that read data would crash, and
// calls of any size cost no memory.
class ReservedTensors {
public:
    aclTensor *add(const std::vector<int64_t> &shape, aclDataType dt, size_t elementBytes, aclFormat fmt) {
        std::vector<int64_t> strides(shape.size(), 1);
        for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        data_.push_back(std::make_unique<Storage>(static_cast<size_t>(n) * elementBytes, false));
        tensors_.emplace_back(aclCreateTensor(shape.data(), shape.size(), dt, strides.data(), 0, fmt, &n, 1, data_.back()->get()),
                              aclDestroyTensor);
        return tensors_.back().get();
    }

private:
    std::vector<std::unique_ptr<Storage>> data_;
    std::vector<std::unique_ptr<aclTensor, aclnnStatus (*)(const aclTensor *)>> tensors_;
};

}  // namespace acltest

// The spec's tests, in one process each (a process per call cost CI minutes): Suite.EveryCallOnAtlasA2
// runs replay(i) for every case (each failure names its case), and Suite.AcceptedOnAtlasA3 checks
// that atlas-a3, which has atlas-a2's rules, answers every call in phase 1 (phase1Only) as atlas-a2
// does. Needs corpus(), replay, phase1Only and name.
#define ACLTEST_ATK_SUITE(Suite)                                                                 \
    TEST(Suite, EveryCallOnAtlasA2) {                                                            \
        for (size_t i = 0; i < corpus().cases.size(); ++i) {                                     \
            SCOPED_TRACE(name(corpus().cases[i]));                                               \
            replay(i);                                                                           \
        }                                                                                        \
    }                                                                                            \
    TEST(Suite, AcceptedOnAtlasA3) {                                                             \
        ASSERT_NO_FATAL_FAILURE(acltest::Runtime::use("atlas-a3"));                              \
        corpus().expectEveryPhase1(phase1Only, name);                                            \
    }

#endif  // ACLNN_CPU_TESTS_SUPPORT_ATK_SPEC_HPP_
