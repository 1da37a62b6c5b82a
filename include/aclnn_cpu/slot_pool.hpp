// Plugin SDK helper: sets of per-task scratch for tasks that run side by side.
//
// A kernel whose work is split into many tasks (chunks of a minibatch, channel blocks, planes) needs
// scratch per task in flight, not per task: at most min(tasks, threads) of them run at once on the
// executor's arena. A plan reserves that many sets of buffers (slots(tasks, threads)) and each task
// takes a free set for its duration (a Lease). The results must not depend on which set a task
// took: a task writes what it reads of its set.
#ifndef ACLNN_CPU_SLOT_POOL_HPP_
#define ACLNN_CPU_SLOT_POOL_HPP_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

#include <tbb/task_arena.h>

namespace acp {

class SlotPool {
public:
    // Sets for `tasks` tasks on `threads` threads (at least one).
    static int64_t slots(int64_t tasks, int64_t threads) { return std::max<int64_t>(1, std::min(tasks, threads)); }

    void resize(int64_t n) {
        n_ = std::max<int64_t>(n, 0);
        flags_ = std::make_unique<Flag[]>(static_cast<size_t>(n_));
    }
    int64_t size() const { return n_; }

    // A free set, held until the lease ends. There always is one when no more than size() tasks
    // run at once; a thread that finds every set taken (a task still finishing elsewhere) tries again.
    // The search starts at the set of the thread's index in its arena, so that threads take sets of
    // their own, each flag on a line of its own: tasks of a few microseconds (small depthwise planes)
    // do not pass a cache line between the cores at each start (scanning from set 0 cost the
    // 256-channel 28x28 depthwise layer 20 %).
    class Lease {
    public:
        explicit Lease(const SlotPool &pool) : pool_(pool) {
            const auto n = static_cast<size_t>(pool.n_);
            const int hint = tbb::this_task_arena::current_thread_index();
            const size_t first = hint >= 0 ? static_cast<size_t>(hint) % n : 0;
            for (;;) {
                for (size_t k = 0; k < n; ++k) {
                    const size_t i = (first + k) % n;
                    bool free = false;
                    if (pool.flags_[i].busy.compare_exchange_strong(free, true, std::memory_order_acquire)) {
                        i_ = i;
                        return;
                    }
                }
                std::this_thread::yield();
            }
        }
        ~Lease() { pool_.flags_[i_].busy.store(false, std::memory_order_release); }
        Lease(const Lease &) = delete;
        Lease &operator=(const Lease &) = delete;
        size_t index() const { return i_; }

    private:
        const SlotPool &pool_;
        size_t i_ = 0;
    };

private:
    struct alignas(64) Flag {
        std::atomic<bool> busy{false};
    };
    std::unique_ptr<Flag[]> flags_;
    int64_t n_ = 0;
};

}  // namespace acp

#endif  // ACLNN_CPU_SLOT_POOL_HPP_
