// PyTorch 1.13 as an outside witness (golden/*.txt, written by golden/gen_golden.py from
// torch.ops.aten.max_pool2d_with_indices[_backward] on the CPU): on atlas-a2 our forward's out and
// int32 argmax equal PyTorch's out and indices, and our backward fed PyTorch's indices equals its
// grad_input, bit for bit (FLOAT with random gradients: the same order of summation).
#include <cstdlib>

#include "mpool_test_util.hpp"

namespace mpt {
namespace {

struct Golden {
    std::string name;
    aclDataType dt = ACL_FLOAT;
    Problem pr;
    std::vector<double> self, out, grad, gradInput;
    std::vector<int64_t> indices;
};

std::vector<double> reals(std::istringstream &in) {
    std::vector<double> v;
    std::string tok;
    while (in >> tok) v.push_back(std::strtod(tok.c_str(), nullptr));  // hex floats, nan, inf
    return v;
}

Golden load(const std::string &file) {
    Golden g;
    std::ifstream f(file);
    std::string line;
    std::vector<int64_t> dims, k, s, p;
    bool ceil = false;
    while (std::getline(f, line)) {
        std::istringstream in(line);
        std::string key;
        in >> key;
        auto ints = [&](std::vector<int64_t> &out) {
            int64_t x;
            while (in >> x) out.push_back(x);
        };
        if (key == "name") in >> g.name;
        else if (key == "dtype") {
            std::string d;
            in >> d;
            g.dt = d == "bfloat16" ? ACL_BF16 : ACL_FLOAT;
        } else if (key == "dims") ints(dims);
        else if (key == "kernel") ints(k);
        else if (key == "stride") ints(s);
        else if (key == "padding") ints(p);
        else if (key == "ceil") { int c; in >> c; ceil = c != 0; }
        else if (key == "self") g.self = reals(in);
        else if (key == "out") g.out = reals(in);
        else if (key == "indices") ints(g.indices);
        else if (key == "grad") g.grad = reals(in);
        else if (key == "grad_input") g.gradInput = reals(in);
    }
    g.pr.rank3 = dims.size() == 3;
    if (g.pr.rank3) dims.insert(dims.begin(), 1);
    if (dims.size() == 4 && k.size() == 2 && s.size() == 2 && p.size() == 2)
        g.pr.pool = {dims[0], dims[1], dims[2], dims[3], k[0], k[1], s[0], s[1], p[0], p[1], ceil};
    return g;
}

class GoldenTest : public ::testing::TestWithParam<const char *> {};

TEST_P(GoldenTest, ForwardAndBackwardEqualPyTorch) {
    const Golden g = load(std::string(MPOOL_GOLDEN_DIR) + "/" + GetParam() + ".txt");
    ASSERT_EQ(g.name, GetParam()) << "golden file missing or unreadable";
    const mref::Pool &p = g.pr.pool;
    ASSERT_EQ(static_cast<int64_t>(g.self.size()), p.N * p.C * p.H * p.W);
    ASSERT_EQ(static_cast<int64_t>(g.indices.size()), p.N * p.C * p.Ho() * p.Wo()) << "pooled size differs from PyTorch";
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));

    const Result f = runForward(g.pr, g.dt, g.self);
    ASSERT_EQ(f.phase2, ACLNN_SUCCESS) << f.message;
    EXPECT_TRUE(sameBits(g.dt, f.outBits, g.out));
    for (size_t i = 0; i < g.indices.size(); ++i) {
        int32_t v;
        std::memcpy(&v, f.mask.data() + 4 * i, 4);
        ASSERT_EQ(v, g.indices[i]) << "argmax of output " << i;
    }

    const Result b = runBackward(g.pr, g.dt, g.grad, mref::maskInt32(p, g.indices));
    ASSERT_EQ(b.phase2, ACLNN_SUCCESS) << b.message;
    EXPECT_TRUE(sameBits(g.dt, b.outBits, g.gradInput));
}

INSTANTIATE_TEST_SUITE_P(PyTorch, GoldenTest,
                         ::testing::Values("k3s2p1_f32", "k3x2s2x1p1x0_ceil_f32", "rank3_k2s2_ceil_f32", "ties_nan_f32",
                                           "ties_k2s2_f32", "k17x3s1x2p0x1_f32", "k3s2p1_bf16"));

}  // namespace
}  // namespace mpt
