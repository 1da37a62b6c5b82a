// performance.md: "no allocation inside phase 2". Every case of the bench's --quick corpus (every
// operator, its dtypes, the products it is benchmarked on; with ACLNN_CPU_ALLOC_CASES=all every
// bench case at full size) is planned and run once to warm the
// process, then a fresh executor of the same case is planned and its phase 2 runs twice (the first
// run of an executor, as every training step's is, and a repeat) with every heap allocation of the
// process counted, from any thread (alloc_counter.hpp). Outside phase 2 (planning, the first run of
// the process: thread start-up) allocation is fine.
#include <gtest/gtest.h>
#include <tbb/parallel_for.h>

#include <atomic>
#include <chrono>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl_rt.h"
#include "acltest.hpp"
#include "alloc_counter.hpp"
#include "bench.hpp"
#include "context.hpp"

namespace {

struct Measured {
    std::string id;
    alloc_counter::Counts first, again;
};

// ACLNN_CPU_ALLOC_CASES=all: every bench case, full size (a few minutes, several GB), not only --quick.
bool allCases() {
    const char *v = std::getenv("ACLNN_CPU_ALLOC_CASES");
    return v && std::string(v) == "all";
}

// Every worker of the runtime's arena joins it once before anything is counted: on a loaded machine
// a worker could sit out the warm-up run and start (allocating its thread-local state) inside a
// measured one. Each of `threads` iterations waits until all have started (5 s at most in all).
void join_every_worker() {
    const auto state = aclcpu::runtime_state();
    const int n = state->threads;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    std::atomic<int> started{0};
    state->arena->execute([&] {
        tbb::parallel_for(0, n, 1, [&](int) {
            started.fetch_add(1);
            while (started.load() < n && std::chrono::steady_clock::now() < until) std::this_thread::yield();
        });
    });
}

std::vector<Measured> measure(const std::string &product) {
    join_every_worker();
    std::vector<Measured> out;
    for (const bench::Case &c : bench::all_cases()) {
        if ((!c.quick && !allCases()) || c.product != product) continue;
        {
            bench::Prepared warm(acltest::Runtime::stream());
            c.prepare(warm);
            warm.run();
        }
        bench::Prepared p(acltest::Runtime::stream());
        c.prepare(p);
        Measured m{c.id(), {}, {}};
        alloc_counter::arm();
        p.run();
        m.first = alloc_counter::disarm();
        alloc_counter::arm();
        p.run();
        m.again = alloc_counter::disarm();
        out.push_back(m);
    }
    return out;
}

// The exception: convolutions other than depthwise ("g32ic32": groups = channels, our own
// kernels), which run oneDNN primitives. oneDNN's execute copies its arguments into a
// std::unordered_map and our calls wrap each pointer in a dnnl::memory: a few small allocations per
// primitive call (about 160 per run of the --quick smoke case, about 500-1100 at full size). Its
// GEMM-based implementations (1x1 FLOAT layers, the 3-channel first layer's gradInput) also allocate
// their packing buffers inside each call, outside any scratchpad (up to 2.6 MB a block at full size).
// The --quick ones are held to bookkeeping - no block over 4 KiB, 64 KiB in all per run; with
// ACLNN_CPU_ALLOC_CASES=all their counts are printed, not held.
bool runsOneDnn(const std::string &id) {
    if (id.rfind("ConvolutionBackward/", 0) != 0) return false;
    // depthwise: the shape ("mb8g32ic32...", the id's second field) has groups equal to channels
    const size_t at = id.find('/') + 1;
    const std::string shape = id.substr(at, id.find('/', at) - at);
    const size_t g = shape.find('g'), ic = shape.find("ic");
    if (g == std::string::npos || ic == std::string::npos || ic < g) return true;
    const std::string groups = shape.substr(g + 1, ic - g - 1);
    const size_t end = shape.find_first_not_of("0123456789", ic + 2);
    return shape.substr(ic + 2, end - ic - 2) != groups;
}

::testing::AssertionResult allocationFree(const std::string &id, const char *run, const alloc_counter::Counts &c) {
    const bool oneDnn = runsOneDnn(id);
    if (oneDnn && allCases())
        std::cout << id << ": " << run << ": " << c.calls << " allocations, " << c.bytes << " bytes, the largest " << c.largest
                  << " (oneDNN)\n";
    const bool ok = !oneDnn ? c.calls == 0 : allCases() || (c.largest <= 4096 && c.bytes <= 65536);
    if (ok) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << id << ": " << run << " made " << c.calls << " allocations, " << c.bytes
                                         << " bytes, the largest " << c.largest
                                         << " (ACLNN_CPU_TRAP_ALLOC=1 under gdb shows where)";
}

// The counter itself: it sees malloc and operator new, on this thread and on another one.
TEST(AllocCounter, SeesEveryThreadsAllocations) {
    alloc_counter::arm();
    void *volatile p = std::malloc(100);
    std::free(p);
    std::thread([] { std::vector<int>(1000).swap(*std::make_unique<std::vector<int>>()); }).join();
    const alloc_counter::Counts c = alloc_counter::disarm();
    EXPECT_GE(c.calls, 3u);
    EXPECT_GE(c.bytes, 4100u);
    EXPECT_GE(c.largest, 4000u);
    alloc_counter::arm();
    const alloc_counter::Counts none = alloc_counter::disarm();
    EXPECT_EQ(none.calls, 0u);
}

// The heap held: the highest of the bytes allocated less those freed, device buffers apart.
TEST(AllocCounter, HoldsTheHeapAndKeepsDeviceBuffersApart) {
    constexpr size_t kMiB = size_t{1} << 20;
    alloc_counter::arm();
    void *volatile a = std::malloc(kMiB);
    std::free(a);
    void *volatile b = std::malloc(kMiB / 2);
    void *d = nullptr;
    ASSERT_EQ(aclrtMalloc(&d, 4 * kMiB, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtFree(d), ACL_SUCCESS);
    std::free(b);
    const alloc_counter::Counts c = alloc_counter::disarm();
    EXPECT_GE(c.peak_held, static_cast<int64_t>(kMiB));                // a, while it lived
    EXPECT_LT(c.peak_held, static_cast<int64_t>(kMiB + kMiB / 2));    // a and b never lived at once
    EXPECT_EQ(c.device_bytes, 4 * kMiB);
    EXPECT_GE(c.calls, 3u);
}

class Phase2Allocations : public ::testing::TestWithParam<std::string> {};

TEST_P(Phase2Allocations, NoneInAnyQuickCase) {
    ASSERT_NO_FATAL_FAILURE(acltest::Runtime::use(GetParam()));
    const std::vector<Measured> ms = measure(GetParam());
    int strict = 0;
    for (const Measured &m : ms) {
        strict += !runsOneDnn(m.id);
        EXPECT_TRUE(allocationFree(m.id, "a fresh executor's phase 2", m.first));
        EXPECT_TRUE(allocationFree(m.id, "a repeated phase 2", m.again));
    }
    EXPECT_GE(strict, 4) << "the --quick bench cases on " << GetParam() << " no longer cover the operators";
}

INSTANTIATE_TEST_SUITE_P(Products, Phase2Allocations, ::testing::Values("atlas-a2", "atlas-training"),
                         [](const auto &info) { return acltest::ident(info.param); });

}  // namespace
