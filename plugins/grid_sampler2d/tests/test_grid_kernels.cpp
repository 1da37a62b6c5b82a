// White-box test of the GridSampler2DBackward kernel's two code paths: the scalar path (the only
// one on CPUs without AVX-512, and the DOUBLE path) and the AVX-512 path must both match the
// independent double reference, for every mode and padding, narrow and wide channel blocks
// (C = 1, 3, 5, 9, 16, 17, 33), one task per image and private accumulators (N = 1), FLOAT and
// FLOAT16 / BF16 operands. The scalar path runs the same shape-only partition: its results do not
// depend on the thread count either.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "aclnn_cpu/numeric.hpp"
#include "grid_backward.hpp"
#include "grid_reference.hpp"

namespace {

using gsamp::Elem;

struct Rng {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double lattice(int64_t k, double step) { return static_cast<double>(static_cast<int64_t>(next() % (2 * k + 1)) - k) / step; }
};

// A dense array of one element type holding exactly the given (representable) values.
struct Buf {
    Elem e;
    std::vector<uint8_t> bytes;
    Buf(Elem el, const std::vector<double> &v) : e(el), bytes(v.size() * gsamp::elem_bytes(el)) {
        for (size_t i = 0; i < v.size(); ++i) set(i, v[i]);
    }
    Buf(Elem el, size_t n) : e(el), bytes(n * gsamp::elem_bytes(el), 0xA5) {}
    void set(size_t i, double v) {
        const auto f = static_cast<float>(v);
        switch (e) {
            case Elem::F32: std::memcpy(&bytes[i * 4], &f, 4); break;
            case Elem::F64: std::memcpy(&bytes[i * 8], &v, 8); break;
            case Elem::F16: { const uint16_t h = acp::float_to_half(f); std::memcpy(&bytes[i * 2], &h, 2); break; }
            case Elem::BF16: { const uint16_t h = acp::float_to_bf16(f); std::memcpy(&bytes[i * 2], &h, 2); break; }
        }
    }
    double get(size_t i) const {
        switch (e) {
            case Elem::F32: { float f; std::memcpy(&f, &bytes[i * 4], 4); return f; }
            case Elem::F64: { double d; std::memcpy(&d, &bytes[i * 8], 8); return d; }
            case Elem::F16: { uint16_t h; std::memcpy(&h, &bytes[i * 2], 2); return acp::half_to_float(h); }
            default: { uint16_t h; std::memcpy(&h, &bytes[i * 2], 2); return acp::bf16_to_float(h); }
        }
    }
    std::vector<double> values() const {
        std::vector<double> v(bytes.size() / gsamp::elem_bytes(e));
        for (size_t i = 0; i < v.size(); ++i) v[i] = get(i);
        return v;
    }
};

// A 64-byte aligned workspace of all-ones bytes, a NaN in every float type: a kernel that reads
// scratch it did not write spreads them into its results.
struct NanScratch {
    std::vector<uint8_t> buf;
    uint8_t *p;
    explicit NanScratch(uint64_t bytes) : buf(bytes + 64, 0xFF) {
        p = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
    }
};

::testing::AssertionResult near(const std::vector<double> &got, const std::vector<double> &ref, double rel) {
    double mx = 0;
    for (double r : ref) mx = std::max(mx, std::fabs(r));
    for (size_t i = 0; i < ref.size(); ++i)
        if (!(std::fabs(got[i] - ref[i]) <= rel * (mx + std::fabs(ref[i]))))
            return ::testing::AssertionFailure() << "[" << i << "] got " << got[i] << " want " << ref[i];
    return ::testing::AssertionSuccess();
}

TEST(GridSampler2DKernel, ScalarAndAvx512PathsMatchTheReference) {
    for (int64_t C : {1, 3, 5, 9, 16, 17, 33})
        for (int64_t N : {1, 5})
            for (int interp = 0; interp < 3; ++interp)
                for (int padding = 0; padding < 3; ++padding) {
                    const gref::Problem p{N, C, 9, 11, 33, 37, interp, padding, (C + padding) % 2 == 0};
                    Rng r{static_cast<uint64_t>(C * 131 + N * 7 + interp * 3 + padding)};
                    std::vector<double> go(static_cast<size_t>(p.outputCount())), in(static_cast<size_t>(p.inputCount())),
                        grid(static_cast<size_t>(p.gridCount()));
                    for (auto &v : go) v = r.lattice(256, 64);
                    for (auto &v : in) v = r.lattice(256, 64);
                    for (auto &v : grid) v = r.lattice(80, 64);  // [-1.25, 1.25], exact in BF16
                    const auto ref = gref::backward(p, go, in, grid);
                    const gsamp::Geometry g{p.N, p.C, p.H, p.W, p.Ho, p.Wo, static_cast<gsamp::Interp>(interp),
                                            static_cast<gsamp::Padding>(padding), p.align};
                    for (Elem e : {Elem::F32, Elem::F16, Elem::BF16, Elem::F64})
                        for (gsamp::Isa isa : {gsamp::Isa::Scalar, gsamp::Isa::Auto}) {
                            const bool f64 = e == Elem::F64;
                            gsamp::BackwardKernel k(g, {e, e, e, e, e}, true, true, f64);
                            k.set_isa(isa);
                            Buf bgo(e, go), bin(e, in), bgrid(e, grid), big(e, in.size()), bgg(e, grid.size());
                            const NanScratch ws(k.scratch_bytes());
                            uint8_t *wsp = ws.p;
                            k.run({bgo.bytes.data(), bin.bytes.data(), bgrid.bytes.data(), big.bytes.data(), bgg.bytes.data(), wsp});
                            const double rel = e == Elem::F32 ? 1e-5 : e == Elem::F64 ? 1e-12 : e == Elem::F16 ? 1e-3 : 8e-3;
                            EXPECT_TRUE(near(big.values(), ref.input, rel))
                                << "inputGrad C" << C << " N" << N << " mode " << interp << " pad " << padding << " elem "
                                << static_cast<int>(e) << " isa " << static_cast<int>(isa);
                            EXPECT_TRUE(near(bgg.values(), ref.grid, rel))
                                << "gridGrad C" << C << " N" << N << " mode " << interp << " pad " << padding << " elem "
                                << static_cast<int>(e) << " isa " << static_cast<int>(isa);
                        }
                }
}

// The image-warp pattern the narrow tiles are tuned for: neighbouring samples share taps (the
// identity plus a smooth flow, some samples beyond the border, where border padding clips bicubic
// taps onto each other and the rows path must step aside). Both paths must match the reference,
// and the AVX-512 path gives the same bytes on a second run. C = 20: a narrow block after a full one.
TEST(GridSampler2DKernel, NarrowSmoothGridMatchesTheReference) {
    for (int interp : {0, 2})
    for (int64_t C : {2, 3, 4, 20})
        for (int padding = 0; padding < 2; ++padding) {
            const gref::Problem p{2, C, 13, 29, 13, 29, interp, padding, true};
            Rng r{static_cast<uint64_t>(C * 17 + padding + 5 * interp)};
            std::vector<double> go(static_cast<size_t>(p.outputCount())), in(static_cast<size_t>(p.inputCount())),
                grid(static_cast<size_t>(p.gridCount()));
            for (auto &v : go) v = r.lattice(256, 64);
            for (auto &v : in) v = r.lattice(256, 64);
            size_t k = 0;
            for (int64_t n = 0; n < p.N; ++n)
                for (int64_t y = 0; y < p.Ho; ++y)
                    for (int64_t x = 0; x < p.Wo; ++x) {  // multiples of 1/64: exact in every element type
                        const double fx = std::round(64 * 1.5 * std::sin(0.3 * static_cast<double>(y) + static_cast<double>(n))) / 64;
                        const double fy = std::round(64 * 1.2 * std::cos(0.2 * static_cast<double>(x))) / 64;
                        grid[k++] = std::round(64 * (2 * (static_cast<double>(x) + fx) / static_cast<double>(p.W - 1) - 1)) / 64;
                        grid[k++] = std::round(64 * (2 * (static_cast<double>(y) + fy) / static_cast<double>(p.H - 1) - 1)) / 64;
                    }
            const auto ref = gref::backward(p, go, in, grid);
            const gsamp::Geometry g{p.N, p.C, p.H, p.W, p.Ho, p.Wo, static_cast<gsamp::Interp>(interp),
                                    static_cast<gsamp::Padding>(padding), p.align};
            for (Elem e : {Elem::F32, Elem::F16}) {
                std::vector<double> scalar_ig, scalar_gg;  // the scalar path's results, for the vector path
                for (gsamp::Isa isa : {gsamp::Isa::Scalar, gsamp::Isa::Auto}) {
                    gsamp::BackwardKernel kern(g, {e, e, e, e, e}, true, true, false);
                    kern.set_isa(isa);
                    Buf bgo(e, go), bin(e, in), bgrid(e, grid);
                    std::vector<std::vector<uint8_t>> igs, ggs;
                    for (int run = 0; run < 2; ++run) {
                        Buf big(e, in.size()), bgg(e, grid.size());
                        const NanScratch ws(kern.scratch_bytes());
                        uint8_t *wsp = ws.p;
                        kern.run({bgo.bytes.data(), bin.bytes.data(), bgrid.bytes.data(), big.bytes.data(), bgg.bytes.data(), wsp});
                        const double rel = e == Elem::F32 ? 1e-5 : 1e-3;
                        EXPECT_TRUE(near(big.values(), ref.input, rel)) << "inputGrad mode " << interp << " C" << C << " pad "
                                                                        << padding << " isa " << static_cast<int>(isa);
                        EXPECT_TRUE(near(bgg.values(), ref.grid, rel)) << "gridGrad mode " << interp << " C" << C << " pad "
                                                                       << padding << " isa " << static_cast<int>(isa);
                        igs.push_back(big.bytes);
                        ggs.push_back(bgg.bytes);
                        if (isa == gsamp::Isa::Scalar) {
                            scalar_ig = big.values();
                            scalar_gg = bgg.values();
                        } else {  // the vector path against the scalar one directly (rounding-level differences)
                            EXPECT_TRUE(near(big.values(), scalar_ig, rel)) << "inputGrad vs scalar, mode " << interp << " C" << C;
                            EXPECT_TRUE(near(bgg.values(), scalar_gg, rel)) << "gridGrad vs scalar, mode " << interp << " C" << C;
                        }
                    }
                    EXPECT_EQ(igs[0], igs[1]);
                    EXPECT_EQ(ggs[0], ggs[1]);
                }
            }
        }
}

// The one-task-per-image path streams each image in bands of output pixels, transposing input rows
// and finishing inputGrad rows around each band from the rows its grid can touch. Those spans
// decide only when the per-element phases run, never what is added: any band size gives the bytes
// of one band, for smooth grids (rows finished early), scattered ones, NaN / inf / huge values in
// some bands (every row), bands wholly above or below the plane (border padding clips them onto
// its edge rows, and a tap one row inside is read with weight 0), one-row planes, every mode and
// padding, FLOAT, FLOAT16 and DOUBLE. The workspace starts as NaNs: a row read before it was
// transposed would spread one into the results.
TEST(GridSampler2DKernel, BandsNeverChangeTheBits) {
    struct Shape {
        int64_t C, H, W, Ho, Wo;
    };
    for (const Shape sh : {Shape{3, 23, 17, 21, 19}, Shape{20, 12, 9, 14, 10}, Shape{2, 1, 13, 3, 11}})
        for (int interp = 0; interp < 3; ++interp)
            for (int padding = 0; padding < 3; ++padding)
                for (int kind = 0; kind < 4; ++kind) {  // smooth, scattered, smooth with non-finite values, off the plane
                    const gref::Problem p{2, sh.C, sh.H, sh.W, sh.Ho, sh.Wo, interp, padding, (interp + kind) % 2 == 0};
                    Rng r{static_cast<uint64_t>(sh.C * 1000 + interp * 100 + padding * 10 + kind)};
                    std::vector<double> go(static_cast<size_t>(p.outputCount())), in(static_cast<size_t>(p.inputCount())),
                        grid(static_cast<size_t>(p.gridCount()));
                    for (auto &v : go) v = r.lattice(256, 64);
                    for (auto &v : in) v = r.lattice(256, 64);
                    size_t k = 0;
                    for (int64_t n = 0; n < p.N; ++n)
                        for (int64_t y = 0; y < p.Ho; ++y)
                            for (int64_t x = 0; x < p.Wo; ++x, k += 2) {
                                if (kind == 1) {
                                    grid[k] = r.lattice(80, 64);
                                    grid[k + 1] = r.lattice(80, 64);
                                    continue;
                                }
                                if (kind == 3) {  // image 0 above the plane, image 1 below it; x anywhere
                                    grid[k] = r.lattice(80, 64);
                                    grid[k + 1] = (n == 0 ? -1.0 : 1.0) * (1.25 + static_cast<double>(r.next() % 64) / 32);
                                    continue;
                                }
                                grid[k] = 2.0 * static_cast<double>(x) / static_cast<double>(p.Wo) - 1 + r.lattice(4, 64);
                                grid[k + 1] = 2.0 * static_cast<double>(y) / static_cast<double>(p.Ho) - 1 + r.lattice(4, 64);
                            }
                    if (kind == 2) {  // y values (odd indices) in bands early, middle and late
                        grid[(grid.size() / 7) | 1] = std::nan("");
                        grid[(grid.size() / 3) | 1] = INFINITY;
                        grid[(grid.size() / 2) | 1] = -3.0e38;
                        grid[grid.size() - 1] = 3.0e38;
                    }
                    const gsamp::Geometry g{p.N, p.C, p.H, p.W, p.Ho, p.Wo, static_cast<gsamp::Interp>(interp),
                                            static_cast<gsamp::Padding>(padding), p.align};
                    for (Elem e : {Elem::F32, Elem::F16, Elem::F64}) {
                        Buf bgo(e, go), bin(e, in), bgrid(e, grid);
                        std::vector<uint8_t> ig0, gg0;
                        for (int64_t band : {int64_t{1 << 20}, int64_t{1}, int64_t{7}, int64_t{16}, int64_t{50}}) {
                            gsamp::BackwardKernel kern(g, {e, e, e, e, e}, true, true, e == Elem::F64);
                            kern.set_band_pixels(band);
                            Buf big(e, in.size()), bgg(e, grid.size());
                            const NanScratch ws(kern.scratch_bytes());
                            uint8_t *wsp = ws.p;
                            kern.run({bgo.bytes.data(), bin.bytes.data(), bgrid.bytes.data(), big.bytes.data(), bgg.bytes.data(), wsp});
                            if (ig0.empty()) {
                                ig0 = big.bytes;
                                gg0 = bgg.bytes;
                                continue;
                            }
                            EXPECT_EQ(big.bytes, ig0) << "inputGrad band " << band << " C" << sh.C << " mode " << interp << " pad "
                                                      << padding << " kind " << kind << " elem " << static_cast<int>(e);
                            EXPECT_EQ(bgg.bytes, gg0) << "gridGrad band " << band << " C" << sh.C << " mode " << interp << " pad "
                                                      << padding << " kind " << kind << " elem " << static_cast<int>(e);
                        }
                        if (kind != 2) {  // and the single-band result is right
                            const auto ref = gref::backward(p, bgo.values(), bin.values(), bgrid.values());  // as stored
                            const double rel = e == Elem::F32 ? 1e-5 : e == Elem::F64 ? 1e-12 : 1e-3;
                            Buf big(e, ig0.size() / gsamp::elem_bytes(e)), bgg(e, gg0.size() / gsamp::elem_bytes(e));
                            big.bytes = ig0;
                            bgg.bytes = gg0;
                            EXPECT_TRUE(near(big.values(), ref.input, rel)) << "C" << sh.C << " mode " << interp << " pad " << padding;
                            EXPECT_TRUE(near(bgg.values(), ref.grid, rel)) << "C" << sh.C << " mode " << interp << " pad " << padding;
                        }
                    }
                }
}

}  // namespace
