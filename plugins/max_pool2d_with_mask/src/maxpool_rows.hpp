// Row conversions between tensor rows (FLOAT / FLOAT16 / BF16, any element stride) and FLOAT
// scratch rows, with the ONE rounding of aclnn_cpu/numeric.hpp. The AVX-512 forms (w stride 1)
// give the same bits as the scalar ones.
#ifndef MAX_POOL2D_WITH_MASK_MAXPOOL_ROWS_HPP_
#define MAX_POOL2D_WITH_MASK_MAXPOOL_ROWS_HPP_

#include <cstdint>

#include "aclnn_cpu/isa.hpp"
#include "maxpool_types.hpp"

namespace mpool {

using acp::cpu_has_avx512;
bool use_avx512(Isa isa);

inline int64_t elem_size(DType dt) { return dt == DType::F32 ? 4 : 2; }

// What a FLOAT value becomes when stored: rounded to dt, and for FLOAT computed as FLOAT16
// (atlas-training) rounded to FLOAT16 and widened back.
float round_value(float v, DType dt, bool fp16_compute);

// dst[i] = element i of the row (stride in elements), as FLOAT; with fp16_compute a FLOAT row is
// rounded to FLOAT16 on the way (atlas-training's cast of gradOutput).
void load_row(const char *src, int64_t stride, int64_t n, DType dt, bool fp16_compute, float *dst, bool avx);

// Non-temporal writing of a destination filled front to back in contiguous pieces (rows of a
// dense tensor): every whole 64-byte line goes out with one streaming store; only the lines at the
// ends of a contiguous run, shared with bytes that are not ours, get plain stores (mixing the two
// on one line is very slow). One per thread, on its stack; stream_finish() before the data is used.
struct LineStream {
    char *next = nullptr;   // the byte after the last one handed over
    char *line = nullptr;   // 64-byte aligned start of the pending partial line, or nullptr
    int64_t lo = 0, hi = 0; // its pending bytes [lo, hi)
    alignas(64) uint8_t buf[64];
};
void stream_finish(LineStream &ls);  // stores the pending bytes and orders the streaming stores

// The line stream fed from a stage the caller writes into (AVX-512 only): stage_stream_begin gives
// the stage address where the bytes for dst go (the pending partial line sits in front of it), the
// caller writes the next n bytes there, and stage_stream_end sends every whole line straight from
// the stage and keeps the partial last one pending - no byte copied but that one line. The stage:
// 64-byte aligned, room for 64 + n + 64 bytes.
uint8_t *stage_stream_begin(LineStream &ls, uint8_t *stage, char *dst);
void stage_stream_end(LineStream &ls, uint8_t *stage, int64_t n);

// Bytes already in dt form (n bytes at src) to dst: through the line stream when ls != nullptr
// (AVX-512 only), else copied.
void store_bytes(const uint8_t *src, int64_t n, char *dst, LineStream *ls);

// Row element i = round_value(src[i]) (src == nullptr: +0), stored with the element stride.
// ls != nullptr (AVX-512, stride 1 only): through the line stream; the bits never depend on it.
void store_row(const float *src, int64_t n, DType dt, bool fp16_compute, char *dst, int64_t stride, bool avx,
               LineStream *ls);
// The same, then src[0, n) = +0 (an accumulator row made ready for its next use in one pass).
void store_row_clear(float *src, int64_t n, DType dt, bool fp16_compute, char *dst, int64_t stride, bool avx,
                     LineStream *ls);

}  // namespace mpool

#endif  // MAX_POOL2D_WITH_MASK_MAXPOOL_ROWS_HPP_
