// avgpool2d compute kernels: AvgPool2d forward and AvgPool2dBackward on the CPU.
//
// Planned once (constructor: window tables, divisor scales, vector permutation tables), run many
// times (run(): no heap allocation, deterministic, bitwise identical at any thread count and on the
// scalar and AVX-512 paths).
//
// Summation order (the one both code paths follow, so their bits agree):
//   backward  gradInput[h][w] = sum_{oh covering h, ascending} ( sum_{ow covering w, ascending}
//                                   gradOutput[oh][ow] * scale(oh, ow) )
//   forward   out[oh][ow]     = ( sum_{w in window, ascending} ( sum_{h in window, ascending} self[h][w] ) )
//                                   * scale(oh, ow)
// with every sum starting from +0.0f and adding with acp::add_ordered (of two NaNs the earlier
// operand's payload is kept, so a sum ends with its earliest NaN's on every path), products never
// fused into FMAs, scale = 1.0f / divisor
// (rounded with acp::round_to_precision when precision != 0), FLOAT16/BF16 accumulated in FLOAT and
// rounded once on store with the rules of aclnn_cpu/numeric.hpp.
#ifndef AVGPOOL2D_KERNELS_HPP_
#define AVGPOOL2D_KERNELS_HPP_

#include <cstdint>
#include <memory>

#include "aclnn_cpu/isa.hpp"
#include "aclnn_cpu/nchw.hpp"

namespace avgpool2d {

struct Geometry {                 // all already validated by the caller
    int64_t N, C, H, W;           // input (self / gradInput) plane count N*C, spatial H x W
    int64_t Ho, Wo;               // pooled output size
    int64_t kH, kW, sH, sW, pH, pW;
    bool ceil_mode, count_include_pad;
    int64_t divisor_override;     // 0 = not set; may be negative
};
using acp::DType;
using acp::View4;

// Code path selection, for tests and benchmarks. Auto (and Avx512) = AVX-512 when the CPU has
// AVX512 F, BW, VL and DQ (plus the AVX512_BF16 conversion instruction for BF16 stores when the
// CPU has it), else the portable scalar path. Avx512NoBf16 = AVX-512 without that instruction.
// Every path produces the same bits.
enum class Isa { Auto, Scalar, Avx512, Avx512NoBf16 };
// Store policy of the backward kernel for gradInput. Auto = non-temporal (streaming) stores of
// whole 64-byte-aligned lines when gradInput is larger than 16 MB (it cannot stay in cache anyway,
// and streaming skips reading each line before overwriting it), plain stores otherwise.
// Streaming needs the AVX-512 path and w stride 1; the bits written never depend on the mode.
enum class StoreMode { Auto, Plain, Streaming };

struct BackwardPlan;
struct ForwardPlan;

// Planned once (phase 1), run many times (phase 2). run() does not allocate: its scratch lives on
// the stack of each thread that runs it (about 52 KB backward, 20 KB forward). Both kernels are
// immutable after construction (the set_* hooks aside), so run() may be called concurrently.
// Do not build with -ffast-math: the kernels rely on IEEE semantics (signed zeros, NaN).
class BackwardKernel {
public:
    // precision: acp_precision (0 native, 1 FP16, 2 HF32, 3 BF16); when != 0 the per-window scale
    // 1/divisor is rounded with acp::round_to_precision (the caller already rounded gradOutput).
    BackwardKernel(const Geometry& g, DType dt, int32_t precision);
    // gradOutput: element 0 of an (N, C, Ho, Wo) view with strides go; gradInput: element 0 of an
    // (N, C, H, W) view with strides gi. Every gradInput element of the view is written, nothing
    // outside it; gradOutput is read only inside its view. Any strides (even negative) are allowed;
    // w stride 1 takes the vectorized path. The two views must not overlap.
    void run(const void* gradOutput, View4 go, void* gradInput, View4 gi) const;

    void set_isa(Isa isa) { isa_ = isa; }               // testing hook
    void set_store_mode(StoreMode m) { store_ = m; }    // testing / tuning hook
    void set_parity_path(bool on) { parity_ = on; }     // testing hook: off = the table path
    bool uses_parity_path() const;                      // stage A by column parity (AVX-512)
    bool uses_avx512() const;                           // the path run() takes with the current Isa

private:
    std::shared_ptr<const BackwardPlan> plan_;
    Isa isa_ = Isa::Auto;
    StoreMode store_ = StoreMode::Auto;
    bool parity_ = true;
};

// aclnnAvgPool2d: out (N, C, Ho, Wo) from self (N, C, H, W). A window lying wholly in the padding
// writes +0 (PyTorch's CPU and CUDA kernels do the same).
class ForwardKernel {
public:
    ForwardKernel(const Geometry& g, DType dt, int32_t precision);
    void run(const void* self, View4 in, void* out, View4 outv) const;

    void set_isa(Isa isa) { isa_ = isa; }  // testing hook
    bool uses_avx512() const;

private:
    std::shared_ptr<const ForwardPlan> plan_;
    Isa isa_ = Isa::Auto;
};

namespace detail {
// Test hook: round n FLOATs to dt (F16 or BF16) exactly as the kernels store them.
void round_floats(const float* src, uint16_t* dst, int64_t n, DType dt, Isa isa);
using acp::cpu_has_avx512;
}  // namespace detail

}  // namespace avgpool2d

#endif  // AVGPOOL2D_KERNELS_HPP_
