// The geometry table shared by the backward and forward conformance tests (testing.md corpora:
// GoogleNet / ResNet layers, tails, large stride, global pooling, ceil-mode windows that start in
// padding, windows pushed wholly into padding (R1), broadcasting of the attribute arrays, rank 3).
#ifndef AVGPOOL2D_TESTS_AVGPOOL2D_CASES_HPP_
#define AVGPOOL2D_TESTS_AVGPOOL2D_CASES_HPP_

#include <string>
#include <vector>

#include "avgpool2d_test_util.hpp"

namespace apt {

struct Case {
    std::string name;
    std::vector<int64_t> self;  // rank 4 (N, C, H, W) or rank 3 (C, H, W)
    Attrs attrs;
};

inline void PrintTo(const Case &c, std::ostream *os) { *os << c.name << " self " << dimsStr(c.self); }

inline std::optional<std::vector<int64_t>> S(std::vector<int64_t> v) { return v; }

inline Attrs A(std::vector<int64_t> k, std::optional<std::vector<int64_t>> s, std::vector<int64_t> p, bool ceil = false,
               bool cip = true, int64_t div = 0) {
    Attrs a;
    a.kernel = std::move(k);
    a.stride = std::move(s);
    a.padding = std::move(p);
    a.ceilMode = ceil;
    a.countIncludePad = cip;
    a.divisorOverride = div;
    return a;
}

inline const std::vector<Case> &backwardCases() {
    static const std::vector<Case> cases{
        {"k2s2_basic", {2, 3, 8, 8}, A({2}, S({2}), {0})},
        {"k3s1p1_countpad", {1, 2, 7, 9}, A({3}, S({1}), {1}, false, true)},
        {"k3s1p1_nocountpad", {1, 2, 7, 9}, A({3}, S({1}), {1}, false, false)},
        // ceil mode: windows start in the left padding and overhang H + pH (not counted in the divisor).
        {"ceil_start_in_pad_countpad", {2, 3, 6, 7}, A({3}, S({2}), {1}, true, true)},
        {"ceil_start_in_pad_nocountpad", {2, 3, 6, 7}, A({3}, S({2}), {1}, true, false)},
        // R1: the ceil rule drops a last window that would lie wholly in the right padding.
        {"ceil_rule_R1_ih3k2s2p1", {1, 2, 3, 3}, A({2}, S({2}), {1}, true, true)},
        {"ceil_rule_R1_ih5k3s3p1", {2, 2, 5, 5}, A({3}, S({3}), {1}, true, false)},
        {"ceil_no_pad", {1, 3, 5, 5}, A({2}, S({2}), {0}, true, true)},
        {"divisor_positive", {2, 3, 7, 7}, A({3}, S({2}), {1}, true, true, 5)},
        {"divisor_negative", {2, 3, 7, 7}, A({3, 2}, S({1, 2}), {1, 1}, false, false, -3)},
        {"divisor_overrides_nocountpad", {1, 4, 6, 6}, A({2}, S({1}), {1}, false, false, 2)},
        {"divisor_overrides_ceil_countpad", {1, 3, 6, 7}, A({3}, S({2}), {1}, true, true, 7)},
        {"divisor_large_a2", {1, 3, 6, 6}, A({2}, S({1}), {0}, false, true, 100000)},
        {"ncl_rank3", {4, 9, 11}, A({3, 2}, S({2, 1}), {1, 0})},
        {"ncl_rank3_ceil_nocountpad", {3, 10, 5}, A({2}, S({3}), {1}, true, false)},
        {"broadcast_len1_all", {2, 3, 9, 10}, A({3}, S({2}), {1})},
        {"stride_null_is_kernel", {2, 3, 8, 9}, A({2, 3}, std::nullopt, {0, 1})},
        {"stride_len0_is_kernel", {2, 3, 9, 9}, A({3}, S({}), {1})},
        {"len2_all", {1, 3, 10, 12}, A({3, 4}, S({2, 3}), {1, 2})},
        {"tails_ic17ih60kh4kw3sh2ph1", {2, 17, 60, 60}, A({4, 3}, S({2}), {1})},
        {"large_stride_ih20iw42kh4kw3sh1sw3", {2, 3, 20, 42}, A({4, 3}, S({1, 3}), {0})},
        {"global_ic2048ih7kh7", {1, 2048, 7, 7}, A({7}, std::nullopt, {0})},
        {"H1", {2, 3, 1, 9}, A({1, 3}, S({1, 2}), {0, 1})},
        {"W1_nocountpad", {2, 3, 8, 1}, A({3, 1}, S({2, 1}), {1, 0}, false, false)},
        {"HW1_ceil", {1, 5, 1, 1}, A({2}, S({2}), {1}, true, true)},
        {"googlenet_ic192ih57kh3sh2", {2, 192, 57, 57}, A({3}, S({2}), {0})},
        {"googlenet_ic480ih28oh14kh3sh2_ceil", {1, 480, 28, 28}, A({3}, S({2}), {0}, true, true)},
        {"googlenet_ic832ih7kh3sh1ph1", {1, 832, 7, 7}, A({3}, S({1}), {1}, false, false)},
        {"resnet_ih112oh56kh3sh2ph1", {1, 8, 112, 112}, A({3}, S({2}), {1})},
        {"stride_gt_kernel", {2, 3, 11, 11}, A({2}, S({3}), {1})},
        {"kernel_gt_input", {1, 3, 2, 2}, A({3}, S({1}), {1}, false, false)},
        {"big_kernel_pad_nocountpad", {1, 3, 12, 13}, A({5}, S({1}), {2}, false, false)},
        {"asym_ceil", {2, 4, 13, 17}, A({2, 5}, S({3, 2}), {1, 2}, true, true)},
    };
    return cases;
}

}  // namespace apt

#endif  // AVGPOOL2D_TESTS_AVGPOOL2D_CASES_HPP_
