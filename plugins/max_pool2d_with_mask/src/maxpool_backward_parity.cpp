// MaxPool2dWithMaskBackward, the parity path (contract of run_plane_parity in
// maxpool_backward_paths.hpp; the kernel's overview in maxpool_backward.cpp).
//
// At column stride 2 the gradInput columns split by parity: with 16 outputs l = 0 .. 15 of a block
// (ow = ow0 + l), the even column 2 * ow gets kernel column kw 0 (k2) or 1 (k3) of output ow only,
// the odd column 2 * ow + 1 gets kw 1 (k2), or kw 2 of ow and kw 0 of ow + 1 (k3). So a block's 32
// columns of one window row are two 16-lane vectors, each lane one or two masked adds of the
// gradOutput value (or of its neighbour's) where that output's kernel position matches - no
// scatter, no permute until the two halves are interleaved as they are stored. The rows split the
// same way: k2 window rows 2 oh and 2 oh + 1 and the k3 centre row 2 oh get contributions of output
// row oh only and are finished at once; k3's last window row 2 oh + 1 waits in a FLOAT ring row (its
// even and odd halves) for the first window row of output row oh + 1. Finished rows are converted
// into a stage of dt bytes and stored from there whole (streamed when large).
// k3 s2 p0 (GoogLeNet's and Inception's pools, often in ceil mode) is the mirror image (P0): the
// windows start a column and a row later, so the even column 2 * ow gets kw 2 of ow - 1 and then
// kw 0 of ow, the odd column kw 1 of ow only; window rows 2 oh (after the ring's) and 2 oh + 1 are
// finished at once and 2 oh + 2 waits in the ring. Measured (Zen 5, 1 thread, 16 planes of 57x57 in
// L2, FLOAT with the bit mask): 707 ns a plane against 1799 on the ring path; in the bench
// (2 threads, 96x192x57x57 FLOAT, int32 masks) 7.1-7.4 ms against 10.4-10.8. Rows of fewer than
// 16 outputs keep the small-plane path where it applies (see the plan).
//
// The same bits as the other paths: every sum starts at +0 (a masked add on zeros: lanes without a
// contribution stay +0, a lane with one gets 0 + g) and takes its contributions in ascending output
// order (ring row first, then output ow before ow + 1). Several bits of one output (bit masks not
// from our forward) route to distinct elements, so they need nothing special; bits into the padding
// land in rows that are skipped or lanes that are never stored (the kw 0 of ow 0 at p1 is in no
// lane; at p0, lane 0 of a row's first block has no left neighbour).
//
// Measured (Zen 4, 1 thread, 64 planes of 112x112 in L2/L3, k3 s2 p1, plain stores), per plane:
// FLOAT 2.3 us, FLOAT16 2.3, BF16 2.3, FLOAT16 bit mask 2.2, FLOAT computed as FLOAT16 with the bit
// mask 3.0. Tried and dropped (no gain or slower): each block's neighbour values shifted out of the
// next block's (valignd, one conversion less but a loop-carried value), k2's kernel-position
// offsets from the plan's table (k3's come from there: -8 to -16 %), the bit-mask prefetch one plane further ahead (then
// compiled away, see prefetch_next_bits: not retried),
// one check of the bad lanes per row instead of per block (+4 %), vcvtne2ps2bf16 for the BF16 rows
// rounded in integers (a guard per vector costs what it saves; the Out::Bf16Cpu rows, guarded once
// per plane, use it), rows stored one output row late (store forwarding was not the cost of 16-bit rows
// streamed through the stage: the stage's copy and its partial lines were - the blocks now stream
// whole lines themselves, see stream_half_lines). Zen 5 (session 18, one thread, 8 planes in L2): BF16 and
// FLOAT16 1.43 us, FLOAT 1.54, FLOAT computed as FLOAT16 with the bit mask 2.1; bit-mask words read
// by kmovw straight from memory when a row starts on a byte: -3 %, not kept.
// BF16 k3 (session 20): the check that a plane's sums stay normal moved from a scan of gradOutput
// before the plane into the blocks (one minimum per block, min_magnitude_less1): full size, 2
// threads, 895 -> 809 ns a plane; classifying each sum with vfpclassps instead was 8 % slower in L2.
// Session 23 (Zen 5, one thread, 8 planes in L2): the -1 ("no maximum") test of the int32 lanes
// taken out of every block (only lanes that fail the window test are tested for it): FLOAT16 /
// BF16 k3 -2.3 %, FLOAT k3 -8 %, FLOAT16 k2 -9 %. FLOAT computed as FLOAT16 rounded in integers
// (valid but for overflow) instead of vcvtps2ph + vcvtph2ps: -1 %, not kept.
// Session 41: bit masks tested in vector lanes (BitsBlock) instead of shifted in a general register
// and moved by kmovw: FLOAT computed as FLOAT16, k3, one thread, 8 planes in L2, 2.14 -> 1.90 us a
// plane (constant masks, no decode at all: 1.60). Each output row's bitmaps made once, then one
// kmovw from memory per mask: 2.6 us (the row's build is a phase of its own, and a kmovw still
// costs about a cycle).

#include "maxpool_backward_paths.hpp"

#include "aclnn_cpu/numeric_avx512.hpp"

namespace mpool {

#if ACP_X86
namespace {

// The kernel-position masks of a block of 16 outputs ow0 + l, made where they are used (AVX-512 has
// 8 mask registers): m(k, kw) for position k = kh * KW + kw of output ow0 + l, m1(kh) for position
// (kh, 0) of the neighbour ow0 + l + 1 (k3 only).
//
// Int32 masks: an index routes to position (kh, kw) iff it equals that position's flat index
// (hs + kh) * W + 2 * ow - pW + kw, the position inside the input: d = index - (flat index of
// (0, 0)) == kh * W + kw, one compare per position, no division. Any index that is neither -1 nor
// one of its window's positions inside the input is bad (the neighbour's are checked in its own
// lane): checked on its own, not from the compares of the additions, as d - lo - kh * W < n for some
// window row kh inside the input, with lo / n the first kernel column inside the input and their
// count - three subtractions and unsigned minima, two compares.
struct Int32Block {
    __m512i d, d1, dp;   // dp (k3 p0): the left neighbour's index - the flat index of (0, 0)
    const __m512i *off;  // kh * W + kw per position k
    __m512i v;  // the indices
    __mmask16 live, live1, livep, col_in[3], bad;
    MPOOL_AI __mmask16 bad_lanes() const { return bad ? _mm512_mask_cmpneq_epi32_mask(bad, v, _mm512_set1_epi32(-1)) : 0; }
    MPOOL_AI __mmask16 m(int k, int kw) const { return _mm512_mask_cmpeq_epi32_mask(col_in[kw], d, off[k]); }
    MPOOL_AI __mmask16 m1(int kh) { return _mm512_mask_cmpeq_epi32_mask(live1, d1, off[kh * 3 + 2]); }
    // k3 p0: position (kh, 2) of the left neighbour ow0 + l - 1, which is (kh, 0) of this lane's window
    MPOOL_AI __mmask16 mp(int kh) const { return _mm512_mask_cmpeq_epi32_mask(livep, dp, off[kh * 3]); }
};

// FULL: outputs ow0 .. ow0 + 16 exist and every kernel column of the block lies inside the input;
// FIRST (with FULL): the same but for the k3 block at column 0, whose lane 0 has its kernel column 0
// in the left padding (column -1) - the one lane the edge code would otherwise be run for.
// COLS (without FULL): the last block of a row, fewer than 16 outputs, all of whose kernel columns
// lie inside the input (112 columns: outputs 48 to 55) - the column checks left out there too.
// a, b, c: window rows 0, 1, 2 lie inside the input.
// P0 (k3 s2 p0): the left neighbours' indices too (see parity_block).
template <bool K3, bool FULL, bool FIRST = false, bool COLS = FULL, bool P0 = false>
MPOOL_AI Int32Block int32_block(const Geometry &g, const uint8_t *idx, int64_t hs, int64_t ow0, const __m512i *off,
                                bool a, bool bb, bool c) {
    constexpr int KW = K3 ? 3 : 2;
    Int32Block b;
    b.off = off;
    b.live = FULL ? kAll : lanes16(g.Wo - ow0);
    b.live1 = FULL ? kAll : lanes16(g.Wo - ow0 - 1);
    const __m512i lane2 = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i col = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(2 * ow0 - g.pW)), lane2);
    const __m512i base = _mm512_add_epi32(col, _mm512_set1_epi32(static_cast<int32_t>(hs * g.W)));
    const __m512i v = _mm512_maskz_loadu_epi32(b.live, idx + ow0 * 4);
    b.d = _mm512_sub_epi32(v, base);
    if (K3) b.d1 = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(b.live1, idx + (ow0 + 1) * 4), base);
    // kernel columns inside the input (unsigned: negative ones fail too); only the edge blocks have others
    const __m512i vW = _mm512_set1_epi32(static_cast<int32_t>(g.W));
    for (int kw = 0; kw < KW; ++kw)
        b.col_in[kw] = COLS ? b.live : _mm512_mask_cmplt_epu32_mask(b.live, _mm512_add_epi32(col, _mm512_set1_epi32(kw)), vW);
    if (FIRST) b.col_in[0] = static_cast<__mmask16>(0xfffe);
    if constexpr (K3 && P0) {  // neighbours ow0 + l - 1 that exist, their kernel column 2 inside the input
        __mmask16 lp = FULL ? kAll : lanes16(g.Wo - ow0 + 1);
        if (ow0 == 0) lp &= static_cast<__mmask16>(0xfffe);
        if (!COLS) lp = _mm512_mask_cmplt_epu32_mask(lp, col, vW);
        b.livep = lp;
        b.dp = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(lp, idx + (ow0 - 1) * 4), base);
    }
    // the check: kernel columns [lo, lo + n) inside the input (FULL: all KW)
    __m512i lo = _mm512_setzero_si512(), n = _mm512_set1_epi32(KW);
    if (!COLS || FIRST) {
        lo = _mm512_maskz_max_epi32(kAll, lo, _mm512_sub_epi32(lo, col));
        const __m512i hi = _mm512_maskz_min_epi32(kAll, n, _mm512_sub_epi32(vW, col));
        n = _mm512_maskz_max_epi32(kAll, _mm512_sub_epi32(hi, lo), _mm512_setzero_si512());
    }
    const __m512i u = _mm512_sub_epi32(b.d, lo);
    __m512i t = a ? u : _mm512_set1_epi32(-1);
    if (bb) t = _mm512_maskz_min_epu32(kAll, t, _mm512_sub_epi32(u, vW));
    if (K3 && c) t = _mm512_maskz_min_epu32(kAll, t, _mm512_sub_epi32(u, _mm512_add_epi32(vW, vW)));
    // -1 ("no maximum") fails the test too; it is taken out of the rare failing lanes only (bad_lanes)
    b.bad = _mm512_mask_cmpge_epu32_mask(b.live, t, n);
    b.v = v;
    return b;
}

// Bit masks: output j's bit of kernel position k is bit j % 8 of byte j / 8 of the position's row.
// A block's 16 bits of a position (j = oh * Wo + ow0 + l) are one 32-bit broadcast of the row's
// bytes from (oh * Wo + ow0) / 8, tested lane by lane against bit sh + l (vptestmd): the mask goes
// straight into a mask register, as the int32 blocks' compares do. (Through a general register -
// an 8-byte read, a shift, kmovw - the twelve masks of a k3 block cost a quarter of the
// atlas-training plane.) sh = (oh * Wo) % 8 is the row's (ow0 is a multiple of 16), so the lane
// bits are made once per row (BitLanes). The 4-byte reads stay inside the row (see bits48).
struct BitLanes {
    __m512i own;   // lane l: 1 << (sh + l), output ow0 + l
    __m512i next;  // 1 << (sh + l + 1): the neighbour ow0 + l + 1 (k3 p1)
    __m512i prev;  // 1 << (sh + l + 7), read a byte early: the neighbour ow0 + l - 1 (k3 p0)
    __m512i prev0; // blocks at byte 0 of the row (nothing before it): 1 << (sh + l - 1)
};

MPOOL_AI BitLanes bit_lanes(int64_t j) {
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i one = _mm512_set1_epi32(1), at = _mm512_add_epi32(lane, _mm512_set1_epi32(static_cast<int32_t>(j & 7)));
    BitLanes b;
    b.own = _mm512_maskz_sllv_epi32(kAll, one, at);
    b.next = _mm512_maskz_sllv_epi32(kAll, one, _mm512_add_epi32(at, one));
    b.prev = _mm512_maskz_sllv_epi32(kAll, one, _mm512_add_epi32(at, _mm512_set1_epi32(7)));
    // (lane 0 at sh 0: a shift by -1, beyond 31 as unsigned: zero; outside livep anyway)
    b.prev0 = _mm512_maskz_sllv_epi32(kAll, one, _mm512_sub_epi32(at, one));
    return b;
}

struct BitsBlock {
    const uint8_t *at;  // byte j / 8 of kernel position 0's row (j = oh * Wo + ow0)
    int64_t row_bytes;
    const BitLanes *bl;
    bool first;         // j / 8 == 0: no byte before it (P0's neighbours)
    __mmask16 live, live1, livep;
    MPOOL_AI __m512i word(int k, int64_t back) const {
        int32_t v;
        std::memcpy(&v, at + k * row_bytes - back, 4);
        return _mm512_set1_epi32(v);
    }
    MPOOL_AI __mmask16 m(int k, int) const { return _mm512_mask_test_epi32_mask(live, word(k, 0), bl->own); }
    MPOOL_AI __mmask16 m1(int kh) const { return _mm512_mask_test_epi32_mask(live1, word(kh * 3, 0), bl->next); }
    MPOOL_AI __mmask16 mp(int kh) const {
        return first ? _mm512_mask_test_epi32_mask(livep, word(kh * 3 + 2, 0), bl->prev0)
                     : _mm512_mask_test_epi32_mask(livep, word(kh * 3 + 2, 1), bl->prev);
    }
};

// Outputs j .. j + 15 (ow0 .. ow0 + 15 of their row), `left` of them in the row.
template <bool FULL>
MPOOL_AI BitsBlock bits_block(const uint8_t *mask_plane, int64_t row_bytes, const BitLanes &bl, int64_t j, int64_t left, int64_t ow0) {
    BitsBlock b;
    b.at = mask_plane + (j >> 3);
    b.row_bytes = row_bytes;
    b.bl = &bl;
    b.first = (j >> 3) == 0;
    b.live = FULL ? kAll : lanes16(left);
    b.live1 = FULL ? kAll : lanes16(left - 1);
    b.livep = (FULL ? kAll : lanes16(left + 1)) & (ow0 == 0 ? 0xfffeu : 0xffffu);
    return b;
}

// How put32 writes a finished row. Rows: plain (masked) stores into a row, gradInput's own or the
// stage's. Stream: gradInput's own rows, streamed - FLOAT rows of whole aligned 64-byte lines, or
// 16-bit rows as stream16_rows describes. Bf16Cpu: BF16 rounded by the CPU's vcvtne2ps2bf16, which
// reads subnormals as zero - the blocks note values that could make a subnormal sum, and such a
// plane is done again (see run_plane_parity_dt); Bf16CpuStream: that, streamed.
enum class Out { Rows, Stream, Bf16Cpu, Bf16CpuStream };
constexpr bool streams(Out o) { return o == Out::Stream || o == Out::Bf16CpuStream; }
constexpr bool cpu_bf16(Out o) { return o == Out::Bf16Cpu || o == Out::Bf16CpuStream; }

// Out::Bf16Cpu*: low = the unsigned lane minimum of low and |g| - 1 of gradOutput values g (as
// FLOAT bits; +-0 wraps to the largest value). The plane's sums stay normal - and the CPU's rounding
// rounds them as float_to_bf16 does - if every g is 0, not finite, or at least 2^-100 in magnitude
// (sums_stay_normal): then each g is a multiple of 2^-107 (its ulp), and so is every FLOAT partial
// sum - exact below 2^-83, rounded to a multiple of its own ulp (>= 2^-106) above - hence 0 or at
// least 2^-107, far above FLOAT's subnormals (< 2^-126). (Checked on the values, one minimum per
// block, rather than classifying each sum: that cost 8 % in L2.)
MPOOL_AI __m512i min_magnitude_less1(__m512i low, __m512 g) {
    const __m512i mag = _mm512_and_si512(_mm512_castps_si512(g), _mm512_set1_epi32(0x7fffffff));
    return _mm512_maskz_min_epu32(kAll, low, _mm512_sub_epi32(mag, _mm512_set1_epi32(1)));  // (GCC 12: maskz)
}
MPOOL_AI bool sums_stay_normal(__m512i low) {
    return _mm512_cmplt_epu32_mask(low, _mm512_set1_epi32((27 << 23) - 1)) == 0;  // biased exponent < 27: below 2^-100
}

// Streamed 16-bit rows (k3 s2 p1, see stream16_rows): 32 finished columns col0 .. col0 + 31 of a row
// (v, the row's last 16 when fewer are left) out as whole lines. A row starting on a line (every
// row when W % 32 == 0, the even rows else) streams each block as its line and keeps a last half
// block in `half`; a row starting half a line in (the odd rows when W % 32 == 16) streams the line
// ending in the block's first half - `half` (the previous block's second half, or for the row's
// first block the previous row's last half block) then those 16 columns - and keeps its second half.
MPOOL_AI void stream_half_lines(__m512i v, uint8_t *row, int64_t col0, int64_t W, uint8_t *half) {
    // (`half` holds the pending 32 bytes in its low half; GCC 12: maskz forms, nothing left undefined)
    uint8_t *p = row + col0 * 2;
    if (reinterpret_cast<uintptr_t>(p) % 64 == 0) {
        if (W - col0 >= 32) _mm512_stream_si512(reinterpret_cast<__m512i *>(p), v);
        else _mm512_store_si512(half, v);
        return;
    }
    const __m512i h = _mm512_load_si512(half);
    _mm512_stream_si512(reinterpret_cast<__m512i *>(p - 32), _mm512_maskz_shuffle_i64x2(__mmask8{0xff}, h, v, _MM_SHUFFLE(1, 0, 1, 0)));
    if (W - col0 > 16) _mm512_store_si512(half, _mm512_maskz_shuffle_i64x2(__mmask8{0xff}, v, v, _MM_SHUFFLE(3, 2, 3, 2)));
}

// 32 16-bit gradInput columns col0 .. col0 + 31 (v, interleaved) into a row (columns >= W are not
// written), as O says.
template <Out O, bool FULL>
MPOOL_AI void store32_16(__m512i v, uint8_t *row, int64_t col0, int64_t W, uint8_t *half) {
    if constexpr (streams(O)) {
        stream_half_lines(v, row, col0, W, half);
    } else {
        const int64_t left = FULL ? 32 : W - col0;
        const __mmask32 m32 = left >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint64_t{1} << left) - 1);
        _mm512_mask_storeu_epi16(reinterpret_cast<uint16_t *>(row) + col0, m32, v);
    }
}

// FLOAT16 columns from their even and odd halves (16 each), interleaved.
MPOOL_AI __m512i mix_halves(__m256i he, __m256i ho) {
    // (the mix reads the low halves only: the cast's upper halves are never read)
    const __m512i mix = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6,
                                         37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
    return _mm512_permutex2var_epi16(_mm512_castsi256_si512(he), mix, _mm512_castsi256_si512(ho));
}

// 32 gradInput columns col0 .. col0 + 31 from their even and odd halves, rounded as stored, into a
// row (columns >= W are not written), as O says. EXACT_E / EXACT_O: every lane of that half is +0 or
// 0 + g of one gradOutput value g already in the stored format (one contribution), so its rounding
// is the identity and is left out (BF16 keeps the high halves - 0 + g turned a signalling NaN
// quiet, as the rounding would; FLOAT computed as FLOAT16 is stored as it is).
template <DType DT, bool FP16, Out O, bool EXACT_E, bool EXACT_O, bool FULL>
MPOOL_AI void put32(__m512 e, __m512 o, uint8_t *row, int64_t col0, int64_t W, uint8_t *half) {
    if constexpr (DT != DType::F32) {
        __m512i v;
        if constexpr (DT == DType::BF16 && cpu_bf16(O)) {
            // both halves in one conversion (e's low, o's high), then interleaved by one single-source permute
            const __m512i mix = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                                 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
            v = _mm512_permutexvar_epi16(mix, acp::avx512::to_bf16_pair_no_subnormals(e, o));
        } else if constexpr (DT == DType::BF16) {
            const __m512i he = EXACT_E ? _mm512_castps_si512(e) : acp::avx512::to_bf16_high(e);
            const __m512i ho = EXACT_O ? _mm512_castps_si512(o) : acp::avx512::to_bf16_high(o);
            const __m512i high = _mm512_set_epi16(63, 31, 61, 29, 59, 27, 57, 25, 55, 23, 53, 21, 51, 19, 49, 17, 47, 15,
                                                  45, 13, 43, 11, 41, 9, 39, 7, 37, 5, 35, 3, 33, 1);
            v = _mm512_permutex2var_epi16(he, high, ho);
        } else {
            v = mix_halves(acp::avx512::to_half(e), acp::avx512::to_half(o));
        }
        store32_16<O, FULL>(v, row, col0, W, half);
    } else {
        if (FP16 && !EXACT_E) e = acp::avx512::round_fp16(e);
        if (FP16 && !EXACT_O) o = acp::avx512::round_fp16(o);
        const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
        const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
        const int64_t left = FULL ? 32 : W - col0;
        float *p = reinterpret_cast<float *>(row) + col0;
        (void)half;
        if constexpr (streams(O)) {  // gradInput's own row, whole aligned lines: a vector is all in or all out
            _mm512_stream_ps(p, _mm512_permutex2var_ps(e, lo, o));
            if (left > 16) _mm512_stream_ps(p + 16, _mm512_permutex2var_ps(e, hi, o));
        } else {
            _mm512_mask_storeu_ps(p, lanes16(left), _mm512_permutex2var_ps(e, lo, o));
            _mm512_mask_storeu_ps(p + 16, lanes16(left - 16), _mm512_permutex2var_ps(e, hi, o));
        }
    }
}

// gradOutput elements at .. at + 15 of a dense row in dt (lanes outside m: +0) as FLOAT, as load_row
// makes them (FLOAT computed as FLOAT16: rounded on the way).
template <DType DT, bool FP16>
MPOOL_AI __m512 load_g(const void *row, int64_t at, __mmask16 m) {
    if constexpr (DT == DType::F32) {
        const __m512 v = _mm512_maskz_loadu_ps(m, static_cast<const float *>(row) + at);
        return FP16 ? acp::avx512::round_fp16(v) : v;
    } else {
        const __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t *>(row) + at);
        if constexpr (DT == DType::F16) return _mm512_maskz_cvtph_ps(kAll, h);
        return acp::avx512::from_bf16(h);
    }
}

// The additions of one block (M: Int32Block or BitsBlock) into the stage rows and the ring.
// P0 (k3 s2 p0): mirrored - the even column 2 ow gets kw 0 of ow after kw 2 of its left neighbour
// ow - 1, the odd column 2 ow + 1 kw 1 of ow only.
template <DType DT, bool FP16, Out O, bool K3, bool ALL, bool FULL, bool P0, class M>
MPOOL_AI void parity_block(M &m, const void *grow, const Slot &s, uint8_t *rowA, uint8_t *rowB, int64_t ow0,
                           int64_t Wo, int64_t W, bool a, bool b, bool c, __m512i &tiny) {
    const int64_t col0 = 2 * ow0;
    const __m512 zero = _mm512_setzero_ps();
    // (FLOAT computed as FLOAT16: the row arrives rounded, see run_plane_parity_t)
    const __m512 gv = load_g<DT, false>(grow, ow0, FULL ? kAll : lanes16(Wo - ow0));
    // 0 + g once: a lane's first contribution is then a zero-masked move of it (same bits as a
    // zero-masked add on zeros, without a zeroed register per vector)
    const __m512 g0 = _mm512_add_ps(zero, gv);
    if constexpr (cpu_bf16(O)) tiny = min_magnitude_less1(tiny, gv);
    if constexpr (K3 && P0) {
        const __m512 gp = load_g<DT, false>(grow, ow0 - 1, m.livep), gp0 = _mm512_add_ps(zero, gp);
        if (ALL || a) {  // window row 0 = the ring's row: the neighbour's kw 2 then kw 0 to even, kw 1 to odd
            __m512 e = _mm512_loadu_ps(s.ringE + ow0), o = _mm512_loadu_ps(s.ringO + ow0);
            e = add_ordered(e, m.mp(0), gp);
            e = add_ordered(e, m.m(0, 0), gv);
            o = add_ordered(o, m.m(1, 1), gv);
            put32<DT, FP16, O, false, false, FULL>(e, o, rowA, col0, W, s.half);
        }
        if (ALL || b) {  // the centre row: odd columns from one output only
            __m512 e = _mm512_maskz_mov_ps(m.mp(1), gp0);
            e = add_ordered(e, m.m(3, 0), gv);
            put32<DT, FP16, O, false, true, FULL>(e, _mm512_maskz_mov_ps(m.m(4, 1), g0), rowB, col0, W, s.half);
        }
        if (ALL || c) {
            const __m512 e = _mm512_maskz_mov_ps(m.mp(2), gp0);
            _mm512_storeu_ps(s.ringE + ow0, add_ordered(e, m.m(6, 0), gv));
            _mm512_storeu_ps(s.ringO + ow0, _mm512_maskz_mov_ps(m.m(7, 1), g0));
        }
    } else if constexpr (K3) {
        const __m512 g1 = load_g<DT, false>(grow, ow0 + 1, FULL ? kAll : lanes16(Wo - ow0 - 1));
        if (ALL || a) {  // window row 0 = the ring's row: kw 1 to even, kw 2 then the neighbour's kw 0 to odd
            __m512 e = _mm512_loadu_ps(s.ringE + ow0), o = _mm512_loadu_ps(s.ringO + ow0);
            e = add_ordered(e, m.m(1, 1), gv);
            o = add_ordered(o, m.m(2, 2), gv);
            o = add_ordered(o, m.m1(0), g1);
            put32<DT, FP16, O, false, false, FULL>(e, o, rowA, col0, W, s.half);
        }
        if (ALL || b) {  // the centre row: even columns from one output only
            const __m512 e = _mm512_maskz_mov_ps(m.m(4, 1), g0);
            __m512 o = _mm512_maskz_mov_ps(m.m(5, 2), g0);
            o = add_ordered(o, m.m1(1), g1);
            put32<DT, FP16, O, true, false, FULL>(e, o, rowB, col0, W, s.half);
        }
        if (ALL || c) {
            __m512 o = _mm512_maskz_mov_ps(m.m(8, 2), g0);
            _mm512_storeu_ps(s.ringE + ow0, _mm512_maskz_mov_ps(m.m(7, 1), g0));
            _mm512_storeu_ps(s.ringO + ow0, add_ordered(o, m.m1(2), g1));
        }
    } else if constexpr (DT == DType::F16) {
        // disjoint windows, FLOAT16: every element is +0 or 0 + g of one g, so the 16 values 0 + g
        // are converted once and each half picks its lanes from them - the same bits as converting
        // each half (+0 converts to +0). One conversion a block instead of four: -6 % a 112x112
        // plane in L2, -5 % on 32x64x112x112 at 2 threads (session 35). Picking from gradOutput's
        // own bits, with -0 and signalling NaNs mended in integers, was 6-12 % slower than this.
        const __m256i gh = acp::avx512::to_half(g0);
        if (ALL || a)
            store32_16<O, FULL>(mix_halves(_mm256_maskz_mov_epi16(m.m(0, 0), gh), _mm256_maskz_mov_epi16(m.m(1, 1), gh)),
                                rowA, col0, W, s.half);
        if (ALL || b)
            store32_16<O, FULL>(mix_halves(_mm256_maskz_mov_epi16(m.m(2, 0), gh), _mm256_maskz_mov_epi16(m.m(3, 1), gh)),
                                rowB, col0, W, s.half);
    } else {  // disjoint windows: one contribution at most per element
        if (ALL || a)
            put32<DT, FP16, O, true, true, FULL>(_mm512_maskz_mov_ps(m.m(0, 0), g0), _mm512_maskz_mov_ps(m.m(1, 1), g0),
                                        rowA, col0, W, s.half);
        if (ALL || b)
            put32<DT, FP16, O, true, true, FULL>(_mm512_maskz_mov_ps(m.m(2, 0), g0), _mm512_maskz_mov_ps(m.m(3, 1), g0),
                                        rowB, col0, W, s.half);
    }
}

// Block ow0 of output row oh: its masks, its additions; the first bad int32 lane's column, or -1.
template <DType DT, bool FP16, Out O, bool K3, bool BITS, bool P0, bool ALL, bool FULL, bool FIRST = false, bool COLS = FULL>
MPOOL_AI int64_t parity_block_at(const Geometry &g, uint8_t *rowA, uint8_t *rowB, const void *grow, const uint8_t *mask_plane,
                                 int64_t row_bytes, const Slot &s, int64_t oh, int64_t ow0, const __m512i *off, bool a,
                                 bool b, bool c, __m512i &tiny, const BitLanes &bl) {
    const int64_t Wo = g.Wo;
    if constexpr (BITS) {
        BitsBlock m = bits_block<FULL>(mask_plane, row_bytes, bl, oh * Wo + ow0, Wo - ow0, ow0);
        parity_block<DT, FP16, O, K3, ALL, FULL, P0>(m, grow, s, rowA, rowB, ow0, Wo, g.W, a, b, c, tiny);
    } else {
        Int32Block m = int32_block<K3, FULL, FIRST, COLS, P0>(g, mask_plane + oh * Wo * 4, oh * g.sH - g.pH, ow0, off, ALL || a,
                                                        ALL || b, ALL || c);
        parity_block<DT, FP16, O, K3, ALL, FULL, P0>(m, grow, s, rowA, rowB, ow0, Wo, g.W, a, b, c, tiny);
        if (const __mmask16 bad = m.bad_lanes()) return ow0 + __builtin_ctz(bad);
    }
    return -1;
}

// One output row's window rows: finished rows into rowA (window row 0) and rowB (the next) - the
// gradInput rows themselves or the stage - and k3's last window row into the ring. a / b / c: which of them lie inside the input (ALL: all of
// them, the tests compiled away). Returns the first output column with a bad int32 index, or -1.
// Inlined into the plane's row loop: as a call per row it cost 5 % (Zen 5, 112x112 16-bit planes).
template <DType DT, bool FP16, Out O, bool K3, bool BITS, bool P0, bool ALL>
MPOOL_AI int64_t parity_row(const BackwardPlan &P, const void *grow, const uint8_t *mask_plane, int64_t row_bytes,
                                const Slot &slot, int64_t oh, bool a, bool b, bool c, uint8_t *rowA, uint8_t *rowB,
                                __m512i &tiny) {
    // Local copies: the blocks' vector stores may alias anything reached through a pointer, so
    // the plan's sizes and the slot's pointers would be reloaded (and their broadcasts redone) in
    // every block; copies whose address never escapes stay in registers.
    const Geometry g = P.g;
    const Slot s = slot;
    const int64_t Wo = g.Wo;
    constexpr int KW = K3 ? 3 : 2;
    // k2's four compare operands stay in registers; k3's nine come from the plan's table
    __m512i off2[4];
    if constexpr (!K3)
        for (int k = 0; k < 4; ++k) off2[k] = _mm512_set1_epi32(static_cast<int32_t>(k / 2 * g.W + k % 2));
    const __m512i *off = K3 ? reinterpret_cast<const __m512i *>(P.pos_off) : off2;
    BitLanes bl{};
    if constexpr (BITS) bl = bit_lanes(oh * Wo);
    // full blocks: the interior ones (first kernel column >= 0, outputs up to ow0 + 16 exist, the
    // last column < W); the others with tail masks - but k3's block 0 (kernel column 0 of output 0
    // at column -1) as a full one whose lane 0 has no column 0 (FIRST): at 112 columns half the
    // blocks would be edge blocks otherwise; and a last block of fewer outputs whose kernel columns
    // are all inside (COLS) without the column checks
    for (int64_t ow0 = 0; 2 * ow0 < g.W; ow0 += 16) {
        const bool inner = ow0 + 17 <= Wo && 2 * (ow0 + 16) <= g.W && 2 * (ow0 + 15) - g.pW + KW - 1 < g.W;
        const bool full = inner && 2 * ow0 - g.pW >= 0;
        const bool first = K3 && inner && ow0 == 0 && g.pW == 1;
        const bool cols = !BITS && !inner && 2 * ow0 - g.pW >= 0 && ow0 < Wo &&
                          2 * (std::min(ow0 + 16, Wo) - 1) - g.pW + KW - 1 < g.W;
        const int64_t bad =
            full    ? parity_block_at<DT, FP16, O, K3, BITS, P0, ALL, true>(g, rowA, rowB, grow, mask_plane, row_bytes, s, oh, ow0, off, a, b, c, tiny, bl)
            : first ? parity_block_at<DT, FP16, O, K3, BITS, P0, ALL, true, true>(g, rowA, rowB, grow, mask_plane, row_bytes, s, oh, ow0, off, a, b, c, tiny, bl)
            : cols  ? parity_block_at<DT, FP16, O, K3, BITS, P0, ALL, false, false, true>(g, rowA, rowB, grow, mask_plane, row_bytes, s, oh, ow0, off, a, b, c, tiny, bl)
                    : parity_block_at<DT, FP16, O, K3, BITS, P0, ALL, false>(g, rowA, rowB, grow, mask_plane, row_bytes, s, oh, ow0, off, a, b, c, tiny, bl);
        if (bad >= 0) return bad;
    }
    return -1;
}

// The k3 ring row, finished after the last output row, into row.
template <DType DT, bool FP16, Out O>
ACP_AVX512 void parity_ring_out(const BackwardPlan &P, const Slot &s, uint8_t *row) {
    for (int64_t ow0 = 0, col0 = 0; col0 < P.g.W; ow0 += 16, col0 += 32)
        put32<DT, FP16, O, false, false, false>(_mm512_loadu_ps(s.ringE + ow0), _mm512_loadu_ps(s.ringO + ow0), row, col0, P.g.W, s.half);
}

template <DType DT, bool FP16, Out O, bool K3, bool BITS, bool P0>
MPOOL_AI int64_t parity_row_any(const BackwardPlan &P, const void *grow, const uint8_t *mask_plane,
                                    int64_t row_bytes, const Slot &s, int64_t oh, bool a, bool b, bool c, uint8_t *rowA,
                                    uint8_t *rowB, __m512i &tiny) {
    if (a && b && (c || !K3)) return parity_row<DT, FP16, O, K3, BITS, P0, true>(P, grow, mask_plane, row_bytes, s, oh, a, b, c, rowA, rowB, tiny);
    return parity_row<DT, FP16, O, K3, BITS, P0, false>(P, grow, mask_plane, row_bytes, s, oh, a, b, c, rowA, rowB, tiny);
}

}  // namespace
#endif  // ACP_X86

// whole, once, in address order: window rows 2 oh - 1 (odd) and 2 oh, then the ring's last row
// (even H, Ho = H / 2). A half line is carried from the end of each even row into the next row.
bool stream16_rows(const Geometry &g, View4 giv) {
    return giv.w == 1 && giv.h == g.W && g.W % 16 == 0 && g.H % 2 == 0 && g.Ho * 2 == g.H;
}

#if ACP_X86
namespace {

// One plane on the parity path (AVX-512, gradInput rows dense): the contract of run_plane. The
// dtype, the window and the mask layout are template arguments here, so that the row loop calls
// its row kernel without a dispatch per row.
template <DType DT, bool FP16, Out O, bool K3, bool BITS, bool P0>
ACP_AVX512 int64_t run_plane_parity_t(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *mask_plane,
                                        char *gi, View4 giv, const Slot &s, LineStream *stream,
                                        const uint8_t *next_mask, bool *subnormal) {
    const Geometry &g = P.g;
    const int64_t es = elem_size(P.dt), row_bytes = mask_row_bytes(g.Ho, g.Wo), rb = g.W * es;
    constexpr bool k3 = K3;
    __m512i tiny = _mm512_set1_epi32(-1);  // Out::Bf16Cpu*: see min_magnitude_less1 (a local: kept in a register)
    int64_t stored = 0;  // gradInput rows [0, stored) are out
    // The blocks write gradInput's rows themselves with plain stores, and with streamed ones when
    // the rows are whole aligned 64-byte lines (FLOAT); otherwise the rows are finished in the
    // stage and leave it as whole lines through the line stream.
    const bool direct = !stream || streams(O);
    // Dense rows through the line stream: both finished rows of an output row are written into the
    // stage behind the pending partial line and leave it as whole streamed lines at once.
    const bool staged = !direct && giv.h == g.W;
    auto target = [&](int64_t row, uint8_t *stage) {
        return direct ? reinterpret_cast<uint8_t *>(gi + row * giv.h * es) : stage;
    };
    // row `row` (in `from`: the stage, or the row itself), after zeros for the rows before that no
    // window reached
    auto put = [&](int64_t row, const uint8_t *from) {
        for (; stored < row; ++stored) store_row(nullptr, g.W, P.dt, P.fp16, gi + stored * giv.h * es, 1, true, stream);
        char *dst = gi + row * giv.h * es;
        if (from != reinterpret_cast<const uint8_t *>(dst)) store_bytes(from, rb, dst, stream);
        stored = row + 1;
    };
    // p0: output row 0's first window row is the input's row 0, read through the ring - which the
    // previous plane left holding its last row (p1 reads it from output row 1 on, after writing it)
    if constexpr (P0) std::memset(s.ringE, 0, static_cast<size_t>(2 * P.dir_cols) * sizeof(float));
    for (int64_t oh = 0; oh < g.Ho; ++oh) {
        prefetch_next_bits(P, next_mask, oh);
        // the gradOutput row in its dtype, converted in the blocks (a strided row gathered first)
        const char *grow = go + oh * gov.h * es;
        if (gov.w != 1) {
            for (int64_t i = 0; i < g.Wo; ++i)
                std::memcpy(reinterpret_cast<char *>(s.grow) + i * es, grow + i * gov.w * es, static_cast<size_t>(es));
            grow = reinterpret_cast<const char *>(s.grow);
        }
        if constexpr (FP16) {  // FLOAT computed as FLOAT16: the row rounded once, not in each block's two loads
            for (int64_t i = 0; i < g.Wo; i += 16) {
                const __m512 v = _mm512_maskz_loadu_ps(lanes16(g.Wo - i), reinterpret_cast<const float *>(grow) + i);
                _mm512_storeu_ps(s.grow + i, acp::avx512::round_fp16(v));
            }
            grow = reinterpret_cast<const char *>(s.grow);
        }
        // window rows hs, hs + 1 (finished here), k3: hs + 2 (into the ring)
        const int64_t hs = oh * g.sH - g.pH;
        const bool a = hs >= 0 && hs < g.H, b = hs + 1 >= 0 && hs + 1 < g.H, c = k3 && hs + 2 < g.H;
        if (staged && (a || b)) {
            const int64_t first = a ? hs : hs + 1;
            for (; stored < first; ++stored) store_row(nullptr, g.W, P.dt, P.fp16, gi + stored * giv.h * es, 1, true, stream);
            uint8_t *rowA = stage_stream_begin(*stream, s.stage, gi + first * giv.h * es);
            uint8_t *rowB = a ? rowA + rb : rowA;
            const int64_t bad = parity_row_any<DT, FP16, O, K3, BITS, P0>(P, grow, mask_plane, row_bytes, s, oh, a, b, c, rowA, rowB, tiny);
            if (bad >= 0) return oh * g.Wo + bad;
            stage_stream_end(*stream, s.stage, (a + b) * rb);
            stored = first + a + b;
            continue;
        }
        uint8_t *rowA = a ? target(hs, s.stage) : s.stage;
        uint8_t *rowB = b ? target(hs + 1, s.stage + P.stage_row) : s.stage + P.stage_row;
        const int64_t bad = parity_row_any<DT, FP16, O, K3, BITS, P0>(P, grow, mask_plane, row_bytes, s, oh, a, b, c, rowA, rowB, tiny);
        if (bad >= 0) return oh * g.Wo + bad;
        if (a) put(hs, rowA);
        if (b) put(hs + 1, rowB);
    }
    const int64_t last = (g.Ho - 1) * g.sH - g.pH + 2;  // k3: the ring's row after the last output row
    if (k3 && last >= 0 && last < g.H) {
        uint8_t *row = target(last, s.stage);
        parity_ring_out<DT, FP16, O>(P, s, row);
        put(last, row);
    }
    for (; stored < g.H; ++stored) store_row(nullptr, g.W, P.dt, P.fp16, gi + stored * giv.h * es, 1, true, stream);
    if constexpr (cpu_bf16(O)) *subnormal = !sums_stay_normal(tiny);
    return -1;
}

template <DType DT, bool FP16, Out O>
ACP_AVX512 int64_t run_plane_parity_k(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *mask_plane,
                                        char *gi, View4 giv, const Slot &s, LineStream *stream,
                                        const uint8_t *next_mask, bool k3, bool bits, bool *subnormal) {
    const bool p0 = P.parity == BackwardPlan::Parity::K3S2P0;
    if (p0 && bits) return run_plane_parity_t<DT, FP16, O, true, true, true>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, subnormal);
    if (p0) return run_plane_parity_t<DT, FP16, O, true, false, true>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, subnormal);
    if (k3 && bits) return run_plane_parity_t<DT, FP16, O, true, true, false>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, subnormal);
    if (k3) return run_plane_parity_t<DT, FP16, O, true, false, false>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, subnormal);
    if (bits) return run_plane_parity_t<DT, FP16, O, false, true, false>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, subnormal);
    return run_plane_parity_t<DT, FP16, O, false, false, false>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, subnormal);
}

template <DType DT, bool FP16>
ACP_AVX512 int64_t run_plane_parity_dt(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *mask_plane,
                                         char *gi, View4 giv, const Slot &s, LineStream *stream,
                                         const uint8_t *next_mask) {
    const bool k3 = P.parity != BackwardPlan::Parity::K2S2, bits = P.layout == MaskLayout::Bits;
    bool subnormal = false;
    if constexpr (DT == DType::F32) {
        // streamed FLOAT rows that are whole aligned lines: the blocks stream them out themselves
        const bool nt = stream && P.g.W % 16 == 0 && (giv.h * 4) % 64 == 0 && reinterpret_cast<uintptr_t>(gi) % 64 == 0;
        if (nt) return run_plane_parity_k<DT, FP16, Out::Stream>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, k3, bits, &subnormal);
    }
    // streamed 16-bit k3 rows: the blocks stream them out themselves (stream16_rows)
    const bool nt16 = DT != DType::F32 && stream && k3 && stream16_rows(P.g, giv) && reinterpret_cast<uintptr_t>(gi) % 64 == 0;
    if constexpr (DT == DType::BF16) {
        // k3's BF16 sums rounded by the CPU, which reads subnormals as zero: the blocks note values
        // that could make a subnormal sum (min_magnitude_less1), and such a plane is done again,
        // rounded in integers. Only where gradInput's own rows are written - not through the line
        // stream, which cannot take a plane back. (k2's sums are single values: no rounding.)
        if (k3 && acp::avx512::kCpuConvertsBf16 && (!stream || nt16)) {
            const int64_t bad = nt16 ? run_plane_parity_k<DT, FP16, Out::Bf16CpuStream>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, k3, bits, &subnormal)
                                     : run_plane_parity_k<DT, FP16, Out::Bf16Cpu>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, k3, bits, &subnormal);
            if (bad >= 0 || !subnormal) return bad;
        }
    }
    if constexpr (DT != DType::F32)
        if (nt16) return run_plane_parity_k<DT, FP16, Out::Stream>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, k3, bits, &subnormal);
    return run_plane_parity_k<DT, FP16, Out::Rows>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask, k3, bits, &subnormal);
}
}  // namespace

ACP_AVX512 int64_t run_plane_parity(const BackwardPlan &P, const char *go, View4 gov, const uint8_t *mask_plane,
                                      char *gi, View4 giv, const Slot &s, LineStream *stream,
                                      const uint8_t *next_mask) {
    if (P.dt == DType::F16) return run_plane_parity_dt<DType::F16, false>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask);
    if (P.dt == DType::BF16) return run_plane_parity_dt<DType::BF16, false>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask);
    if (P.fp16) return run_plane_parity_dt<DType::F32, true>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask);
    return run_plane_parity_dt<DType::F32, false>(P, go, gov, mask_plane, gi, giv, s, stream, next_mask);
}
#endif  // ACP_X86

}  // namespace mpool
