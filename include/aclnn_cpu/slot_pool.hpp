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

namespace acp {

class SlotPool {
public:
    // Sets for `tasks` tasks on `threads` threads (at least one).
    static int64_t slots(int64_t tasks, int64_t threads) { return std::max<int64_t>(1, std::min(tasks, threads)); }

    void resize(int64_t n) {
        n_ = std::max<int64_t>(n, 0);
        busy_ = std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(n_));
        for (size_t i = 0; i < static_cast<size_t>(n_); ++i) busy_[i].store(false);
    }
    int64_t size() const { return n_; }

    // A free set, held until the lease ends. There always is one when no more than size() tasks
    // run at once; a thread that finds every set taken (a task still finishing elsewhere) tries again.
    class Lease {
    public:
        explicit Lease(const SlotPool &pool) : pool_(pool) {
            for (;;) {
                for (size_t i = 0; i < static_cast<size_t>(pool.n_); ++i) {
                    bool free = false;
                    if (pool.busy_[i].compare_exchange_strong(free, true, std::memory_order_acquire)) {
                        i_ = i;
                        return;
                    }
                }
                std::this_thread::yield();
            }
        }
        ~Lease() { pool_.busy_[i_].store(false, std::memory_order_release); }
        Lease(const Lease &) = delete;
        Lease &operator=(const Lease &) = delete;
        size_t index() const { return i_; }

    private:
        const SlotPool &pool_;
        size_t i_ = 0;
    };

private:
    std::unique_ptr<std::atomic<bool>[]> busy_;
    int64_t n_ = 0;
};

}  // namespace acp

#endif  // ACLNN_CPU_SLOT_POOL_HPP_
