// White-box test of blocked_store (compiled into this test from the plugin's sources): the stores
// of oneDNN's blocked FLOAT layouts into dense FLOAT / FLOAT16 / BF16 arrays. The expected bytes come
// from oneDNN's own reorder of the same buffer to the plain layout (so our reading of the layout is
// checked against oneDNN's), then numeric.hpp's scalar rounding element by element. Random float bit
// patterns (NaN, infinities, subnormals, rounding ties) so that every rounding branch is exercised;
// channel tails off 16 (ic17/oc17, 35, 5), 1-D, 2-D and 3-D, both tile orders, a channel slice
// written into wider images, the weights by ranges of output blocks; nothing outside is written.
// And the way in: dense FLOAT / BF16 operands (or a channel slice of them) into the blocked layout.
// The AVX-512 and the scalar spellings both; without AVX-512 only the scalar one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "acltest.hpp"
#include "aclnn_cpu/numeric.hpp"
#include "blocked_store.hpp"
#include "cpu.hpp"
#include "dnnl_common.hpp"

namespace {

using conv::OutDt;
using Md = dnnl::memory::desc;
using Tag = dnnl::memory::format_tag;
constexpr uint8_t kCanary = 0xA5;

dnnl::engine &cpu() {
    static dnnl::engine e(dnnl::engine::kind::cpu, 0);
    return e;
}

// A buffer of the blocked layout filled with random float bits (pads included), and oneDNN's plain
// FLOAT copy of it.
struct Blocked {
    std::vector<float> blk, plain;
};
Blocked makeBlocked(const dnnl::memory::dims &d, Tag blocked, Tag plain, uint64_t seed) {
    const Md bmd(d, dnnl::memory::data_type::f32, blocked), pmd(d, dnnl::memory::data_type::f32, plain);
    Blocked b;
    b.blk.resize(bmd.get_size() / 4);
    b.plain.resize(pmd.get_size() / 4);
    acltest::Rng rng(seed);
    for (float &f : b.blk) {
        const auto bits = static_cast<uint32_t>(rng.next());
        std::memcpy(&f, &bits, 4);
    }
    dnnl::memory bm(bmd, cpu(), b.blk.data()), pm(pmd, cpu(), b.plain.data());
    dnnl::stream st(cpu());
    dnnl::reorder(bm, pm).execute(st, bm, pm);
    st.wait();
    return b;
}

// Dense strides of dims d inside a tensor whose dimension 1 holds `all` >= d[1] channels (a slice).
dnnl::memory::dims sliceStrides(const dnnl::memory::dims &d, int64_t all) {
    dnnl::memory::dims strides(d.size());
    int64_t step = 1;
    for (size_t i = d.size(); i-- > 2;) {
        strides[i] = step;
        step *= d[i];
    }
    strides[1] = step;
    strides[0] = all * step;
    return strides;
}

// Random bytes: every bit pattern, NaN, infinity, subnormal and tie included.
void fillRandom(std::vector<uint8_t> &bytes, uint64_t seed) {
    acltest::Rng rng(seed);
    for (uint8_t &b : bytes) b = static_cast<uint8_t>(rng.next());
}

std::vector<uint8_t> encode(float f, OutDt t) {
    std::vector<uint8_t> out(conv::out_size(t));
    if (t == OutDt::F32) {
        std::memcpy(out.data(), &f, 4);
    } else {
        const uint16_t h = t == OutDt::F16 ? acp::float_to_half(f) : acp::float_to_bf16(f);
        std::memcpy(out.data(), &h, 2);
    }
    return out;
}

const char *name(OutDt t) { return t == OutDt::F32 ? "FLOAT" : t == OutDt::F16 ? "FLOAT16" : "BF16"; }

std::vector<bool> spellings() {
    std::vector<bool> v{false};
    if (conv::cpu_has_avx512()) v.push_back(true);
    return v;
}

struct ActCase {
    const char *name;
    dnnl::memory::dims d;  // N, C, spatial...
};

using conv::ActLayout;
// oneDNN's tag of layout l for activations of sd spatial dims.
Tag actTag(ActLayout l, size_t sd) {
    if (l == ActLayout::C16) return sd == 1 ? Tag::nCw16c : sd == 2 ? Tag::nChw16c : Tag::nCdhw16c;
    return sd == 1 ? Tag::nwc : sd == 2 ? Tag::nhwc : Tag::ndhwc;
}
const char *name(ActLayout l) { return l == ActLayout::C16 ? "nC16c" : "channels-last"; }

// Channels [0, C) of each image written at channel c0 of images holding C_all = C + c0 + 3 channels.
TEST(BlockedStore, ActivationsMatchOneDnnReorderThenRounding) {
    const ActCase cases[] = {
        {"ic17_9x11", {2, 17, 9, 11}}, {"c35_7x7", {3, 35, 7, 7}},   {"c16_1x1", {2, 16, 1, 1}},
        {"c64_28x28", {1, 64, 28, 28}}, {"1d_c5_w37", {2, 5, 37}},   {"3d_c20_3x4x5", {1, 20, 3, 4, 5}},
    };
    uint64_t seed = 1;
    for (const ActLayout l : {ActLayout::C16, ActLayout::Nhwc})
    for (const ActCase &c : cases) {
        const size_t sd = c.d.size() - 2;
        const Tag btag = actTag(l, sd);
        const Tag ptag = sd == 1 ? Tag::ncw : sd == 2 ? Tag::nchw : Tag::ncdhw;
        const Blocked b = makeBlocked(c.d, btag, ptag, seed++);
        const int64_t N = c.d[0], C = c.d[1];
        int64_t plane = 1;
        for (size_t i = 2; i < c.d.size(); ++i) plane *= c.d[i];
        const int64_t src_image = static_cast<int64_t>(b.blk.size()) / N;
        for (const int64_t c0 : {int64_t{0}, int64_t{5}}) {
            const int64_t c_all = C + c0 + 3;
            for (const OutDt t : {OutDt::F32, OutDt::F16, OutDt::BF16}) {
                const size_t es = conv::out_size(t);
                std::vector<uint8_t> want(static_cast<size_t>(N * c_all * plane) * es, kCanary);
                for (int64_t n = 0; n < N; ++n)
                    for (int64_t ch = 0; ch < C; ++ch)
                        for (int64_t s = 0; s < plane; ++s) {
                            const auto e = encode(b.plain[static_cast<size_t>((n * C + ch) * plane + s)], t);
                            std::memcpy(want.data() + static_cast<size_t>((n * c_all + c0 + ch) * plane + s) * es, e.data(), es);
                        }
                for (const bool vec : spellings()) {
                    std::vector<uint8_t> got(want.size(), kCanary);
                    conv::detail::unblock_acts(b.blk.data(), N, C, plane, src_image, got.data() + static_cast<size_t>(c0 * plane) * es,
                                               c_all * plane, t, vec, l);
                    EXPECT_TRUE(got == want) << name(l) << " " << c.name << " c0=" << c0 << " " << name(t) << (vec ? " AVX-512" : " scalar");
                }
            }
        }
    }
}

// Dense operands (a channel slice of wider images too) into the blocked layout, FLOAT and BF16:
// every byte of the blocked buffer as oneDNN's reorder writes it, the zero padding channels included.
TEST(BlockedStore, OperandsMatchOneDnnReorder) {
    const ActCase cases[] = {
        {"ic17_9x11", {2, 17, 9, 11}}, {"c35_7x7", {3, 35, 7, 7}},   {"c16_1x1", {2, 16, 1, 1}},
        {"c64_28x28", {1, 64, 28, 28}}, {"1d_c5_w37", {2, 5, 37}},   {"3d_c20_3x4x5", {1, 20, 3, 4, 5}},
    };
    uint64_t seed = 50;
    for (const ActLayout l : {ActLayout::C16, ActLayout::Nhwc})
    for (const ActCase &c : cases) {
        const size_t sd = c.d.size() - 2;
        const Tag btag = actTag(l, sd);
        const int64_t N = c.d[0], C = c.d[1];
        int64_t plane = 1;
        for (size_t i = 2; i < c.d.size(); ++i) plane *= c.d[i];
        for (const auto dt : {dnnl::memory::data_type::f32, dnnl::memory::data_type::bf16}) {
            const size_t es = dt == dnnl::memory::data_type::f32 ? 4 : 2;
            for (const int64_t c0 : {int64_t{0}, int64_t{5}}) {
                const int64_t c_all = C + c0 + 3;
                const dnnl::memory::dims strides = sliceStrides(c.d, c_all);
                std::vector<uint8_t> src(static_cast<size_t>(N * c_all * plane) * es);
                fillRandom(src, seed++);
                const Md smd(c.d, dt, strides), bmd(c.d, dt, btag);
                std::vector<uint8_t> want(bmd.get_size(), kCanary);
                uint8_t *first_channel = src.data() + static_cast<size_t>(c0 * plane) * es;
                dnnl::memory sm(smd, cpu(), first_channel), bm(bmd, cpu(), want.data());
                dnnl::stream st(cpu());
                dnnl::reorder(sm, bm).execute(st, sm, bm);
                st.wait();
                const auto dst_image = static_cast<int64_t>(bmd.get_size() / es) / N;
                for (const bool vec : spellings()) {
                    std::vector<uint8_t> got(want.size(), kCanary);
                    conv::detail::block_acts(first_channel, N, C, plane, c_all * plane, got.data(), dst_image, es, vec, l);
                    EXPECT_TRUE(got == want) << name(l) << " " << c.name << " c0=" << c0 << (es == 4 ? " FLOAT" : " BF16")
                                             << (vec ? " AVX-512" : " scalar");
                }
            }
        }
    }
}

struct WeightCase {
    const char *name;
    dnnl::memory::dims d;  // O, I, spatial...
};

TEST(BlockedStore, WeightsMatchOneDnnReorderThenRounding) {
    const WeightCase cases[] = {
        {"oc17_ic17_3x3", {17, 17, 3, 3}}, {"oc64_ic20_3x3", {64, 20, 3, 3}}, {"oc32_ic64_1x1", {32, 64, 1, 1}},
        {"oc5_ic3_7x7", {5, 3, 7, 7}},     {"1d_oc6_ic18_k4", {6, 18, 4}},    {"3d_oc16_ic16_3x3x3", {16, 16, 3, 3, 3}},
        {"oc48_ic33_3x1", {48, 33, 3, 1}},
    };
    uint64_t seed = 100;
    for (const WeightCase &c : cases) {
        const size_t sd = c.d.size() - 2;
        const Tag ptag = sd == 1 ? Tag::oiw : sd == 2 ? Tag::oihw : Tag::oidhw;
        const int64_t O = c.d[0], I = c.d[1], OB = (O + 15) / 16;
        int64_t K = 1;
        for (size_t i = 2; i < c.d.size(); ++i) K *= c.d[i];
        for (const bool o_inner : {true, false}) {
            const Tag btag = o_inner ? (sd == 1 ? Tag::ABc16b16a : sd == 2 ? Tag::ABcd16b16a : Tag::ABcde16b16a)
                                     : (sd == 1 ? Tag::ABc16a16b : sd == 2 ? Tag::ABcd16a16b : Tag::ABcde16a16b);
            const Blocked b = makeBlocked(c.d, btag, ptag, seed++);
            for (const OutDt t : {OutDt::F32, OutDt::F16, OutDt::BF16}) {
                const size_t es = conv::out_size(t);
                const size_t guard = 8 * es;  // canaries before and after
                std::vector<uint8_t> want(static_cast<size_t>(O * I * K) * es + 2 * guard, kCanary);
                for (size_t e = 0; e < b.plain.size(); ++e) std::memcpy(want.data() + guard + e * es, encode(b.plain[e], t).data(), es);
                for (const bool vec : spellings()) {
                    std::vector<uint8_t> got(want.size(), kCanary);
                    // by ranges of output blocks, as the tasks of the weight pass write them
                    const int64_t mid = OB / 2;
                    const float *part = b.blk.data();
                    conv::detail::unblock_weights(&part, 1, O, I, K, o_inner, got.data() + guard, t, mid, OB, vec);
                    conv::detail::unblock_weights(&part, 1, O, I, K, o_inner, got.data() + guard, t, 0, mid, vec);
                    EXPECT_TRUE(got == want) << c.name << (o_inner ? " 16b16a " : " 16a16b ") << name(t) << (vec ? " AVX-512" : " scalar");
                }
            }
        }
    }
}

// Partial weight gradients summed on the way, in part order: the same bytes as oneDNN's reorder of
// ((p0 + p1) + p2) then the rounding. Finite values of mixed magnitudes, so the order matters.
TEST(BlockedStore, WeightPartsSummedInOrder) {
    const WeightCase cases[] = {{"oc17_ic17_3x3", {17, 17, 3, 3}}, {"oc32_ic64_1x1", {32, 64, 1, 1}}, {"oc48_ic33_3x1", {48, 33, 3, 1}}};
    uint64_t seed = 300;
    for (const WeightCase &c : cases) {
        const int64_t O = c.d[0], I = c.d[1], OB = (O + 15) / 16;
        const int64_t K = c.d[2] * c.d[3];
        for (const bool o_inner : {true, false}) {
            const Md bmd(c.d, dnnl::memory::data_type::f32, o_inner ? Tag::ABcd16b16a : Tag::ABcd16a16b);
            const Md pmd(c.d, dnnl::memory::data_type::f32, Tag::oihw);
            const size_t n = bmd.get_size() / 4;
            acltest::Rng rng(seed++);
            std::vector<std::vector<float>> parts(3, std::vector<float>(n));
            for (auto &p : parts)
                for (float &f : p) f = static_cast<float>(rng.uniform(-1.0, 1.0) * std::ldexp(1.0, static_cast<int>(rng.integer(-30, 30))));
            std::vector<float> sum(n), plain(pmd.get_size() / 4);
            for (size_t e = 0; e < n; ++e) {
                float v = parts[0][e];
                v += parts[1][e];
                v += parts[2][e];
                sum[e] = v;
            }
            dnnl::memory bm(bmd, cpu(), sum.data()), pm(pmd, cpu(), plain.data());
            dnnl::stream st(cpu());
            dnnl::reorder(bm, pm).execute(st, bm, pm);
            st.wait();
            const float *ptrs[3] = {parts[0].data(), parts[1].data(), parts[2].data()};
            for (const OutDt t : {OutDt::F32, OutDt::BF16}) {
                const size_t es = conv::out_size(t);
                std::vector<uint8_t> want(plain.size() * es);
                for (size_t e = 0; e < plain.size(); ++e) std::memcpy(want.data() + e * es, encode(plain[e], t).data(), es);
                for (const bool vec : spellings()) {
                    std::vector<uint8_t> got(want.size(), kCanary);
                    conv::detail::unblock_weights(ptrs, 3, O, I, K, o_inner, got.data(), t, 0, OB, vec);
                    EXPECT_TRUE(got == want) << c.name << (o_inner ? " 16b16a " : " 16a16b ") << name(t) << (vec ? " AVX-512" : " scalar");
                }
            }
        }
    }
}

// Dense weights (and a slice of input channels of wider ones, as the data pass's channel blocks
// read them) into the tiles oneDNN's data passes read: every byte as oneDNN's reorder writes it.
TEST(BlockedStore, WeightsIntoTilesMatchOneDnnReorder) {
    const WeightCase cases[] = {
        {"oc17_ic17_3x3", {17, 17, 3, 3}}, {"oc64_ic20_3x3", {64, 20, 3, 3}}, {"oc32_ic64_1x1", {32, 64, 1, 1}},
        {"oc5_ic3_7x7", {5, 3, 7, 7}},     {"1d_oc6_ic18_k4", {6, 18, 4}},    {"3d_oc16_ic16_3x3x3", {16, 16, 3, 3, 3}},
        {"oc48_ic33_5x5", {48, 33, 5, 5}}, {"oc21_ic35_1x1", {21, 35, 1, 1}},
    };
    using DT = dnnl::memory::data_type;
    struct Layout {
        conv::WeightTiles tiles;
        bool a_outer;
        Tag tag[3];  // by spatial rank 1, 2, 3
    };
    const Layout layouts[] = {
        {conv::WeightTiles::F32_16a16b, true, {Tag::ABc16a16b, Tag::ABcd16a16b, Tag::ABcde16a16b}},
        {conv::WeightTiles::BF16_8a16b2a, true, {Tag::ABc8a16b2a, Tag::ABcd8a16b2a, Tag::ABcde8a16b2a}},
        {conv::WeightTiles::BF16_8a16b2a, false, {Tag::BAc8a16b2a, Tag::BAcd8a16b2a, Tag::BAcde8a16b2a}},
    };
    uint64_t seed = 200;
    for (const WeightCase &c : cases) {
        const size_t sd = c.d.size() - 2;
        const int64_t O = c.d[0], I = c.d[1];
        int64_t K = 1;
        for (size_t i = 2; i < c.d.size(); ++i) K *= c.d[i];
        for (const Layout &l : layouts) {
            const DT dt = l.tiles == conv::WeightTiles::F32_16a16b ? DT::f32 : DT::bf16;
            const size_t es = dt == DT::f32 ? 4 : 2;
            for (const int64_t c0 : {int64_t{0}, int64_t{3}}) {
                const int64_t i_all = I + c0 + 2;  // input channels of the whole weights
                const dnnl::memory::dims strides = sliceStrides(c.d, i_all);
                std::vector<uint8_t> src(static_cast<size_t>(O * i_all * K) * es);
                fillRandom(src, seed++);
                const Md smd(c.d, dt, strides), bmd(c.d, dt, l.tag[sd - 1]);
                std::vector<uint8_t> want(bmd.get_size(), kCanary);
                uint8_t *first_input = src.data() + static_cast<size_t>(c0 * K) * es;
                dnnl::memory sm(smd, cpu(), first_input), bm(bmd, cpu(), want.data());
                dnnl::stream st(cpu());
                dnnl::reorder(sm, bm).execute(st, sm, bm);
                st.wait();
                for (const bool vec : spellings()) {
                    std::vector<uint8_t> got(want.size(), kCanary);
                    conv::detail::block_weights(first_input, O, I, K, i_all * K, l.tiles, l.a_outer, got.data(), vec);
                    EXPECT_TRUE(got == want) << c.name << " c0=" << c0 << (es == 4 ? " FLOAT 16a16b" : " BF16 8a16b2a")
                                             << (l.a_outer ? " AB" : " BA") << (vec ? " AVX-512" : " scalar");
                }
            }
        }
    }
}

}  // namespace

// The mirrored convolution's weights (mirrored.hpp) in the layout of oneDNN's forward kernels: the
// layout read from the primitive (dnnl_common.cpp's mirror_layout), the bytes those of oneDNN's own
// reorder of the plainly mirrored weights W'[i][o][k] = W[o][i][K - 1 - k], the padding output
// channels zero. Channel counts off every block size, 1-D and 2-D kernels.
TEST(BlockedStore, MirroredWeightsMatchOneDnnReorder) {
    struct Case {
        int64_t O, I;                // the given convolution's weights (O, I, k...)
        dnnl::memory::dims spatial;  // kernel
    };
    const Case cases[] = {{12, 17, {3, 3}}, {64, 64, {3, 3}}, {128, 64, {3, 3}}, {16, 3, {3, 3}}, {20, 40, {1, 5}},
                          {24, 16, {3}},    {33, 65, {4, 4}}};
    uint64_t seed = 70;
    int checked = 0;
    for (const Case &c : cases) {
        // the forward primitive whose weights these are: src = gradOutput (O channels), dst = gradInput (I)
        dnnl::memory::dims src{1, c.O}, dst{1, c.I}, wd{c.I, c.O}, strides, pads, pads_r;
        for (const int64_t k : c.spatial) {
            src.push_back(9), dst.push_back(9), wd.push_back(k), strides.push_back(1);
            pads.push_back((k - 1) / 2);
            pads_r.push_back(k - 1 - (k - 1) / 2);
        }
        auto any = [](const dnnl::memory::dims &d) { return Md(d, dnnl::memory::data_type::f32, Tag::any); };
        const dnnl::convolution_forward::primitive_desc pd(
            dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any(src),
                                            any(wd), any(dst), strides, pads, pads_r),
            cpu());
        const Md blk = pd.weights_desc();
        const auto layout = conv::onednn::mirror_layout(blk);
        if (!layout) {  // a layout mirror_weights does not write: the data pass then keeps backward-data
            EXPECT_STRNE(pd.impl_info_str(), "brgconv:avx512_core") << "O" << c.O << " I" << c.I << ": " << pd.impl_info_str();
            continue;
        }
        int64_t K = 1;
        for (const int64_t k : c.spatial) K *= k;
        std::vector<float> w(static_cast<size_t>(c.O * c.I * K)), mirrored(w.size());
        std::vector<uint8_t> bits(w.size() * 4);
        fillRandom(bits, seed++);
        std::memcpy(w.data(), bits.data(), bits.size());
        for (int64_t o = 0; o < c.O; ++o)
            for (int64_t i = 0; i < c.I; ++i)
                for (int64_t k = 0; k < K; ++k) mirrored[static_cast<size_t>((i * c.O + o) * K + k)] = w[static_cast<size_t>((o * c.I + i) * K + K - 1 - k)];
        const Tag plain = c.spatial.size() == 1 ? Tag::oiw : Tag::oihw;
        std::vector<float> want(blk.get_size() / 4, 1.0f);
        dnnl::memory pm(Md(wd, dnnl::memory::data_type::f32, plain), cpu(), mirrored.data()), bm(blk, cpu(), want.data());
        dnnl::stream st(cpu());
        dnnl::reorder(pm, bm).execute(st, pm, bm);
        st.wait();
        for (const bool vec : spellings()) {
            std::vector<float> got(want.size(), 1.0f);
            conv::detail::mirror_weights(w.data(), c.O, c.I, K, c.I * K, *layout, got.data(), vec);
            EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0)
                << "O" << c.O << " I" << c.I << " K" << K << " B" << layout->B << (vec ? " AVX-512" : " scalar");
        }
        ++checked;
    }
    if (conv::cpu_has_avx512()) {
        EXPECT_EQ(checked, 7) << "oneDNN's forward kernels took a weights layout mirror_weights does not write";
    }
}
