// The idle passes of pass_cache.hpp: one list per kind, most recently returned first.
#include "pass_cache.hpp"

#include <algorithm>
#include <list>
#include <mutex>
#include <utility>
#include <vector>

namespace conv {
namespace {

using Key = std::vector<int64_t>;

Key key_of(const Geometry &g, std::initializer_list<int64_t> extra) {
    Key k{g.sd, g.N, g.IC, g.OC, g.G};
    for (const auto *a : {&g.src, &g.dst, &g.k, &g.stride, &g.dil, &g.pad_l, &g.pad_r, &g.src_used})
        k.insert(k.end(), a->begin(), a->end());
    k.insert(k.end(), extra);
    return k;
}

template <class Pass>
class IdlePasses {
public:
    template <class Build>
    std::shared_ptr<Pass> lend(Key key, bool *reused, Build &&build) {
        std::unique_ptr<Pass> pass;
        {
            const std::lock_guard<std::mutex> lock(m_);
            const auto it = std::find_if(idle_.begin(), idle_.end(), [&](const auto &e) { return e.first == key; });
            if (it != idle_.end()) {
                pass = std::move(it->second);
                idle_.erase(it);
            }
        }
        if (reused) *reused = pass != nullptr;
        if (!pass) pass = build();
        // The deleter gives the pass back; the lists are never destroyed (see passes()), so it may
        // run at any time, even during exit.
        return std::shared_ptr<Pass>(pass.release(), [this, key = std::move(key)](Pass *p) noexcept { give_back(key, p); });
    }

private:
    void give_back(const Key &key, Pass *p) noexcept {
        std::unique_ptr<Pass> pass(p), evicted;
        try {
            const std::lock_guard<std::mutex> lock(m_);
            idle_.emplace_front(key, std::move(pass));
            if (idle_.size() > kIdlePasses) {
                evicted = std::move(idle_.back().second);
                idle_.pop_back();
            }
        } catch (...) {  // (out of memory for the list node: the pass is simply destroyed)
        }
        // pass / evicted, when set, are destroyed here, outside the lock
    }

    std::mutex m_;
    std::list<std::pair<Key, std::unique_ptr<Pass>>> idle_;
};

// Never destroyed: a plan may be released after static destructors ran (an executor the program
// never destroyed), and its pass must still have somewhere to go.
IdlePasses<DataPass> &data_passes() {
    static auto *p = new IdlePasses<DataPass>;
    return *p;
}
IdlePasses<WeightPass> &weight_passes() {
    static auto *p = new IdlePasses<WeightPass>;
    return *p;
}

}  // namespace

std::shared_ptr<DataPass> lend_data_pass(const Geometry &g, DataPass::Kind kind, Dt dt, int64_t threads, bool *reused) {
    return data_passes().lend(key_of(g, {static_cast<int64_t>(kind), static_cast<int64_t>(dt), threads}), reused,
                              [&] { return std::make_unique<DataPass>(g, kind, dt, threads); });
}

std::shared_ptr<WeightPass> lend_weight_pass(const Geometry &g, Dt dt, int64_t threads, bool *reused) {
    return weight_passes().lend(key_of(g, {static_cast<int64_t>(dt), threads}), reused,
                                [&] { return std::make_unique<WeightPass>(g, dt, threads); });
}

}  // namespace conv
