// White-box test of the small-Cin 3x3 kernels (small_cin.cpp, in the plugin's kernel archive): the
// two ways they meet memory (SmallCinPass::set_prefetch: one-row gradInput bands with the next band
// fetched into L1 and gradWeight fetching its next co-block, as on an Intel Xeon; or two-row bands
// and the hardware prefetchers alone, as on AMD Zen) give the same bytes, and both the reference's
// exact values on integer data. The public-API tests (test_small_cin.cpp) run only the way this CPU
// takes. Shapes: row tails (17, 100 columns), a plane of one row, Cout not a multiple of 3, Cin 1-4,
// several bands and parts per image, FLOAT and BF16; 1 and 3 threads.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <cstring>
#include <string>
#include <vector>

#include "acltest.hpp"
#include "aclnn_cpu/isa.hpp"
#include "conv_reference.hpp"
#include "dw_kernel_util.hpp"
#include "small_cin.hpp"

namespace {

using conv::Dt;
using conv::Geometry;
using conv::SmallCinPass;
using namespace dwtest;

struct Case {
    int64_t N, C, K, H, W;
};

const Case kCases[] = {{2, 3, 7, 5, 17}, {1, 1, 5, 1, 100}, {3, 2, 16, 9, 33}, {2, 4, 5, 6, 48}, {8, 3, 4, 40, 20}};

Geometry geometryOf(const Case &c) {
    Geometry g;
    g.N = c.N, g.IC = c.C, g.OC = c.K;
    g.src = {c.H, c.W, 1};
    g.dst = g.src;
    g.src_used = g.src;
    g.k = {3, 3, 1};
    g.pad_l = {1, 1, 0};
    g.pad_r = {1, 1, 0};
    return g;
}

cref::Conv refConv(const Case &c) {
    cref::Conv r;
    r.sd = 2, r.N = c.N, r.Cin = c.C, r.Cout = c.K;
    r.in = {c.H, c.W, 1};
    r.k = {3, 3, 1};
    r.pl = {1, 1, 0};
    r.pr = {1, 1, 0};
    return r;
}

struct Result {
    std::vector<uint8_t> dx, dw;  // FLOAT results as bytes
};

// Both gradients with the memory tuning `prefetch`, on `threads` threads, scratch full of NaN bytes.
Result run(const Case &c, Dt dt, const Operand &dy, const Operand &x, const Operand &w, bool prefetch, int threads) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));
    SmallCinPass pass(geometryOf(c), dt, threads);
    pass.set_prefetch(prefetch);
    EXPECT_EQ(pass.prefetch(), prefetch);
    Result r;
    r.dx.assign(x.value.size() * 4, kCanary);
    r.dw.assign(w.value.size() * 4, kCanary);
    std::vector<uint8_t> scratch(pass.scratch_bytes(false), 0xff);
    pass.run_input(dy.bytes.data(), w.bytes.data(), reinterpret_cast<float *>(r.dx.data()), scratch.data());
    scratch.assign(pass.scratch_bytes(true), 0xff);
    pass.run_weight(dy.bytes.data(), x.bytes.data(), reinterpret_cast<float *>(r.dw.data()), scratch.data());
    return r;
}

TEST(SmallCinKernels, BothMemoryTuningsGiveTheSameBytes) {
    if (!acp::cpu_has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU: the plan never takes the small-Cin kernels";
    uint64_t seed = 7;
    for (const Case &c : kCases)
        for (const Dt dt : {Dt::F32, Dt::BF16}) {
            const std::string tag = "N" + std::to_string(c.N) + " C" + std::to_string(c.C) + " K" + std::to_string(c.K) + " " +
                                    std::to_string(c.H) + "x" + std::to_string(c.W) + (dt == Dt::F32 ? " FLOAT" : " BF16");
            for (const bool integers : {true, false}) {
                acltest::Rng rng(++seed);
                const Operand dy = makeOperand(c.N * c.K * c.H * c.W, dt, rng, integers);
                const Operand x = makeOperand(c.N * c.C * c.H * c.W, dt, rng, integers);
                const Operand w = makeOperand(c.K * c.C * 9, dt, rng, integers);
                const Result off = run(c, dt, dy, x, w, false, 3);
                const Result on = run(c, dt, dy, x, w, true, 3);
                const Result on1 = run(c, dt, dy, x, w, true, 1);
                EXPECT_EQ(on.dx, off.dx) << tag << " gradInput";
                EXPECT_EQ(on.dw, off.dw) << tag << " gradWeight";
                EXPECT_EQ(on1.dx, on.dx) << tag << " gradInput, 1 thread";
                EXPECT_EQ(on1.dw, on.dw) << tag << " gradWeight, 1 thread";
                const cref::Grads ref = cref::backward(refConv(c), dy.value, x.value, w.value);
                EXPECT_TRUE(matches(floats(on.dx, false), ref.gradInput, integers, false, "gradInput")) << tag;
                EXPECT_TRUE(matches(floats(on.dw, false), ref.gradWeight, integers, false, "gradWeight")) << tag;
            }
        }
}

}  // namespace
