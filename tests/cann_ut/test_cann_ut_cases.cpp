// CANN's own op_api unit tests, replayed against this library. Each plugin's tests/cann_ut/*.yaml
// holds the cases of Huawei's published UTs of one operator as data (the arguments, the product the
// UT's SoC maps to, and the phase-1 status Huawei's test expects); README.md beside this file says how
// they were taken. Every case must answer here what Huawei's test expects, or what its `ours:`
// records, with the reason in `why:` (a deviation is pinned, not skipped).
//
// Tensors get a PROT_NONE reservation of their storage as data: phase 1 must not read any data, and
// a reservation per tensor keeps the aliasing checks meaningful. Accepted calls of modest size then
// run with zeroed memory (runsToTheEnd).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "acltest.hpp"
#include "guarded_tensor.hpp"
#include "reserved_storage.hpp"
#include "aclnn_cpu/dtype.hpp"
#include "aclnn_cpu/opapi_abi.h"
#include "manifest.hpp"

namespace {

namespace fs = std::filesystem;

// The status names CANN's tests use.
const std::map<std::string, aclnnStatus> &statusNames() {
    static const std::map<std::string, aclnnStatus> m = {
        {"ACLNN_SUCCESS", ACLNN_SUCCESS},
        {"ACL_SUCCESS", ACLNN_SUCCESS},
        {"ACLNN_ERR_PARAM_NULLPTR", ACLNN_ERR_PARAM_NULLPTR},
        {"ACLNN_ERR_PARAM_INVALID", ACLNN_ERR_PARAM_INVALID},
        {"ACLNN_ERR_RUNTIME_ERROR", ACLNN_ERR_RUNTIME_ERROR},
        {"ACLNN_ERR_INNER", ACLNN_ERR_INNER},
        {"ACLNN_ERR_INNER_INFERSHAPE_ERROR", ACLNN_ERR_INNER_INFERSHAPE_ERROR},
        {"ACLNN_ERR_INNER_TILING_ERROR", ACLNN_ERR_INNER_TILING_ERROR},
        {"ACLNN_ERR_INNER_FIND_KERNEL_ERROR", ACLNN_ERR_INNER_FIND_KERNEL_ERROR},
        {"ACLNN_ERR_INNER_CREATE_EXECUTOR", ACLNN_ERR_INNER_CREATE_EXECUTOR},
        {"ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR", ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR},
        {"ACLNN_ERR_INNER_NULLPTR", ACLNN_ERR_INNER_NULLPTR}};
    return m;
}

// An expectation: a status, or ("!X") any status but X.
struct Expect {
    aclnnStatus status = ACLNN_SUCCESS;
    bool negated = false;
    std::string text;
    bool met(aclnnStatus s) const { return negated ? s != status : s == status; }
};

Expect parseExpect(const std::string &text) {
    Expect e;
    e.text = text;
    std::string name = text;
    if (!name.empty() && name[0] == '!') e.negated = true, name.erase(0, 1);
    const auto it = statusNames().find(name);
    if (it == statusNames().end()) throw std::runtime_error("unknown status '" + text + "'");
    e.status = it->second;
    return e;
}

using acltest::Storage;  // reserved_storage.hpp

std::vector<int64_t> ints(const YAML::Node &n) {
    std::vector<int64_t> v;
    for (const auto &e : n) v.push_back(e.as<int64_t>());
    return v;
}

// The elements a view reaches in its storage when no storage shape is given.
int64_t extentOf(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides, int64_t offset) {
    int64_t last = offset;
    for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == 0) return 0;
        last += (shape[d] - 1) * strides[d];
    }
    return last + 1;
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape) {
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * std::max<int64_t>(shape[d], 1);
    return s;
}

// The arguments of one case, alive for its call.
class CallArgs {
public:
    // `real`: tensors get zeroed memory, for phase 2; else unreadable reservations.
    CallArgs(const aclcpu::OpManifest &op, const YAML::Node &args, bool real = false) : real_(real) {
        for (const auto &p : op.params) {
            const YAML::Node n = args[p.name];
            if (!n) throw std::runtime_error("no argument '" + p.name + "'");
            aclnnCpuCallArg a{};
            a.kind = aclcpu::param_arg_kind(p.type);
            const bool null = n.IsNull();
            switch (p.type) {
                case aclcpu::ParamType::Tensor: a.ptr = null ? nullptr : tensor(n); break;
                case aclcpu::ParamType::IntArray:
                    if (!null) {
                        const auto v = ints(n);
                        intArrays_.emplace_back(aclCreateIntArray(v.data(), v.size()), aclDestroyIntArray);
                        a.ptr = intArrays_.back().get();
                    }
                    break;
                case aclcpu::ParamType::BoolArray:
                    if (!null) {
                        std::unique_ptr<bool[]> raw(new bool[n.size() + 1]);
                        for (size_t k = 0; k < n.size(); ++k) raw[k] = n[k].as<bool>();
                        boolArrays_.emplace_back(aclCreateBoolArray(raw.get(), n.size()), aclDestroyBoolArray);
                        a.ptr = boolArrays_.back().get();
                    }
                    break;
                case aclcpu::ParamType::Bool: a.i = n.as<bool>(); break;
                case aclcpu::ParamType::Float:
                case aclcpu::ParamType::Double: a.f = n.as<double>(); break;
                case aclcpu::ParamType::Int64:
                case aclcpu::ParamType::Int32:
                case aclcpu::ParamType::Int:
                case aclcpu::ParamType::Int8: a.i = n.as<int64_t>(); break;
                default: throw std::runtime_error("parameter '" + p.name + "': a type this runner does not build");
            }
            packed_.push_back(a);
        }
    }
    const aclnnCpuCallArg *data() const { return packed_.data(); }
    const std::string &refused() const { return refused_; }  // what aclCreateTensor refused, or ""
    size_t bytes() const { return bytes_; }                      // the tensors' storage, in all
    uint32_t size() const { return static_cast<uint32_t>(packed_.size()); }

private:
    const aclTensor *tensor(const YAML::Node &n) {
        const auto shape = ints(n["shape"]);
        const std::string dtName = n["dtype"].as<std::string>();
        const auto dt = dtName == "UNDEFINED" || dtName == "DT_UNDEFINED" ? std::optional<int32_t>(ACL_DT_UNDEFINED) : acp::parse_dtype(dtName);
        const std::string fmtName = n["format"].as<std::string>();
        const auto fmt = fmtName == "UNDEFINED" ? std::optional<int32_t>(ACL_FORMAT_UNDEFINED) : acp::parse_format(fmtName);
        if (!dt || !fmt) throw std::runtime_error("unknown dtype or format in " + YAML::Dump(n));
        const auto strides = n["strides"] ? ints(n["strides"]) : contiguousStrides(shape);
        const int64_t offset = n["offset"] ? n["offset"].as<int64_t>() : 0;
        const auto storage = n["storage"] ? ints(n["storage"]) : std::vector<int64_t>{extentOf(shape, strides, offset)};
        int64_t elements = 1;
        for (int64_t d : storage) elements = d > 0 && elements <= (int64_t{1} << 40) / d ? elements * d : (d == 0 ? 0 : int64_t{1} << 40);
        const size_t bytes = static_cast<size_t>(elements) * std::max<size_t>(acp::dtype_size(*dt), 1);
        bytes_ += bytes;
        data_.push_back(std::make_unique<Storage>(bytes, real_));
        tensors_.emplace_back(aclCreateTensor(shape.data(), shape.size(), static_cast<aclDataType>(*dt), strides.data(), offset,
                                              static_cast<aclFormat>(*fmt), storage.data(), storage.size(), data_.back()->get()),
                              aclDestroyTensor);
        // A descriptor our aclCreateTensor refuses reaches the call as NULL, as in a client that does
        // not check; the case's `ours:` records that.
        if (!tensors_.back()) refused_ += (refused_.empty() ? "" : "; ") + YAML::Dump(n) + ": " + acltest::recentErr();
        return tensors_.back().get();
    }

    bool real_;
    size_t bytes_ = 0;
    std::vector<aclnnCpuCallArg> packed_;
    std::string refused_;
    std::vector<std::unique_ptr<Storage>> data_;
    std::vector<std::unique_ptr<aclTensor, aclnnStatus (*)(const aclTensor *)>> tensors_;
    std::vector<std::unique_ptr<aclIntArray, aclnnStatus (*)(const aclIntArray *)>> intArrays_;
    std::vector<std::unique_ptr<aclBoolArray, aclnnStatus (*)(const aclBoolArray *)>> boolArrays_;
};

// The operator a case file names, from the manifest of the plugin the file lives in.
aclcpu::OpManifest operatorOf(const fs::path &caseFile, const std::string &name) {
    const fs::path manifest = caseFile.parent_path().parent_path().parent_path() / "manifest.yaml";
    for (const auto &op : aclcpu::parse_manifest(manifest.string()).ops)
        if (op.name == name) return op;
    throw std::runtime_error(manifest.string() + " declares no operator " + name);
}

std::vector<std::string> caseFiles() {
    std::vector<std::string> v;
    std::stringstream list(ACLNN_CPU_CANN_UT_FILES);  // '|'-separated (CMake owns ';')
    for (std::string f; std::getline(list, f, '|');)
        if (!f.empty()) v.push_back(f);
    return v;
}

// Accepted calls whose tensors take at most this much are also run (zero data): Huawei's tests stop
// at phase 1, but a call that plans must also run - to 0, or to 361001 where zero indices fall
// outside their windows - without reading or writing past its tensors.
constexpr size_t kRunBytes = size_t{16} << 20;

::testing::AssertionResult runsToTheEnd(const aclcpu::OpManifest &op, const YAML::Node &yargs) {
    const CallArgs args(op, yargs, /*real=*/true);
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    const aclnnStatus st1 = aclnnCpuPlan(op.name.c_str(), args.data(), args.size(), &ws, &exec);
    if (st1 != ACLNN_SUCCESS)
        return ::testing::AssertionFailure() << "phase 1 with memory returned " << st1 << ": " << acltest::recentErr();
    acltest::Workspace w;
    const aclnnStatus st2 = aclnnCpuRun(op.name.c_str(), w.ptr(ws), ws, exec, acltest::Runtime::stream());
    aclrtSynchronizeStream(acltest::Runtime::stream());
    const std::string msg = acltest::recentErr();
    if (st2 != ACLNN_SUCCESS && st2 != ACLNN_ERR_RUNTIME_ERROR)
        return ::testing::AssertionFailure() << "phase 2 returned " << st2 << ": " << msg;
    return ::testing::AssertionSuccess();
}

class CannUnitTests : public ::testing::TestWithParam<std::string> {};

// Every case of the file: the status Huawei's UT expects, or the recorded deviation.
TEST_P(CannUnitTests, AnswerAsHuaweisTestsExpect) {
    const fs::path file = GetParam();
    const YAML::Node doc = YAML::LoadFile(file.string());
    const auto op = operatorOf(file, doc["operator"].as<std::string>());
    const YAML::Node cases = doc["cases"];
    ASSERT_TRUE(cases && cases.size() > 0) << file << " has no cases";
    int agreed = 0, deviations = 0, run = 0;
    for (const auto &c : cases) {
        const std::string name = c["name"].as<std::string>();
        const std::string product = c["product"].as<std::string>();
        SCOPED_TRACE(file.filename().string() + ": " + name + " on " + product);
        const Expect huawei = parseExpect(c["expect"].as<std::string>());
        const bool deviates = static_cast<bool>(c["ours"]);
        const Expect want = deviates ? parseExpect(c["ours"].as<std::string>()) : huawei;
        if (deviates) {
            ASSERT_TRUE(c["why"] && !c["why"].as<std::string>().empty()) << name << ": a deviation without its reason";
            EXPECT_FALSE(huawei.negated == want.negated && huawei.status == want.status) << name << ": `ours` repeats `expect`";
        }
        ASSERT_NO_FATAL_FAILURE(acltest::Runtime::use(product));
        uint64_t ws = 0;
        aclOpExecutor *exec = nullptr;
        aclnnStatus st = -1;
        std::string refused;
        size_t bytes = 0;
        try {
            const CallArgs args(op, c["args"]);
            refused = args.refused();
            bytes = args.bytes();
            st = aclnnCpuPlan(op.name.c_str(), args.data(), args.size(), &ws, &exec);
        } catch (const std::exception &e) {
            ADD_FAILURE() << name << ": the case's data: " << e.what();
            continue;
        }
        const std::string msg = acltest::recentErr();
        if (exec) aclDestroyAclOpExecutor(exec);
        EXPECT_TRUE(want.met(st)) << name << " on " << product << ": phase 1 returned " << st << ", "
                                  << (deviates ? "recorded as ours: " : "Huawei's UT expects ") << want.text
                                  << (msg.empty() ? "" : "\n  our message: " + msg)
                                  << (refused.empty() ? "" : "\n  aclCreateTensor refused: " + refused);
        if (st != ACLNN_SUCCESS) {
            EXPECT_FALSE(msg.empty()) << name << ": a refusal without a message";
        }
        (deviates ? deviations : agreed) += want.met(st) ? 1 : 0;
        if (st == ACLNN_SUCCESS && bytes <= kRunBytes) {
            run += 1;
            EXPECT_TRUE(runsToTheEnd(op, c["args"])) << name << " on " << product;
        }
    }
    std::printf("%s: %d cases as Huawei's UTs expect, %d recorded deviations; %d accepted calls of at most %zu MB run\n",
                file.filename().c_str(), agreed, deviations, run, kRunBytes >> 20);
}

INSTANTIATE_TEST_SUITE_P(Files, CannUnitTests, ::testing::ValuesIn(caseFiles()), [](const auto &info) {
    std::string s = fs::path(info.param).parent_path().parent_path().parent_path().filename().string() + "_" +
                    fs::path(info.param).stem().string();
    std::replace_if(s.begin(), s.end(), [](char ch) { return !std::isalnum(static_cast<unsigned char>(ch)); }, '_');
    return s;
});

}  // namespace
