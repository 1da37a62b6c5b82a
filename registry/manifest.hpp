// Operator manifests: the YAML that declares a plugin's operators, their signatures and their
// per-product dtype / format / rank / attribute rules. One parser serves the registry, the code
// generator and the CLI; every error names the file and line.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace aclcpu {

enum class ParamType { Tensor, IntArray, BoolArray, FloatArray, Scalar, Int64, Int32, Int, Int8, Bool, Float, Double };

struct Param {
    std::string name;
    ParamType type = ParamType::Tensor;
    bool optional = false;  // a NULL pointer is accepted
    bool output = false;    // tensors only
    // `required_if: outputMask[0]`: required only when that bool_array element is true; when it is
    // false (or the mask is NULL or shorter) the argument counts as absent for every check and for plan().
    // `required_if: transposed` (index -1): the same with a bool parameter.
    std::string required_if_mask;
    int64_t required_if_index = -1;
    int line = 0;
    bool is_pointer() const;
    std::string required_if() const {  // "outputMask[0]", "transposed", or "" when unconditional
        return required_if_index < 0 ? required_if_mask : required_if_mask + "[" + std::to_string(required_if_index) + "]";
    }
};

struct AttrRule {
    std::vector<int64_t> lengths;                    // allowed array lengths
    std::optional<std::pair<int64_t, int64_t>> range;  // every value (or the scalar) within [lo, hi]
    std::vector<int64_t> values;                     // allowed values
    int line = 0;
};

struct Rules {  // may appear at operator level (all products) and per product (overrides)
    std::map<std::string, std::vector<int32_t>> dtypes;
    std::map<std::string, std::vector<int32_t>> formats;
    std::map<std::string, std::vector<int64_t>> ranks;
    std::map<std::string, AttrRule> attrs;
    // cubeMathType -> input dtypes this operator refuses under that mode, where the product's cube
    // table would take them (AvgPool2d on A2/A3: FLOAT with 1 or 3). Needs `cube_math`.
    std::map<int64_t, std::vector<int32_t>> cube_rejects;
};

struct CubeMath {
    std::string param;  // the int8 cubeMathType parameter
    // The tensors whose dtype selects the row of the product's table: one, or several whose present
    // dtypes are promoted as CANN's GetUpperFloatDataType does (cube_dtype(), checks.cpp).
    std::vector<std::string> inputs;
};

// A length rule CANN checks among the NULL checks (right after `null_order`), with its own status:
// e.g. MaxPool2dWithMaskBackward answers 161001 for a kernelSize of the wrong length.
struct EarlyCheck {
    std::string param;
    std::vector<int64_t> lengths;
    int32_t code = 161002;
};

struct OpManifest {
    std::string name;                   // "AvgPool2dBackward"
    std::vector<std::string> headers;   // "aclnn_avgpool2d_backward.h"
    std::vector<Param> params;
    std::vector<std::string> null_order;  // order of NULL checks; default: signature order
    std::vector<EarlyCheck> early_checks; // run after the null_order entries, before the other NULL checks
    // A NULL here makes the call a successful no-op (workspace 0, an executor that does nothing), decided
    // right after the workspaceSize/executor checks: GridSampler2DBackward's NULL outputMask.
    std::vector<std::string> noop_if_null;
    // An all-false bool array here makes the call a successful no-op too, decided at the same point
    // (for an operator that returns before its checks when no output is asked for; CANN's
    // GridSampler2DBackward once did).
    std::vector<std::string> noop_if_all_false;
    // An empty tensor here (a dim of 0) makes the call a successful no-op too, tested in the listed
    // order at the same point; a NULL one ends the test (the NULL checks answer it). (For an operator
    // that returns before its checks on an empty tensor; CANN's GridSampler2D once did.)
    std::vector<std::string> noop_if_empty;
    std::optional<CubeMath> cube_math;
    // Rules plan() checks that the keys here cannot state (a kernel chosen by shape, say), one line
    // each, for `aclnn-cpu describe`.
    std::vector<std::string> notes;
    std::vector<std::vector<std::string>> same_dtype;
    std::vector<std::pair<std::string, std::string>> castable;  // (from, to): to's dtype must be reachable by a cast
    // Whether a layout that names its dimensions (NCL, NCHW, NCDHW) fixes the tensor's rank. false:
    // the name is a tag only, as in CANN's pooling and unpooling code, which rejects only private
    // formats (a (C, H, W) tensor tagged NCHW passes). A list in the manifest names the tensors
    // whose layout fixes their rank (format_rank_params); the others' names are tags (the
    // convolution's 1-D bias tagged NCHW).
    bool format_fixes_rank = true;
    std::vector<std::string> format_rank_params;  // empty: every tensor, when format_fixes_rank
    bool format_fixes_rank_of(const std::string &param) const;
    Rules common;
    std::map<std::string, Rules> products;  // product id -> rules; a product not listed is unsupported
    // product id -> common overridden by the product's, merged once by parse_manifest: phase 1 looks
    // them up on every call.
    std::map<std::string, Rules> in_force;
    int line = 0;

    int index_of(const std::string &param) const;  // -1 when absent
    // Rules in force on `product`, or nullptr when the product is unsupported.
    const Rules *rules_for(const std::string &product) const;
};

struct Manifest {
    std::string file;  // path of the YAML
    std::string dir;   // its directory
    std::string plugin, library, version, description;
    unsigned abi = 0;
    std::vector<OpManifest> ops;
    std::string library_path() const;  // <dir>/lib<library>.so
};

struct ManifestError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Throws ManifestError("<file>:<line>: <what>").
Manifest parse_manifest(const std::string &path);

const char *param_type_name(ParamType t);
// The acp_arg_kind a generated entry point passes for a parameter of this type.
int32_t param_arg_kind(ParamType t);
// The C type of a parameter in the public header ("const aclTensor *", "int64_t", ...).
std::string param_c_type(const Param &p);

}  // namespace aclcpu
