// Product tour: the same AvgPool2dBackward calls under every Ascend product profile. Shows which
// calls each product accepts, the status and message of the ones it rejects, and how cubeMathType
// changes the numbers (FLOAT16 rounding on the training series, HF32 on A2/A3). Results of accepted
// calls are checked against a small double-precision reference; the exit status says if all matched.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_avgpool2d_backward.h"

namespace {

const char *kProducts[] = {"atlas-training", "atlas-inference", "atlas-a2", "atlas-a3", "atlas-200i-500-a2"};

struct Call {
    const char *what;
    aclDataType dtype;
    int8_t cube;
};
const Call kCalls[] = {
    {"FLOAT,    cubeMathType 0 (KEEP_DTYPE)", ACL_FLOAT, 0},
    {"FLOAT,    cubeMathType 1 (ALLOW_FP32_DOWN_PRECISION)", ACL_FLOAT, 1},
    {"FLOAT16,  cubeMathType 0", ACL_FLOAT16, 0},
    {"BFLOAT16, cubeMathType 0", ACL_BF16, 0},
    {"BFLOAT16, cubeMathType 2 (USE_FP16)", ACL_BF16, 2},
};

uint16_t to_half(float f) {  // exact for the values used here (small, representable)
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffff) == 0) return static_cast<uint16_t>(u >> 16);
    const int e = static_cast<int>((u >> 23) & 0xff) - 127 + 15;
    return static_cast<uint16_t>(((u >> 16) & 0x8000) | (e << 10) | ((u >> 13) & 0x3ff));
}
float from_half(uint16_t h) {
    const int e = (h >> 10) & 0x1f;
    const float m = static_cast<float>(h & 0x3ff);
    const float v = e ? std::ldexp(1.0f + m / 1024.0f, e - 15) : std::ldexp(m / 1024.0f, -14);
    return (h & 0x8000) ? -v : v;
}
uint16_t to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return static_cast<uint16_t>(u >> 16);
}
float from_bf16(uint16_t b) {
    uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// 1x1x3x3 input, kernel 2, stride 1: each input sums the windows covering it, divided by 4.
const int64_t kIn[4] = {1, 1, 3, 3}, kOut[4] = {1, 1, 2, 2};
const float kGrad[4] = {1.0f / 3.0f, 2.0f, -1.5f, 0.1f};  // 1/3 and 0.1 show the cube rounding

double reference(int i) {  // double precision, no rounding of the inputs
    const int h = i / 3, w = i % 3;
    double s = 0;
    for (int oh = 0; oh < 2; ++oh)
        for (int ow = 0; ow < 2; ++ow)
            if (h >= oh && h < oh + 2 && w >= ow && w < ow + 2) s += kGrad[oh * 2 + ow] / 4.0;
    return s;
}

std::string run(const Call &c, std::vector<double> &result) {
    const size_t es = c.dtype == ACL_FLOAT ? 4 : 2;
    std::vector<uint8_t> go(4 * es), self(9 * es, 0), gi(9 * es, 0);
    for (int i = 0; i < 4; ++i) {
        if (c.dtype == ACL_FLOAT) std::memcpy(&go[i * 4], &kGrad[i], 4);
        else {
            const uint16_t v = c.dtype == ACL_FLOAT16 ? to_half(kGrad[i]) : to_bf16(kGrad[i]);
            std::memcpy(&go[i * 2], &v, 2);
        }
    }
    const int64_t s_in[4] = {9, 9, 3, 1}, s_out[4] = {4, 4, 2, 1}, k[2] = {2, 2}, st[2] = {1, 1}, p[2] = {0, 0};
    aclTensor *tgo = aclCreateTensor(kOut, 4, c.dtype, s_out, 0, ACL_FORMAT_NCHW, kOut, 4, go.data());
    aclTensor *tself = aclCreateTensor(kIn, 4, c.dtype, s_in, 0, ACL_FORMAT_NCHW, kIn, 4, self.data());
    aclTensor *tgi = aclCreateTensor(kIn, 4, c.dtype, s_in, 0, ACL_FORMAT_NCHW, kIn, 4, gi.data());
    aclIntArray *kernel = aclCreateIntArray(k, 2), *stride = aclCreateIntArray(st, 2), *pad = aclCreateIntArray(p, 2);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    std::string status;
    aclnnStatus ret = aclnnAvgPool2dBackwardGetWorkspaceSize(tgo, tself, kernel, stride, pad, false, true, 0, c.cube, tgi,
                                                             &ws, &exec);
    if (ret != 0) {
        const char *msg = aclGetRecentErrMsg();
        status = "rejected " + std::to_string(ret) + ": " + (msg ? msg : "");
    } else {
        std::vector<uint8_t> workspace(ws + 1);
        ret = aclnnAvgPool2dBackward(ws ? workspace.data() : nullptr, ws, exec, nullptr);
        status = ret == 0 ? "ok (workspace " + std::to_string(ws) + " B)" : "run failed " + std::to_string(ret);
        for (int i = 0; i < 9 && ret == 0; ++i) {
            float v;
            if (c.dtype == ACL_FLOAT) std::memcpy(&v, &gi[i * 4], 4);
            else {
                uint16_t h;
                std::memcpy(&h, &gi[i * 2], 2);
                v = c.dtype == ACL_FLOAT16 ? from_half(h) : from_bf16(h);
            }
            result.push_back(v);
        }
    }
    aclDestroyTensor(tgo);
    aclDestroyTensor(tself);
    aclDestroyTensor(tgi);
    aclDestroyIntArray(kernel);
    aclDestroyIntArray(stride);
    aclDestroyIntArray(pad);
    return status;
}

}  // namespace

int main() {
    int mismatches = 0;
    const std::string config = "/tmp/aclnn_cpu_product_tour.yaml";
    for (const char *product : kProducts) {
        FILE *f = std::fopen(config.c_str(), "w");
        if (!f) return 2;
        std::fprintf(f, "product: %s\n", product);
        std::fclose(f);
        if (aclInit(config.c_str()) != ACL_SUCCESS) {
            std::printf("aclInit(%s) failed: %s\n", product, aclGetRecentErrMsg());
            return 2;
        }
        std::printf("\n== %s (SoC %s)\n", product, aclrtGetSocName());
        for (const Call &c : kCalls) {
            std::vector<double> r;
            const std::string status = run(c, r);
            std::printf("  %-52s %s\n", c.what, status.c_str());
            if (r.empty()) continue;
            // Center element: all four windows cover it. Tolerance: the dtype's rounding plus the cube's.
            const double tol = c.dtype == ACL_BF16 ? 8e-3 : (c.dtype == ACL_FLOAT16 || c.cube == 1) ? 1e-3 : 1e-6;
            double worst = 0;
            for (int i = 0; i < 9; ++i) worst = std::fmax(worst, std::fabs(r[i] - reference(i)));
            const bool ok = worst <= tol;
            mismatches += !ok;
            std::printf("  %-52s   center %.9f (exact %.9f), max error %.2e %s\n", "", r[4], reference(4), worst,
                        ok ? "[checked]" : "[MISMATCH]");
        }
        aclFinalize();
    }
    std::printf("\n%s: every accepted call matched the reference\n", mismatches ? "FAILED" : "PASSED");
    return mismatches ? 1 : 0;
}
