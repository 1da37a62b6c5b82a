// avgpool2d row stages: the steps a kernel run is made of (backward: products P, horizontal stage A,
// vertical stage B; forward: column sums, window sums), one scalar spelling that defines the order
// and one AVX-512 spelling with the same arithmetic, chosen once per run through Ops.
#ifndef AVGPOOL2D_ROWS_HPP_
#define AVGPOOL2D_ROWS_HPP_

#include <cstdint>
#include <cstring>

#include "aclnn_cpu/isa.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "avgpool2d_tables.hpp"

namespace avgpool2d {

// The product must be rounded on its own before it is added (no FMA contraction, whatever
// -ffp-contract the build uses), or the scalar and vector paths could differ in the last bit.
inline float opaque(float x) {
#if ACP_X86
    asm("" : "+x"(x));
    return x;
#else
    volatile float v = x;
    return v;
#endif
}

inline float load_elem(const char* p, DType dt) {
    if (dt == DType::F32) {
        float f;
        std::memcpy(&f, p, sizeof f);
        return f;
    }
    uint16_t u;
    std::memcpy(&u, p, sizeof u);
    return dt == DType::F16 ? acp::half_to_float(u) : acp::bf16_to_float(u);
}

inline void store_elem(char* p, float v, DType dt) {
    if (dt == DType::F32) {
        std::memcpy(p, &v, sizeof v);
        return;
    }
    const uint16_t u = dt == DType::F16 ? acp::float_to_half(v) : acp::float_to_bf16(v);
    std::memcpy(p, &u, sizeof u);
}

struct FwStage1Args {
    float* V;            // out: V[j] for input column vlo + j, j < n
    const char* in;      // self plane
    int64_t in_h, in_w;  // element strides
    int64_t h0, h1;      // window rows
    int64_t vlo, n;
    DType dt;
};

struct BwRowsArgs {  // see bw_rows_avx
    const BackwardPlan* B;
    const BwSeg* s;
    const char* go;  // gradOutput plane
    int64_t go_h;
    char* gi;        // gradInput plane
    int64_t gi_h;
    int64_t h0, h1;
    float* ring;     // Q rows
    float* P;        // products of one gradOutput row
    float* P1;       // and of the next one
    bool stream;     // non-temporal stores for whole aligned lines
    Parity parity;   // stage A by column parity (BackwardPlan::parity), or None: the tables
};

// Scalar stages (any strides): the order every path follows.
void bw_products_scalar(float* P, const char* go_row, int64_t go_w, const float* srow, int64_t n, DType dt);
void bw_stage_a_scalar(const BackwardPlan& B, const BwSeg& s, const float* P, float* Q);
void bw_stage_b_scalar(const float* const* rows, int64_t count, int64_t n, char* out, int64_t ds, DType dt);
void bw_direct_scalar(const BackwardPlan& B, const BwSeg& s, const char* go, View4 gv, int64_t oh0, int64_t oh1,
                      float* row);
void fw_stage1_scalar(const FwStage1Args& a);
void fw_stage2_scalar(const ForwardPlan& P, const FwSeg& s, const float* V, const float* srow, float* out);
void fw_direct_scalar(const ForwardPlan& P, const FwSeg& s, const FwStage1Args& a, const float* srow, float* out);
void round_scalar(const float* src, uint16_t* dst, int64_t n, DType dt);

struct Ops {
    bool avx = false;
    // P of a w-stride-1 gradOutput row (the scalar one handles any stride).
    void (*bw_products)(float*, const char*, int64_t, const float*, int64_t, DType) = bw_products_scalar;
    void (*bw_stage_a)(const BackwardPlan&, const BwSeg&, const float*, float*) = bw_stage_a_scalar;
    // Stage B into a w-stride-1 run as dt (null: use bw_stage_b_scalar).
    void (*bw_stage_b)(const float* const*, int64_t, int64_t, char*, bool) = nullptr;
    // The fused row loop of the common case (null: the generic loop).
    void (*bw_rows)(const BwRowsArgs&) = nullptr;
    void (*fw_stage1)(const FwStage1Args&) = fw_stage1_scalar;  // in_w == 1 only if avx
    void (*fw_stage2)(const ForwardPlan&, const FwSeg&, const float*, const float*, float*) = fw_stage2_scalar;
    void (*fw_stage2_perm)(const ForwardPlan&, const FwSeg&, const float*, const float*, float*) = fw_stage2_scalar;
    void (*round)(const float*, uint16_t*, int64_t, DType) = round_scalar;
};

// Point ops at the AVX-512 stages for dt (hw_bf16: round BF16 with vcvtneps2bf16). Only call when
// the CPU has AVX512 F/BW/VL/DQ (detail::cpu_has_avx512()).
void use_avx512_rows(Ops& ops, DType dt, bool hw_bf16);
// Order the non-temporal stores of the streaming path before a task completes.
void store_fence();

}  // namespace avgpool2d

#endif  // AVGPOOL2D_ROWS_HPP_
