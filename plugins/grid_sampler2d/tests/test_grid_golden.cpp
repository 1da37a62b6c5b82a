// PyTorch 1.13 as an outside witness (golden/grid_sampler2d_backward.txt, written by
// golden/gen_golden.py from torch.ops.aten.grid_sampler_2d_backward on the CPU): the 18
// combinations, grids exactly on the border pixels and reflection folds (R4), and float32 cases.
// DOUBLE cases within 1e-12, FLOAT cases within testing.md's FLOAT tolerance.
#include <cstdlib>

#include "grid_test_util.hpp"

namespace gst {
namespace {

struct Golden {
    std::string name;
    aclDataType dt = ACL_DOUBLE;
    gref::Problem p{};
    Data d;
    std::vector<double> gradInput, gradGrid;
};

std::vector<double> reals(std::istringstream &in) {
    std::vector<double> v;
    std::string tok;
    while (in >> tok) v.push_back(std::strtod(tok.c_str(), nullptr));
    return v;
}

std::vector<Golden> load() {
    std::vector<Golden> all;
    std::ifstream f(std::string(GRID_GOLDEN_DIR) + "/grid_sampler2d_backward.txt");
    std::string line;
    Golden g;
    while (std::getline(f, line)) {
        std::istringstream in(line);
        std::string key;
        in >> key;
        if (key == "case") {
            g = Golden{};
            std::string dt;
            int align = 0;
            in >> g.name >> dt >> g.p.N >> g.p.C >> g.p.H >> g.p.W >> g.p.Ho >> g.p.Wo >> g.p.interp >> g.p.padding >> align;
            g.p.align = align != 0;
            g.dt = dt == "float32" ? ACL_FLOAT : ACL_DOUBLE;
        } else if (key == "input") g.d.input = reals(in);
        else if (key == "grid") g.d.grid = reals(in);
        else if (key == "grad") g.d.gradOutput = reals(in);
        else if (key == "grad_input") g.gradInput = reals(in);
        else if (key == "grad_grid") g.gradGrid = reals(in);
        else if (key == "end") all.push_back(g);
    }
    return all;
}

TEST(GridSampler2DGolden, MatchesPyTorch) {
    ASSERT_NO_FATAL_FAILURE(Runtime::use("atlas-a2"));
    const auto all = load();
    ASSERT_EQ(all.size(), 18u + 8u + 3u) << "golden file missing or truncated";
    for (const Golden &g : all) {
        ASSERT_EQ(g.d.input.size(), static_cast<size_t>(g.p.inputCount())) << g.name;
        ASSERT_EQ(g.gradGrid.size(), static_cast<size_t>(g.p.gridCount())) << g.name;
        const Result r = runBackward(g.p, g.dt, g.d);
        ASSERT_EQ(r.phase2, ACLNN_SUCCESS) << g.name << " " << r.message;
        EXPECT_TRUE(close(g.dt, r.inputGrad, g.gradInput)) << g.name;
        EXPECT_TRUE(close(g.dt, r.gridGrad, g.gradGrid)) << g.name;
        // the reference agrees with PyTorch too (it is the oracle of every other test)
        const auto ref = gref::backward(g.p, g.d.gradOutput, g.d.input, g.d.grid);
        EXPECT_TRUE(close(g.dt, ref.input, g.gradInput)) << g.name << " (reference)";
        EXPECT_TRUE(close(g.dt, ref.grid, g.gradGrid)) << g.name << " (reference)";
    }
}

}  // namespace
}  // namespace gst
