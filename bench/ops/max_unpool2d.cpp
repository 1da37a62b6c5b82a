// aclnn-cpu-bench cases: MaxUnpool2dBackward (a gather) and its forward companion MaxUnpool2d.
//
// Indices are real max-pool argmaxes (k3 s2 p1 or k2 s2 over pseudo-random data), so the gather
// walks gradOutput as it does in training, not uniformly at random.
// Bytes counted, backward: indices read + out written + every 64-byte line of gradOutput that an
// index names (64 bytes each; gradOutput is 64-byte aligned with its planes back to back). That is
// the least the gather must move: the memory system reads whole lines, and a line is read once if
// it is read at all. For these argmax indices it is nearly all of gradOutput (a k2 s2 line of 16
// FLOATs is missed only when none of its 8 windows chose its row), counted exactly per case from
// the indices themselves; lines no index names are not counted. `self` only gives the shape.
// Forward: self + indices read, the whole out written (it is zero-filled).
// PyTorch peer (FLOAT only; PyTorch 1.13 has no max_unpool2d backward): the equivalent gather
// torch.gather(gradOutput.flatten(2), 2, indices.flatten(2), out=...) on preallocated tensors with
// the same kind of indices; forward: aten::max_unpool2d.out.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "aclnnop/aclnn_max_unpool2d.h"
#include "aclnnop/aclnn_max_unpool2d_backward.h"
#include "bench.hpp"

namespace {

struct Unpool {
    int64_t n, c, h, w;   // self / indices / out of the backward
    int64_t oh, ow;       // gradOutput (the pooled-from plane)
    int64_t k, s, p;      // the max pool that made the indices

    std::vector<int64_t> small() const { return {n, c, h, w}; }
    std::vector<int64_t> big() const { return {n, c, oh, ow}; }
    std::string desc() const {
        return "mb" + std::to_string(n) + "ic" + std::to_string(c) + "ih" + std::to_string(h) + "oh" + std::to_string(oh);
    }
    std::string pool() const {
        return "k" + std::to_string(k) + "s" + std::to_string(s) + (p ? "p" + std::to_string(p) : std::string());
    }
    std::string torch_indices() const {  // the same kind of argmax indices, made by PyTorch itself
        return "_x = randn(" + bench::py_list(big()) + ", dtype=torch.float32)\n" +
               "_, idx = torch.nn.functional.max_pool2d(_x, " + std::to_string(k) + ", " + std::to_string(s) + ", " +
               std::to_string(p) + ", return_indices=True)\n" + "del _x\n";
    }
};

// Pseudo-random value of one input position (splitmix64 of the position), for the argmax.
double value_at(uint64_t pos) {
    uint64_t z = pos * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return static_cast<double>((z ^ (z >> 31)) >> 11);
}

// Calls fn(i, plane, q) with the max-pool argmax q (flat h*W + w inside the plane) of every
// position i of u's (N, C, H, W) indices, in order.
template <class Fn>
void for_each_argmax(const Unpool &u, Fn &&fn) {
    std::vector<double> value(static_cast<size_t>(u.oh * u.ow));  // one plane's values, hashed once
    int64_t i = 0;
    for (int64_t plane = 0; plane < u.n * u.c; ++plane) {
        for (int64_t q = 0; q < u.oh * u.ow; ++q) value[static_cast<size_t>(q)] = value_at(static_cast<uint64_t>(plane * u.oh * u.ow + q));
        for (int64_t y = 0; y < u.h; ++y)
            for (int64_t x = 0; x < u.w; ++x, ++i) {
                int64_t best = -1;
                double bestValue = -1;
                for (int64_t ky = 0; ky < u.k; ++ky)
                    for (int64_t kx = 0; kx < u.k; ++kx) {
                        const int64_t iy = y * u.s - u.p + ky, ix = x * u.s - u.p + kx;
                        if (iy < 0 || ix < 0 || iy >= u.oh || ix >= u.ow) continue;
                        const int64_t q = iy * u.ow + ix;
                        if (value[static_cast<size_t>(q)] > bestValue) {
                            bestValue = value[static_cast<size_t>(q)];
                            best = q;
                        }
                    }
                fn(i, plane, best);
            }
    }
}

// Writes the argmaxes into `indices`.
void fill_argmax(const Unpool &u, aclTensor *indices, aclDataType idxDt) {
    void *data = nullptr;
    if (aclGetRawTensorAddr(indices, &data) != ACLNN_SUCCESS || !data) throw bench::CallError("aclGetRawTensorAddr", -1, "");
    for_each_argmax(u, [&](int64_t i, int64_t, int64_t q) {
        if (idxDt == ACL_INT64)
            static_cast<int64_t *>(data)[i] = q;
        else
            static_cast<int32_t *>(data)[i] = static_cast<int32_t>(q);
    });
}

// Bytes of the distinct 64-byte lines of gradOutput (elements of `elem` bytes) the argmaxes name.
// One pass per geometry counts them for element sizes 1, 2, 4 and 8 (several cases share one).
double lines_gathered(const Unpool &u, size_t elem) {
    static std::map<std::vector<int64_t>, std::array<double, 4>> cache;
    const std::vector<int64_t> key{u.n, u.c, u.h, u.w, u.oh, u.ow, u.k, u.s, u.p};
    const int log2 = elem == 1 ? 0 : elem == 2 ? 1 : elem == 4 ? 2 : 3;
    if (auto it = cache.find(key); it != cache.end()) return it->second[static_cast<size_t>(log2)];
    std::array<std::vector<uint64_t>, 4> seen;  // one bit per line
    for (int b = 0; b < 4; ++b) seen[static_cast<size_t>(b)].assign(static_cast<size_t>((u.n * u.c * u.oh * u.ow << b) / 64 / 64 + 1), 0);
    for_each_argmax(u, [&](int64_t, int64_t plane, int64_t q) {
        if (q < 0) return;
        for (int b = 0; b < 4; ++b) {
            const int64_t line = ((plane * u.oh * u.ow + q) << b) / 64;
            seen[static_cast<size_t>(b)][static_cast<size_t>(line / 64)] |= uint64_t{1} << (line % 64);
        }
    });
    std::array<double, 4> bytes{};
    for (int b = 0; b < 4; ++b)
        for (uint64_t w : seen[static_cast<size_t>(b)]) bytes[static_cast<size_t>(b)] += 64.0 * __builtin_popcountll(w);
    return (cache[key] = bytes)[static_cast<size_t>(log2)];
}

bench::Case backward_case(const Unpool &u, aclDataType dt, aclDataType idxDt, bool quick, aclDataType outDt,
                          const std::string &product = "atlas-a2") {
    bench::Case c;
    c.op = "MaxUnpool2dBackward";
    c.shape = u.desc();
    c.variant = u.pool() + (idxDt == ACL_INT32 ? "_idx32" : "") + (outDt != dt ? std::string("_to_") + bench::dtype_name(outDt) : "");
    c.dtype = dt;
    c.product = product;
    c.quick = quick;
    c.work = bench::Work::bytes(bench::numel(u.small()) * static_cast<double>(bench::dtype_size(idxDt)) + lines_gathered(u, bench::dtype_size(dt)),
                                bench::numel(u.small()) * static_cast<double>(bench::dtype_size(outDt)));
    c.prepare = [u, dt, idxDt, outDt](bench::Prepared &pr) {
        aclTensor *gradOutput = pr.tensor(u.big(), dt);
        aclTensor *self = pr.tensor(u.small(), dt, bench::Fill::Zero);
        aclTensor *indices = pr.tensor(u.small(), idxDt, bench::Fill::Zero);
        fill_argmax(u, indices, idxDt);
        aclTensor *out = pr.tensor(u.small(), outDt, bench::Fill::Zero);
        aclIntArray *outputSize = pr.ints({u.oh, u.ow});
        BENCH_PLAN(pr, aclnnMaxUnpool2dBackward, gradOutput, self, indices, outputSize, out);
    };
    if (dt == ACL_FLOAT && outDt == ACL_FLOAT && idxDt == ACL_INT64)
        c.torch = "go = randn(" + bench::py_list(u.big()) + ")\n" + u.torch_indices() + "out = zeros(" +
                  bench::py_list(u.small()) + ")\n" +
                  "_g, _i, _o = go.flatten(2), idx.flatten(2), out.flatten(2)\n"
                  "fn = lambda: torch.gather(_g, 2, _i, out=_o)\n";
    return c;
}

bench::Case forward_case(const Unpool &u, aclDataType dt, bool quick) {
    bench::Case c;
    c.op = "MaxUnpool2d";
    c.shape = u.desc();
    c.variant = u.pool();
    c.dtype = dt;
    c.quick = quick;
    c.work = bench::Work::bytes(bench::numel(u.small()) * static_cast<double>(bench::dtype_size(dt) + 8),
                                bench::numel(u.big()) * static_cast<double>(bench::dtype_size(dt)));
    c.prepare = [u, dt](bench::Prepared &pr) {
        aclTensor *self = pr.tensor(u.small(), dt);
        aclTensor *indices = pr.tensor(u.small(), ACL_INT64, bench::Fill::Zero);
        fill_argmax(u, indices, ACL_INT64);
        aclTensor *out = pr.tensor(u.big(), dt, bench::Fill::Zero);
        aclIntArray *outputSize = pr.ints({u.oh, u.ow});
        BENCH_PLAN(pr, aclnnMaxUnpool2d, self, indices, outputSize, out);
    };
    if (dt == ACL_FLOAT)
        c.torch = "x = randn(" + bench::py_list(u.small()) + ")\n" + u.torch_indices() + "out = zeros(" +
                  bench::py_list(u.big()) + ")\n" + "fn = lambda: torch.ops.aten.max_unpool2d.out(x, idx, " +
                  bench::py_list({u.oh, u.ow}) + ", out=out)\n";
    return c;
}

}  // namespace

BENCH_OP(MaxUnpool2dBackward) {
    // performance.md: 32x64x112x112 pooled to 56x56 (k3 s2 p1 and k2 s2), and 32x64x28x28 <- 56x56.
    const Unpool k3{32, 64, 56, 56, 112, 112, 3, 2, 1};
    const Unpool k2{32, 64, 56, 56, 112, 112, 2, 2, 0};
    const Unpool small{32, 64, 28, 28, 56, 56, 2, 2, 0};
    // (bars: >= 60 % of copy, and >= 1x PyTorch's gather where it has one: FLOAT with INT64 indices)
    auto held = [](bench::Case c) {
        c.bars.pct_of_limit = 60;
        if (!c.torch.empty()) c.bars.speedup = 1;
        return c;
    };
    for (const Unpool &u : {k3, k2, small}) cases.push_back(held(backward_case(u, ACL_FLOAT, ACL_INT64, false, ACL_FLOAT)));
    cases.push_back(held(backward_case(k3, ACL_FLOAT, ACL_INT32, false, ACL_FLOAT)));
    cases.push_back(held(backward_case(k3, ACL_FLOAT16, ACL_INT64, false, ACL_FLOAT16)));
    cases.push_back(held(backward_case(k3, ACL_FLOAT16, ACL_INT64, false, ACL_FLOAT)));  // the cast through the store node

    // whole calls (phase 1 + phase 2 each run): a tiny plane, and one image of the 56 -> 112 shape
    cases.push_back(bench::whole_call(backward_case(Unpool{1, 2, 4, 4, 8, 8, 2, 2, 0}, ACL_FLOAT, ACL_INT64, false, ACL_FLOAT)));
    cases.push_back(bench::whole_call(backward_case(Unpool{1, 64, 56, 56, 112, 112, 3, 2, 1}, ACL_FLOAT, ACL_INT64, false, ACL_FLOAT)));

    // --quick smoke set: tiny problems, the dtype paths, the cast, another product
    const Unpool tiny{2, 16, 14, 14, 28, 28, 2, 2, 0};
    cases.push_back(backward_case(tiny, ACL_FLOAT, ACL_INT64, true, ACL_FLOAT));
    cases.push_back(backward_case(tiny, ACL_INT8, ACL_INT32, true, ACL_INT8));
    cases.push_back(backward_case(tiny, ACL_FLOAT16, ACL_INT64, true, ACL_FLOAT));
    cases.push_back(backward_case(tiny, ACL_FLOAT, ACL_INT32, true, ACL_FLOAT, "atlas-training"));
}

BENCH_OP(MaxUnpool2d) {
    cases.push_back(forward_case(Unpool{32, 64, 56, 56, 112, 112, 3, 2, 1}, ACL_FLOAT, false));
    cases.push_back(forward_case(Unpool{2, 16, 14, 14, 28, 28, 2, 2, 0}, ACL_FLOAT, true));
}
