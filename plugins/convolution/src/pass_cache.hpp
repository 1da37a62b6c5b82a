// oneDNN passes kept from one plan for the next plan of the same problem. Building a pass (its
// primitive descriptors, primitives and reorders) is most of a convolution's phase 1: a training
// loop plans the same layers step after step, and each plan would build them again.
//
// A pass is lent to one plan at a time: the plan takes an idle pass of the same problem (or builds
// one), and when the plan is destroyed the pass goes back to the idle list, the least recently used
// dropped beyond kIdlePasses. No two executors ever share a pass, so its per-run state (the task
// slot flags) stays private to one executor, as when every plan built its own. A pass depends on
// nothing but its constructor's arguments (and the CPU), so a lent pass computes the same bytes as
// a new one.
#ifndef CONVOLUTION_SRC_PASS_CACHE_HPP_
#define CONVOLUTION_SRC_PASS_CACHE_HPP_

#include <cstdint>
#include <memory>

#include "dnnl_pass.hpp"

namespace conv {

inline constexpr size_t kIdlePasses = 32;  // of each kind; ResNet-50's backward has ~20 distinct layers

// The pass for these arguments: an idle one built by an earlier plan, or a new one. reused (when
// given) says which.
std::shared_ptr<DataPass> lend_data_pass(const Geometry &g, DataPass::Kind kind, Dt dt, int64_t threads,
                                         bool *reused = nullptr);
std::shared_ptr<WeightPass> lend_weight_pass(const Geometry &g, Dt dt, int64_t threads, bool *reused = nullptr);

}  // namespace conv

#endif  // CONVOLUTION_SRC_PASS_CACHE_HPP_
