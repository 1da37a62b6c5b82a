// Independent reference of ConvolutionBackward / Convolution for the tests: plain loops in double,
// written from ops.md's formulas, sharing no code with the plugin.
//   plain:      gradOutput[n][co][o] pairs with input[n][ci][i] where i = o*stride - padL + k*dilation,
//               weight[co][ci - g*Cin/G][k]  (g = co / (Cout/G))
//   transposed: gradOutput[n][co][o] pairs with input[n][ci][i] where o = i*stride - padL + k*dilation,
//               weight[ci][co - g*Cout/G][k]  (g = ci / (Cin/G))
// Each pair contributes gradInput += gradOutput*weight, gradWeight += input*gradOutput,
// output (forward) += input*weight; gradBias[co] = sum of gradOutput.
#ifndef CONVOLUTION_TESTS_CONV_REFERENCE_HPP_
#define CONVOLUTION_TESTS_CONV_REFERENCE_HPP_

#include <array>
#include <cstdint>
#include <vector>

namespace cref {

struct Conv {
    int sd = 2;                                  // spatial dims
    int64_t N = 1, Cin = 1, Cout = 1, G = 1;     // Cin: input channels, Cout: gradOutput channels
    std::array<int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, d{1, 1, 1}, pl{0, 0, 0}, pr{0, 0, 0}, op{0, 0, 0};
    bool transposed = false;

    int64_t outSize(int i) const {
        if (transposed) return (in[i] - 1) * s[i] - pl[i] - pr[i] + d[i] * (k[i] - 1) + 1 + op[i];
        return (in[i] + pl[i] + pr[i] - d[i] * (k[i] - 1) - 1) / s[i] + 1;
    }
    std::array<int64_t, 3> out() const { return {outSize(0), outSize(1), outSize(2)}; }
    std::vector<int64_t> spatial(const std::array<int64_t, 3> &a) const {
        return std::vector<int64_t>(a.begin(), a.begin() + sd);
    }
    std::vector<int64_t> inputDims() const {
        auto v = std::vector<int64_t>{N, Cin};
        for (auto x : spatial(in)) v.push_back(x);
        return v;
    }
    std::vector<int64_t> gradOutputDims() const {
        auto v = std::vector<int64_t>{N, Cout};
        for (auto x : spatial(out())) v.push_back(x);
        return v;
    }
    std::vector<int64_t> weightDims() const {
        auto v = transposed ? std::vector<int64_t>{Cin, Cout / G} : std::vector<int64_t>{Cout, Cin / G};
        for (auto x : spatial(k)) v.push_back(x);
        return v;
    }
    // How many (input, gradOutput, weight) triples forEachPair visits: the reference's cost.
    int64_t work() const {
        const auto o = out();
        int64_t drive = 1, kk = 1;
        for (size_t i = 0; i < 3; ++i) drive *= transposed ? in[i] : o[i], kk *= k[i];
        return N * (Cin / G) * Cout * kk * drive;
    }
    static int64_t count(const std::vector<int64_t> &d) {
        int64_t n = 1;
        for (auto x : d) n *= x;
        return n;
    }
};

struct Grads {
    std::vector<double> gradInput, gradWeight, gradBias;
};

// Calls f(input index, gradOutput index, weight index) for every contributing triple.
template <class F>
void forEachPair(const Conv &c, F &&f) {
    const auto o = c.out();
    const int64_t inPlane = c.in[0] * c.in[1] * c.in[2], outPlane = o[0] * o[1] * o[2], kk = c.k[0] * c.k[1] * c.k[2];
    const int64_t cinG = c.Cin / c.G, coutG = c.Cout / c.G;
    for (int64_t n = 0; n < c.N; ++n)
        for (int64_t g = 0; g < c.G; ++g)
            for (int64_t cil = 0; cil < cinG; ++cil)
                for (int64_t col = 0; col < coutG; ++col) {
                    const int64_t ci = g * cinG + cil, co = g * coutG + col;
                    const int64_t wbase = c.transposed ? (ci * coutG + col) * kk : (co * cinG + cil) * kk;
                    for (int64_t k0 = 0; k0 < c.k[0]; ++k0)
                        for (int64_t k1 = 0; k1 < c.k[1]; ++k1)
                            for (int64_t k2 = 0; k2 < c.k[2]; ++k2) {
                                const int64_t kidx = (k0 * c.k[1] + k1) * c.k[2] + k2;
                                const int64_t ks[3] = {k0, k1, k2};
                                // iterate the "driving" side, derive the other
                                const auto &drive = c.transposed ? c.in : o;
                                const auto &other = c.transposed ? o : c.in;
                                for (int64_t a0 = 0; a0 < drive[0]; ++a0)
                                    for (int64_t a1 = 0; a1 < drive[1]; ++a1)
                                        for (int64_t a2 = 0; a2 < drive[2]; ++a2) {
                                            const int64_t a[3] = {a0, a1, a2};
                                            int64_t b[3];
                                            bool ok = true;
                                            for (int i = 0; i < 3; ++i) {
                                                b[i] = a[i] * c.s[i] - c.pl[i] + ks[i] * c.d[i];
                                                ok = ok && b[i] >= 0 && b[i] < other[i];
                                            }
                                            if (!ok) continue;
                                            const int64_t aLin = (a0 * drive[1] + a1) * drive[2] + a2;
                                            const int64_t bLin = (b[0] * other[1] + b[1]) * other[2] + b[2];
                                            const int64_t inIdx = (n * c.Cin + ci) * inPlane + (c.transposed ? aLin : bLin);
                                            const int64_t outIdx = (n * c.Cout + co) * outPlane + (c.transposed ? bLin : aLin);
                                            f(inIdx, outIdx, wbase + kidx);
                                        }
                            }
                }
}

inline Grads backward(const Conv &c, const std::vector<double> &gradOutput, const std::vector<double> &input,
                      const std::vector<double> &weight) {
    Grads r;
    r.gradInput.assign(input.size(), 0.0);
    r.gradWeight.assign(weight.size(), 0.0);
    r.gradBias.assign(static_cast<size_t>(c.Cout), 0.0);
    forEachPair(c, [&](int64_t i, int64_t o, int64_t w) {
        r.gradInput[static_cast<size_t>(i)] += gradOutput[static_cast<size_t>(o)] * weight[static_cast<size_t>(w)];
        r.gradWeight[static_cast<size_t>(w)] += input[static_cast<size_t>(i)] * gradOutput[static_cast<size_t>(o)];
    });
    const int64_t plane = static_cast<int64_t>(gradOutput.size()) / (c.N * c.Cout);
    for (int64_t n = 0; n < c.N; ++n)
        for (int64_t co = 0; co < c.Cout; ++co)
            for (int64_t p = 0; p < plane; ++p) r.gradBias[static_cast<size_t>(co)] += gradOutput[static_cast<size_t>((n * c.Cout + co) * plane + p)];
    return r;
}

// Forward: output (gradOutput-shaped) = conv(input, weight) + bias.
inline std::vector<double> forward(const Conv &c, const std::vector<double> &input, const std::vector<double> &weight,
                                   const std::vector<double> *bias) {
    std::vector<double> out(static_cast<size_t>(Conv::count(c.gradOutputDims())), 0.0);
    forEachPair(c, [&](int64_t i, int64_t o, int64_t w) {
        out[static_cast<size_t>(o)] += input[static_cast<size_t>(i)] * weight[static_cast<size_t>(w)];
    });
    if (bias) {
        const int64_t plane = static_cast<int64_t>(out.size()) / (c.N * c.Cout);
        for (size_t e = 0; e < out.size(); ++e) out[e] += (*bias)[static_cast<size_t>((static_cast<int64_t>(e) / plane) % c.Cout)];
    }
    return out;
}

}  // namespace cref

#endif  // CONVOLUTION_TESTS_CONV_REFERENCE_HPP_
