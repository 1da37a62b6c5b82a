// case.txt parsing, tensor memory and the after-call checks of one case directory (case.hpp).
#include "case.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace torch_diff {
namespace {

[[noreturn]] void fail(const std::string &what) { throw std::runtime_error(what); }

aclDataType parse_dtype(const std::string &s) {
    static const std::map<std::string, aclDataType> names = {
        {"FLOAT", ACL_FLOAT}, {"FLOAT16", ACL_FLOAT16}, {"BF16", ACL_BF16},   {"DOUBLE", ACL_DOUBLE},
        {"INT8", ACL_INT8},   {"UINT8", ACL_UINT8},     {"INT16", ACL_INT16}, {"INT32", ACL_INT32},
        {"INT64", ACL_INT64}, {"BOOL", ACL_BOOL}};
    auto it = names.find(s);
    if (it == names.end()) fail("unknown dtype " + s);
    return it->second;
}

aclFormat parse_format(const std::string &s) {
    static const std::map<std::string, aclFormat> names = {{"ND", ACL_FORMAT_ND},
                                                           {"NCL", ACL_FORMAT_NCL},
                                                           {"NCHW", ACL_FORMAT_NCHW},
                                                           {"NHWC", ACL_FORMAT_NHWC},
                                                           {"NCDHW", ACL_FORMAT_NCDHW}};
    auto it = names.find(s);
    if (it == names.end()) fail("unknown format " + s);
    return it->second;
}

std::vector<int64_t> read_ints(std::istream &is, int64_t n) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (auto &x : v) is >> x;
    return v;
}

// Calls f(logical index, storage index) for every element of the view, in row-major order.
template <class F>
void each_element(const Tensor &t, F f) {
    int64_t n = 1;
    for (int64_t d : t.dims) n *= d;
    std::vector<int64_t> idx(t.dims.size(), 0);
    for (int64_t li = 0; li < n; ++li) {
        int64_t s = t.offset;
        for (size_t d = 0; d < idx.size(); ++d) s += idx[d] * t.strides[d];
        f(li, s);
        for (size_t d = idx.size(); d-- > 0;) {
            if (++idx[d] < t.dims[d]) break;
            idx[d] = 0;
        }
    }
}

// A quiet NaN in every floating dtype of that size (0x7FDA is one in FLOAT16 and in BF16).
void fill_nan_pattern(uint8_t *p, size_t bytes, size_t esize) {
    static const uint8_t p1[1] = {0xAD}, p2[2] = {0xDA, 0x7F}, p4[4] = {0xAD, 0xDE, 0xC0, 0x7F},
                         p8[8] = {0xAD, 0xDE, 0xAD, 0xDE, 0xAD, 0xDE, 0xF8, 0x7F};
    const uint8_t *pat = esize == 1 ? p1 : esize == 2 ? p2 : esize == 4 ? p4 : p8;
    for (size_t b = 0; b < bytes; ++b) p[b] = pat[b % esize];
}

}  // namespace

std::string recent_error() {
    const char *m = aclGetRecentErrMsg();
    return m ? m : "";
}

Buffer::Buffer(size_t bytes, int placement) {
    if (bytes == 0) bytes = 1;
    if (placement == 0) {
        data_ = static_cast<uint8_t *>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
        if (!data_) fail("out of memory");
        return;
    }
    const size_t page = page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t body = (bytes + page - 1) / page * page;
    map_len_ = body + 2 * page;
    void *m = mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) fail("mmap failed");
    map_ = static_cast<uint8_t *>(m);
    mprotect(map_, page, PROT_NONE);
    mprotect(map_ + page + body, page, PROT_NONE);
    data_ = placement == 1 ? map_ + page + body - bytes : map_ + page;
}

void Buffer::seal(bool sealed) const {
    if (map_ && mprotect(map_ + page_, map_len_ - 2 * page_, sealed ? PROT_NONE : PROT_READ | PROT_WRITE) != 0)
        fail("mprotect failed");
}

Buffer::~Buffer() {
    if (map_) munmap(map_, map_len_);
    else std::free(data_);
}

Case::Case(std::string dir) : dir_(std::move(dir)) {
    std::ifstream in(dir_ + "/case.txt");
    if (!in) fail(dir_ + "/case.txt: cannot open");
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream is(line);
        std::string kind, name;
        if (!(is >> kind)) continue;
        if (kind == "op") {
            is >> op_;
        } else if (kind == "placement") {
            is >> placement_;
        } else if (kind == "repeat") {
            is >> repeat_;
        } else if (kind == "tensor") {
            std::string role, dtype, format;
            int64_t rank = 0;
            is >> name >> role >> dtype >> format >> rank;
            Tensor &t = tensors_[name];
            t.role = role == "in" ? Role::In : role == "out" ? Role::Out : Role::Idle;
            t.dtype = parse_dtype(dtype);
            t.esize = aclDataTypeSize(t.dtype);
            t.dims = read_ints(is, rank);
            t.strides = read_ints(is, rank);
            is >> t.offset >> t.storage;
            if (!is) fail(dir_ + ": bad tensor line: " + line);
            const size_t bytes = static_cast<size_t>(t.storage) * t.esize;
            t.mem = std::make_unique<Buffer>(bytes, placement_);
            fill_nan_pattern(t.mem->data(), bytes, t.esize);
            if (t.role == Role::In) {
                std::ifstream f(dir_ + "/" + name + ".bin", std::ios::binary);
                std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
                size_t expected = t.esize;
                for (int64_t d : t.dims) expected *= static_cast<size_t>(d);
                if (data.size() != expected) fail(dir_ + "/" + name + ".bin: wrong size");
                each_element(t, [&](int64_t li, int64_t s) {
                    std::memcpy(t.mem->data() + s * t.esize, data.data() + li * t.esize, t.esize);
                });
            }
            t.before.assign(t.mem->data(), t.mem->data() + bytes);
            if (repeat_) {
                t.decoy = std::make_unique<Buffer>(bytes, placement_);
                std::memcpy(t.decoy->data(), t.mem->data(), bytes);
            }
            int64_t storage_dims = t.storage;
            t.acl = aclCreateTensor(t.dims.data(), t.dims.size(), t.dtype, t.strides.data(), t.offset,
                                    parse_format(format), &storage_dims, 1, t.mem->data());
            if (!t.acl) fail(dir_ + ": aclCreateTensor " + name + ": " + recent_error());
        } else if (kind == "ints") {
            int64_t n = 0;
            is >> name >> n;
            auto v = read_ints(is, n < 0 ? 0 : n);
            ints_[name] = n < 0 ? nullptr : aclCreateIntArray(v.data(), v.size());
        } else if (kind == "bools") {
            int64_t n = 0;
            is >> name >> n;
            auto v = read_ints(is, n);
            auto b = std::make_unique<bool[]>(v.size() + 1);  // vector<bool> has no data()
            for (size_t i = 0; i < v.size(); ++i) b[i] = v[i] != 0;
            bools_[name] = aclCreateBoolArray(b.get(), v.size());
        } else if (kind == "int") {
            is >> name >> nums_[name];
        } else {
            fail(dir_ + ": unknown line: " + line);
        }
        if (!is) fail(dir_ + ": bad line: " + line);
    }
    if (op_.empty()) fail(dir_ + "/case.txt: no op line");
}

Case::~Case() {
    for (auto &[name, t] : tensors_) aclDestroyTensor(t.acl);
    for (auto &[name, a] : ints_)
        if (a) aclDestroyIntArray(a);
    for (auto &[name, a] : bools_) aclDestroyBoolArray(a);
}

bool Case::idle(const std::string &name) const {
    auto it = tensors_.find(name);
    return it != tensors_.end() && it->second.role == Role::Idle;
}

void Case::seal(const std::string &name, bool decoy, bool sealed) const {
    auto it = tensors_.find(name);
    if (it != tensors_.end()) (decoy ? it->second.decoy : it->second.mem)->seal(sealed);
}

void *Case::storage(const std::string &name, bool decoy) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) return nullptr;
    return (decoy ? it->second.decoy : it->second.mem)->data();
}

aclTensor *Case::tensor(const std::string &name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : it->second.acl;
}

const aclIntArray *Case::ints(const std::string &name) const {
    auto it = ints_.find(name);
    if (it == ints_.end()) fail(dir_ + ": no int array " + name);
    return it->second;
}

const aclBoolArray *Case::bools(const std::string &name) const {
    auto it = bools_.find(name);
    if (it == bools_.end()) fail(dir_ + ": no bool array " + name);
    return it->second;
}

int64_t Case::num(const std::string &name) const {
    auto it = nums_.find(name);
    if (it == nums_.end()) fail(dir_ + ": no number " + name);
    return it->second;
}

void Case::finish(int status, const std::string &call, const std::string &message) const {
    std::ofstream res(dir_ + "/result.txt.tmp");
    res << "status " << status << "\n";
    if (status != 0) {
        std::string one_line = message;
        for (char &ch : one_line)
            if (ch == '\n') ch = ' ';
        res << "call " << call << "\nmsg " << one_line << "\n";
    }
    for (const auto &[name, t] : tensors_) {
        const size_t es = t.esize;
        std::vector<char> in_view(static_cast<size_t>(t.storage), 0);
        if (t.role == Role::Out) each_element(t, [&](int64_t, int64_t s) { in_view[s] = 1; });
        auto changed = [&](const Buffer &b, int64_t s) {
            return std::memcmp(b.data() + s * es, t.before.data() + s * es, es) != 0;
        };
        int64_t dirty = 0, decoy_dirty = 0, differs = 0;
        for (int64_t s = 0; s < t.storage; ++s) {
            if (!in_view[s]) {
                dirty += changed(*t.mem, s);
                if (t.decoy) decoy_dirty += changed(*t.decoy, s);
            } else if (t.decoy && status == 0) {
                differs += std::memcmp(t.mem->data() + s * es, t.decoy->data() + s * es, es) != 0;
            }
        }
        if (dirty) res << "dirty " << name << " " << dirty << "\n";
        if (decoy_dirty) res << "dirty " << name << "@decoy " << decoy_dirty << "\n";
        if (differs) res << "differs " << name << " " << differs << "\n";
        if (t.role == Role::Out && status == 0) {
            std::ofstream out(dir_ + "/" + name + ".out", std::ios::binary);
            each_element(t, [&](int64_t, int64_t s) {
                out.write(reinterpret_cast<const char *>(t.mem->data() + s * es), static_cast<std::streamsize>(es));
            });
        }
    }
    res.close();
    // result.txt appears complete or not at all: the runner takes a missing one for a crash.
    std::rename((dir_ + "/result.txt.tmp").c_str(), (dir_ + "/result.txt").c_str());
}

}  // namespace torch_diff
