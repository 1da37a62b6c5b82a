// The plugin SDK's acp::SlotPool (aclnn_cpu/slot_pool.hpp): tasks running side by side never hold
// the same set of scratch, and a pool of min(tasks, threads) sets serves every task.
#include <gtest/gtest.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "aclnn_cpu/slot_pool.hpp"

namespace {

TEST(SlotPool, SlotsForTasksOnThreads) {
    EXPECT_EQ(acp::SlotPool::slots(8, 2), 2);
    EXPECT_EQ(acp::SlotPool::slots(1, 4), 1);
    EXPECT_EQ(acp::SlotPool::slots(3, 3), 3);
    EXPECT_EQ(acp::SlotPool::slots(0, 2), 1);  // a pass with no tasks still has its one set
}

// 200 tasks over an arena of `threads` threads, each holding its lease for a moment: no set is ever
// held twice at once, every lease names a set of the pool, every task gets one.
TEST(SlotPool, TasksSideBySideHoldDistinctSets) {
    for (const int threads : {1, 2, 3}) {
        const int64_t n = acp::SlotPool::slots(200, threads);
        acp::SlotPool pool;
        pool.resize(n);
        ASSERT_EQ(pool.size(), n);
        std::vector<std::atomic<int>> holders(static_cast<size_t>(n));
        std::vector<std::atomic<int>> uses(static_cast<size_t>(n));
        std::atomic<int> overlaps{0}, outside{0};
        tbb::task_arena arena(threads);
        arena.execute([&] {
            tbb::parallel_for(tbb::blocked_range<int>(0, 200, 1), [&](const tbb::blocked_range<int> &r) {
                for (int t = r.begin(); t < r.end(); ++t) {
                    const acp::SlotPool::Lease lease(pool);
                    const size_t i = lease.index();
                    if (i >= static_cast<size_t>(n)) {
                        ++outside;
                        continue;
                    }
                    if (holders[i].fetch_add(1) != 0) ++overlaps;
                    ++uses[i];
                    std::this_thread::sleep_for(std::chrono::microseconds(50));
                    holders[i].fetch_sub(1);
                }
            });
        });
        EXPECT_EQ(overlaps.load(), 0) << threads << " threads";
        EXPECT_EQ(outside.load(), 0) << threads << " threads";
        int total = 0;
        for (const auto &u : uses) total += u.load();
        EXPECT_EQ(total, 200) << threads << " threads";
    }
}

// A lease released is free again: one set serves task after task on one thread.
TEST(SlotPool, ALeaseEndsWithItsScope) {
    acp::SlotPool pool;
    pool.resize(1);
    for (int t = 0; t < 3; ++t) {
        const acp::SlotPool::Lease lease(pool);
        EXPECT_EQ(lease.index(), 0u);
    }
}

}  // namespace
