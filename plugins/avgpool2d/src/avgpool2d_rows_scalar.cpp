// avgpool2d row stages, scalar spelling (see avgpool2d_rows.hpp): any strides, any CPU; these
// define the summation order the AVX-512 stages reproduce bit for bit. Every sum adds with
// acp::add_ordered, so that of two NaNs the earlier one's payload is kept on both spellings.
#include "avgpool2d_rows.hpp"

namespace avgpool2d {

// P[j] = gradOutput[rlo + j] * scale[rlo + j], j < n, for one gradOutput row.
void bw_products_scalar(float* P, const char* go_row, int64_t go_w, const float* srow, int64_t n, DType dt) {
    const int64_t es = elem_size(dt);
    for (int64_t j = 0; j < n; ++j) P[j] = opaque(load_elem(go_row + j * go_w * es, dt) * srow[j]);
}

// Stage A: Q[w - w0] = 0 + sum of P over the columns covering w.
void bw_stage_a_scalar(const BackwardPlan& B, const BwSeg& s, const float* P, float* Q) {
    for (int64_t w = s.w0; w < s.w1; ++w) {
        float acc = 0.0f;
        for (int64_t ow = B.aw.cov_lo[w]; ow < B.aw.cov_hi[w]; ++ow) acc = acp::add_ordered(acc, P[ow - s.rlo]);
        Q[w - s.w0] = acc;
    }
}

// Stage B: out[j] = 0 + rows[0][j] + rows[1][j] + ..., stored as dt with a stride of `ds` bytes.
void bw_stage_b_scalar(const float* const* rows, int64_t count, int64_t n, char* out, int64_t ds, DType dt) {
    for (int64_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (int64_t i = 0; i < count; ++i) acc = acp::add_ordered(acc, rows[i][j]);
        store_elem(out + j * ds, acc, dt);
    }
}

// Same bits as stages A and B (each Q entry recomputed per use), with no scratch at all.
void bw_direct_scalar(const BackwardPlan& B, const BwSeg& s, const char* go, View4 gv, int64_t oh0, int64_t oh1,
                      float* row) {
    const int64_t es = elem_size(B.dt);
    for (int64_t w = s.w0; w < s.w1; ++w) {
        float acc = 0.0f;
        for (int64_t oh = oh0; oh < oh1; ++oh) {
            float q = 0.0f;
            for (int64_t ow = B.aw.cov_lo[w]; ow < B.aw.cov_hi[w]; ++ow)
                q = acp::add_ordered(q, opaque(load_elem(go + (oh * gv.h + ow * gv.w) * es, B.dt) * B.sc.row(oh)[ow]));
            acc = acp::add_ordered(acc, q);
        }
        row[w - s.w0] = acc;
    }
}

void fw_stage1_scalar(const FwStage1Args& a) {
    const int64_t es = elem_size(a.dt);
    for (int64_t j = 0; j < a.n; ++j) a.V[j] = 0.0f;
    for (int64_t h = a.h0; h < a.h1; ++h) {
        const char* x = a.in + (h * a.in_h + a.vlo * a.in_w) * es;
        for (int64_t j = 0; j < a.n; ++j) a.V[j] = acp::add_ordered(a.V[j], load_elem(x + j * a.in_w * es, a.dt));
    }
}

void fw_stage2_scalar(const ForwardPlan& P, const FwSeg& s, const float* V, const float* srow, float* out) {
    for (int64_t ow = s.ow0; ow < s.ow1; ++ow) {
        float acc = 0.0f;
        for (int64_t w = P.aw.lo[ow]; w < P.aw.hi[ow]; ++w) acc = acp::add_ordered(acc, V[w - s.vlo]);
        out[ow - s.ow0] = acc * srow[ow];
    }
}

void fw_direct_scalar(const ForwardPlan& P, const FwSeg& s, const FwStage1Args& a, const float* srow, float* out) {
    const int64_t es = elem_size(a.dt);
    for (int64_t ow = s.ow0; ow < s.ow1; ++ow) {
        float acc = 0.0f;
        for (int64_t w = P.aw.lo[ow]; w < P.aw.hi[ow]; ++w) {
            float v = 0.0f;
            for (int64_t h = a.h0; h < a.h1; ++h) v = acp::add_ordered(v, load_elem(a.in + (h * a.in_h + w * a.in_w) * es, a.dt));
            acc = acp::add_ordered(acc, v);
        }
        out[ow - s.ow0] = acc * srow[ow];
    }
}

void round_scalar(const float* src, uint16_t* dst, int64_t n, DType dt) {
    if (dt == DType::F16)
        for (int64_t i = 0; i < n; ++i) dst[i] = acp::float_to_half(src[i]);
    else
        for (int64_t i = 0; i < n; ++i) dst[i] = acp::float_to_bf16(src[i]);
}

}  // namespace avgpool2d
