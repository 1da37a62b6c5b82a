// performance.md: "workspace = exactly the scratch the plan uses". Each bench case at full size is
// planned on one thread (so that every per-task set of scratch is the one set, and used) and run on
// a workspace filled with 0xA5 bytes, and where many kept it, again on one filled with 0x5A bytes:
// a byte that kept the fill every time was never written. What a plan asks for and no run writes is held, per operator
// over the corpus, to 5 % of its workspaces or 512 KiB, whichever is more. (What stays unwritten:
// alignment between buffers, padding in our kernels' scratch layouts, and scratchpads oneDNN asks
// for but does not use on some layers - up to 3.2 MB on ResNet-50's BF16 256->64 1x1 layer.)
// On CPUs with AMX (Xeon Sapphire Rapids and later) oneDNN 2.6's BF16 convolution kernels leave
// about half of their own gradWeight scratchpad unwritten (oneDNN alone, no aclnn-cpu: 4.6 of
// 9.2 MB on ResNet-50's 64->256 1x1 layer), 11 % of the BF16 cases' workspaces in all: there those
// cases are held as a group of their own, to 20 %.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <map>
#include <string>

#include "acltest.hpp"
#include "bench.hpp"

namespace {

struct Use {
    uint64_t asked = 0, unwritten = 0;
    double budget = 0.05;  // the share of asked that may stay unwritten
};

// Bytes of a workspace never written: those that kept a 0xA5 fill through a run - at most that
// many, since a run may write 0xA5 - and, where that is more than 1 % of the workspace, of those
// the ones that kept a 0x5A fill through a second run too. (Compared 8 bytes at a time where they
// all kept the fill or none did; most cases need one run: the sanitized build walks ~600 MB.)
uint64_t unwrittenBytes(bench::Prepared &p) {
    const uint64_t n = p.workspace_bytes();
    auto *w = static_cast<uint8_t *>(p.workspace());
    std::vector<uint8_t> kept(n, 1);  // kept its fill in every run so far
    uint64_t count = n;
    for (const uint8_t fill : {uint8_t{0xA5}, uint8_t{0x5A}}) {
        if (count <= n / 100) break;
        std::memset(w, fill, n);
        p.run();
        uint64_t word = 0;
        std::memset(&word, fill, sizeof word);
        uint64_t i = 0;
        for (; i + 8 <= n; i += 8) {
            uint64_t v = 0;
            std::memcpy(&v, w + i, 8);
            if (v == word) continue;
            for (uint64_t b = i; b < i + 8; ++b) kept[b] &= static_cast<uint8_t>(w[b] == fill);
        }
        for (; i < n; ++i) kept[i] &= static_cast<uint8_t>(w[i] == fill);
        count = static_cast<uint64_t>(std::count(kept.begin(), kept.end(), uint8_t{1}));
    }
    return count;
}

// The group a case's workspace is held in (see the top): its operator, or its operator and
// oneDNN's AMX kernels.
std::string group(const bench::Case &c, double *budget) {
    static const bool amx = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("amx-bf16") != 0;
    }();
    *budget = 0.05;
    if (!amx || c.op != "ConvolutionBackward" || c.dtype != ACL_BF16) return c.op;
    *budget = 0.20;
    return c.op + " BF16 (oneDNN's AMX kernels)";
}

class WorkspaceUse : public ::testing::TestWithParam<std::string> {};

TEST_P(WorkspaceUse, WhatAPlanAsksForIsWritten) {
    ASSERT_NO_FATAL_FAILURE(acltest::Runtime::use(GetParam(), 1));
    std::map<std::string, Use> ops;
    for (const bench::Case &c : bench::all_cases()) {
        if (c.quick || c.product != GetParam()) continue;
        bench::Prepared p(acltest::Runtime::stream());
        c.prepare(p);
        if (p.workspace_bytes() == 0) continue;
        const uint64_t unwritten = unwrittenBytes(p);
        double budget = 0;
        Use &u = ops[group(c, &budget)];
        u.budget = budget;
        u.asked += p.workspace_bytes();
        u.unwritten += unwritten;
        if (unwritten > 64 * 1024)
            std::cout << c.id() << ": " << unwritten << " of " << p.workspace_bytes() << " workspace bytes never written\n";
    }
    for (const auto &[op, u] : ops) {
        const double share = static_cast<double>(u.unwritten) / static_cast<double>(u.asked);
        std::cout << op << " on " << GetParam() << ": " << u.unwritten << " of " << u.asked << " workspace bytes never written ("
                  << 100.0 * share << " %)\n";
        EXPECT_LE(u.unwritten, std::max<uint64_t>(static_cast<uint64_t>(static_cast<double>(u.asked) * u.budget), 512 * 1024))
            << op << ": " << u.unwritten << " of " << u.asked << " workspace bytes asked for and never written";
    }
    EXPECT_FALSE(ops.empty()) << "no full-size bench case with a workspace on " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Products, WorkspaceUse, ::testing::Values("atlas-a2", "atlas-training"),
                         [](const auto &info) { return acltest::ident(info.param); });

}  // namespace
