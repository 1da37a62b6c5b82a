// The forward companion's dtypes, as CANN's GetConvolutionOpDtype sets them: input and weight promoted
// (FLOAT if either is; FLOAT16 with BF16: FLOAT), the cube computing in that dtype as cubeMathType and
// the product leave it, its kernel writing that dtype, the result cast to the output's dtype; the bias
// cast to FLOAT16 where the cube computes FLOAT16. Integer data keep every product exact in FLOAT, so
// each expected value is the double reference rounded the way CANN's casts round it.
#include <cmath>

#include "conv_cases.hpp"
#include "conv_test_util.hpp"

namespace ct {
namespace {

struct Dtypes {
    aclDataType in, w, bias, out;
};

struct Outcome {
    aclnnStatus status = -1;
    std::string message;
    std::vector<uint32_t> out;
};

Outcome run(const cref::Conv &c, const Dtypes &d, int8_t cube, const std::vector<double> &in, const std::vector<double> &w,
            const std::vector<double> &b) {
    Tensor tin(d.in, c.inputDims()), tw(d.w, c.weightDims()), tb(d.bias, {c.Cout}, Layout{}, ACL_FORMAT_ND),
        out(d.out, c.gradOutputDims());
    tin.setValues(in);
    tw.setValues(w);
    tb.setValues(b);
    IntArray stride(c.spatial(c.s)), pad(c.spatial(c.pl)), dil(c.spatial(c.d)), op(c.spatial(c.op));
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    Outcome o;
    o.status = aclnnConvolutionGetWorkspaceSize(tin.get(), tw.get(), tb.get(), stride.a, pad.a, dil.a, c.transposed, op.a, c.G,
                                                out.get(), cube, &ws, &exec);
    if (o.status == ACLNN_SUCCESS) {
        Workspace buf;
        o.status = aclnnConvolution(buf.ptr(ws), ws, exec, Runtime::stream());
        aclrtSynchronizeStream(Runtime::stream());
    }
    if (o.status != ACLNN_SUCCESS) o.message = lastError();
    o.out = out.bits();
    return o;
}

double roundTo(double v, aclDataType dt) { return valueOf(bitsOf(v, dt), dt); }

// What CANN's kernel writes for an exact sum: (sum + bias as the kernel takes it) in FLOAT, rounded
// to the kernel's dtype; the output's cast then rounds that (see expected()).
std::vector<double> kernelResult(const cref::Conv &c, const std::vector<double> &in, const std::vector<double> &w,
                                 const std::vector<double> &b, aclDataType biasAs, aclDataType kernelDt) {
    std::vector<double> r = cref::forward(c, in, w, nullptr);
    const int64_t plane = static_cast<int64_t>(r.size()) / (c.N * c.Cout);
    for (size_t i = 0; i < r.size(); ++i) {
        const float sum = static_cast<float>(r[i]) + static_cast<float>(roundTo(b[static_cast<size_t>(static_cast<int64_t>(i) / plane % c.Cout)], biasAs));
        r[i] = roundTo(sum, kernelDt);
    }
    return r;
}

// A 2-D layer whose sums reach past 2048 (FLOAT16's last exact odd integer): the kernel's rounding
// shows in the bits.
cref::Conv layer() { return conv2d(2, 6, 5, 7, 8, 3, 3, 1, 1, 1, 1); }

// input, weight, bias, output dtypes on A2 (cubeMathType 0): the cube computes the promotion.
TEST(ForwardDtypes, MixedDtypesPromotedOnA2) {
    Runtime::use("atlas-a2");
    const cref::Conv c = layer();
    const auto in = ints(cref::Conv::count(c.inputDims()), 4, 11), w = ints(cref::Conv::count(c.weightDims()), 4, 12);
    std::vector<double> b = ints(c.Cout, 8, 13);
    for (double &x : b) x += 0.5;  // exact in every dtype here
    struct Row {
        Dtypes d;
        aclDataType kernel;  // what the cube computes and writes
    };
    const Row rows[] = {
        {{ACL_FLOAT16, ACL_FLOAT, ACL_BF16, ACL_BF16}, ACL_FLOAT},     {{ACL_FLOAT, ACL_BF16, ACL_FLOAT16, ACL_FLOAT16}, ACL_FLOAT},
        {{ACL_FLOAT16, ACL_BF16, ACL_FLOAT, ACL_FLOAT}, ACL_FLOAT},    {{ACL_BF16, ACL_BF16, ACL_FLOAT, ACL_FLOAT}, ACL_BF16},
        {{ACL_FLOAT16, ACL_FLOAT16, ACL_BF16, ACL_FLOAT}, ACL_FLOAT16}, {{ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT, ACL_BF16}, ACL_FLOAT16},
    };
    for (const Row &r : rows) {
        const Outcome o = run(c, r.d, 0, in, w, b);
        ASSERT_EQ(o.status, ACLNN_SUCCESS) << o.message;
        auto want = kernelResult(c, in, w, b, ACL_FLOAT, r.kernel);
        EXPECT_TRUE(sameBits(r.d.out, o.out, want, "output"))
            << dtName(r.d.in) << " x " << dtName(r.d.w) << " + " << dtName(r.d.bias) << " -> " << dtName(r.d.out);
    }
}

// Where the cube has no FP32 (atlas-training, atlas-inference) and under USE_FP16 anywhere, FLOAT is
// computed in FLOAT16: the operands and the bias are rounded to FLOAT16 and so is the kernel's sum,
// before the FLOAT output gets it.
TEST(ForwardDtypes, Float16KernelRoundsAFloatOutput) {
    const cref::Conv c = layer();
    // k/8 + 2^-13 for |k| >= 8: FLOAT16 rounds it to k/8 (13 significant bits), so the FLOAT16 operands
    // keep the sums exact in FLOAT, and the sums (up to ~7000) need more than FLOAT16's 11 bits
    std::vector<double> in = ints(cref::Conv::count(c.inputDims()), 256, 21), w = ints(cref::Conv::count(c.weightDims()), 4, 22);
    for (double &x : in) x = x / 8 + (std::abs(x) >= 8 ? 1.0 / 8192 : 0.0);
    std::vector<double> b = ints(c.Cout, 8, 23);
    for (double &x : b) x += 0.1;
    std::vector<double> in16 = in, w16 = w;
    for (double &x : in16) x = roundTo(x, ACL_FLOAT16);
    for (double &x : w16) x = roundTo(x, ACL_FLOAT16);
    ASSERT_NE(in16, in) << "the data must show the operands' rounding";
    const auto want = kernelResult(c, in16, w16, b, ACL_FLOAT16, ACL_FLOAT16);
    for (const auto &[product, cube] : {std::pair{"atlas-training", 1}, std::pair{"atlas-inference", 2}, std::pair{"atlas-a2", 2}}) {
        Runtime::use(product);
        const Outcome o = run(c, {ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, ACL_FLOAT}, static_cast<int8_t>(cube), in, w, b);
        ASSERT_EQ(o.status, ACLNN_SUCCESS) << product << ": " << o.message;
        EXPECT_TRUE(sameBits(ACL_FLOAT, o.out, want, "output")) << product << " cubeMathType " << cube;
    }
}

// cubeMathType is checked on the promoted dtype: FLOAT16 input with a FLOAT weight is FLOAT, which
// KEEP_DTYPE refuses where the cube has no FP32.
TEST(ForwardDtypes, CubeMathTypeOnThePromotedDtype) {
    Runtime::use("atlas-training");
    const cref::Conv c = layer();
    const auto in = ints(cref::Conv::count(c.inputDims()), 4, 31), w = ints(cref::Conv::count(c.weightDims()), 4, 32);
    const auto b = ints(c.Cout, 4, 33);
    Outcome o = run(c, {ACL_FLOAT16, ACL_FLOAT, ACL_FLOAT16, ACL_FLOAT16}, 0, in, w, b);
    EXPECT_EQ(o.status, 161002);
    EXPECT_NE(o.message.find("cubeMathType 0 (KEEP_DTYPE) with input and weight (promoted) dtype FLOAT is not supported"),
              std::string::npos)
        << o.message;
    o = run(c, {ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16}, 0, in, w, b);
    EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
}

// A transposed kernel reads and writes one dtype: computed in FLOAT16 (or BF16) with a FLOAT output
// it does not exist on A2 (361001), unless USE_FP16 makes the kernel write FLOAT16 anyway.
TEST(ForwardDtypes, TransposedKernelOneDtype) {
    cref::Conv c = conv2d(1, 4, 3, 5, 5, 3, 3, 2, 2, 1, 1);
    c.transposed = true;
    c.op = {1, 1, 0};
    const auto in = ints(cref::Conv::count(c.inputDims()), 4, 41), w = ints(cref::Conv::count(c.weightDims()), 4, 42);
    const auto b = ints(c.Cout, 4, 43);
    Runtime::use("atlas-a2");
    Outcome o = run(c, {ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT}, 0, in, w, b);
    EXPECT_EQ(o.status, 361001);
    EXPECT_NE(o.message.find("CANN has no transposed kernel from FLOAT16 to FLOAT"), std::string::npos) << o.message;
    o = run(c, {ACL_BF16, ACL_BF16, ACL_BF16, ACL_FLOAT}, 0, in, w, b);
    EXPECT_EQ(o.status, 361001) << o.message;
    o = run(c, {ACL_FLOAT, ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16}, 0, in, w, b);  // FLOAT kernel, FLOAT16 output: fine
    ASSERT_EQ(o.status, ACLNN_SUCCESS) << o.message;
    EXPECT_TRUE(sameBits(ACL_FLOAT16, o.out, kernelResult(c, in, w, b, ACL_FLOAT, ACL_FLOAT), "output"));
    o = run(c, {ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT}, 2, in, w, b);  // USE_FP16: the kernel writes FLOAT16
    ASSERT_EQ(o.status, ACLNN_SUCCESS) << o.message;
    EXPECT_TRUE(sameBits(ACL_FLOAT, o.out, kernelResult(c, in, w, b, ACL_FLOAT, ACL_FLOAT16), "output"));
    Runtime::use("atlas-training");  // no FP32 cube: the kernel writes FLOAT16, the bias is cast to it
    o = run(c, {ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT}, 0, in, w, b);
    ASSERT_EQ(o.status, ACLNN_SUCCESS) << o.message;
    EXPECT_TRUE(sameBits(ACL_FLOAT, o.out, kernelResult(c, in, w, b, ACL_FLOAT16, ACL_FLOAT16), "output"));
}

}  // namespace
}  // namespace ct
