// One case directory of the torch_diff driver. case.txt names the operator family and its
// arguments, one per line:
//   op conv                                   the family (ops.cpp)
//   placement 0|1|2                           0 heap; 1 / 2 every tensor and the workspace flush
//                                             against a trailing / leading PROT_NONE page
//   repeat 0|1|2                              (optional, before the tensors) 1 / 2: every call's
//                                             executor is made repeatable and runs twice, first on
//                                             decoy copies of the tensors, then on the tensors
//                                             themselves, re-pointed by aclSetRawTensorAddr (1) or
//                                             by aclSetInput/OutputTensorAddr (2), each run on a
//                                             workspace of its own; with a guard-page placement,
//                                             what a run must not touch is sealed (PROT_NONE)
//   tensor NAME in|out|idle DTYPE FORMAT RANK dims... strides... OFFSET STORAGE_ELEMENTS
//   ints NAME N v...                          an aclIntArray; N = -1 passes NULL
//   bools NAME N v...                         an aclBoolArray
//   int NAME v                                a scalar argument (int, int64, bool)
// An "in" tensor is read from NAME.bin (its logical elements, row-major) and must come back
// unchanged; an "out" tensor's view goes to NAME.out, and nothing of its storage outside the view
// may change; an "idle" tensor is an output the call must not write at all (a masked-off one).
// Storage the view does not cover holds a NaN pattern, so a kernel that reads a gap shows up in the
// results, one that writes there in result.txt's "dirty" lines.
// With repeat, the decoy run's outputs must equal the real run's byte for byte ("differs" lines),
// and the decoys obey the same rules as the tensors ("dirty NAME@decoy").
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"

namespace torch_diff {

// Host memory, on the heap or flush against an inaccessible page, so that an access one byte
// outside a tensor or the workspace faults instead of passing unnoticed.
class Buffer {
public:
    Buffer(size_t bytes, int placement);
    ~Buffer();
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    uint8_t *data() const { return data_; }
    // Makes the bytes inaccessible (or accessible again); a no-op on the heap (placement 0).
    void seal(bool sealed) const;

private:
    uint8_t *map_ = nullptr;
    size_t map_len_ = 0, page_ = 0;
    uint8_t *data_ = nullptr;
};

enum class Role { In, Out, Idle };

struct Tensor {
    Role role = Role::In;
    aclDataType dtype = ACL_FLOAT;
    std::vector<int64_t> dims, strides;
    int64_t offset = 0, storage = 0;
    size_t esize = 0;
    std::unique_ptr<Buffer> mem, decoy;  // decoy: a copy of mem as the case starts (repeat only)
    std::vector<uint8_t> before;          // the storage's bytes as the call received them
    aclTensor *acl = nullptr;
};

class Case {
public:
    explicit Case(std::string dir);  // parses case.txt, fills the tensors; throws std::runtime_error
    ~Case();
    Case(const Case &) = delete;
    Case &operator=(const Case &) = delete;

    // The arguments by name; an absent tensor or an int array of length -1 is NULL.
    aclTensor *tensor(const std::string &name) const;
    const aclIntArray *ints(const std::string &name) const;
    const aclBoolArray *bools(const std::string &name) const;
    int64_t num(const std::string &name) const;
    int placement() const { return placement_; }
    int repeat() const { return repeat_; }
    bool idle(const std::string &name) const;  // a masked-off output (present, never written)
    // Storage of the tensor `name` (its decoy copy when `decoy`); nullptr when it is absent.
    void *storage(const std::string &name, bool decoy) const;
    // Seals (or unseals) the storage of the tensor `name` or of its decoy: Buffer::seal.
    void seal(const std::string &name, bool decoy, bool sealed) const;
    const std::string &op() const { return op_; }

    // Writes the outputs' views (when status is 0) and result.txt: status, the failing call and its
    // message, and per tensor the elements changed where nothing may change.
    void finish(int status, const std::string &call, const std::string &message) const;

private:
    std::string dir_, op_;
    int placement_ = 0, repeat_ = 0;
    std::map<std::string, Tensor> tensors_;
    std::map<std::string, aclIntArray *> ints_;
    std::map<std::string, aclBoolArray *> bools_;
    std::map<std::string, int64_t> nums_;
};

// aclGetRecentErrMsg() as a string ("" when there is none).
std::string recent_error();

// Runs the case's operator family on the stream; returns the first nonzero status (0 on success)
// and the name of the call that returned it.
int run_family(const Case &c, aclrtStream stream, std::string *failed_call);

}  // namespace torch_diff
