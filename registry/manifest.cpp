#include "manifest.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "aclnn_cpu/dtype.hpp"
#include "aclnn_cpu/plugin_abi.h"
#include "../core/runtime/yaml_keys.hpp"

namespace aclcpu {
namespace {

// "<file>:<line>: " of a YAML position; a node without one (an empty document, a missing node:
// yaml-cpp's null mark, line -1) is reported at line 1.
std::string where(const std::string &file, const YAML::Mark &m) {
    return file + ":" + std::to_string(std::max(m.line, 0) + 1) + ": ";
}

// A message on one line: a value quoted from the file may span lines (a mangled quote makes the rest
// of the file one string).
std::string one_line(std::string s) {
    for (char &c : s)
        if (c == '\n' || c == '\r') c = ' ';
    return s;
}

// A name from the file as a message shows it: quoted, at most 60 characters.
std::string quoted(const std::string &s) {
    return "'" + (s.size() > 60 ? s.substr(0, 57) + "..." : s) + "'";
}

// A C identifier: the generated header declares each parameter by its name.
bool is_identifier(const std::string &s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}
// Names a parameter cannot take: C/C++ keywords a signature could meet, and the generated entry
// points' own parameters and locals.
bool is_reserved(const std::string &s) {
    static const std::set<std::string> reserved = {
        "workspaceSize", "executor", "args", "workspace", "stream", "auto", "bool", "break", "case", "char", "class",
        "const", "continue", "default", "delete", "do", "double", "else", "enum", "extern", "false", "float", "for",
        "goto", "if", "inline", "int", "long", "namespace", "new", "nullptr", "operator", "private", "public",
        "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "template",
        "this", "true", "typedef", "union", "unsigned", "using", "virtual", "void", "volatile", "while"};
    return reserved.count(s) != 0;
}

struct Parser {
    std::string file;

    [[noreturn]] void fail(const YAML::Node &n, const std::string &what) const {
        throw ManifestError(where(file, n.Mark()) + one_line(what));
    }
    void expect_map(const YAML::Node &n, const std::string &what) const {
        if (!n.IsMap()) fail(n, what + " must be a mapping");
    }
    void expect_seq(const YAML::Node &n, const std::string &what) const {
        if (!n.IsSequence()) fail(n, what + " must be a list");
    }
    void only_keys(const YAML::Node &n, std::initializer_list<const char *> keys, const std::string &what) const {
        for (const auto &kv : n) {
            const auto k = kv.first.as<std::string>();
            if (std::none_of(keys.begin(), keys.end(), [&](const char *s) { return k == s; })) {
                std::string known;
                for (const char *s : keys) known += (known.empty() ? "" : ", ") + std::string(s);
                fail(kv.first, "unknown key " + quoted(k) + " in " + what + " (known: " + known + ")");
            }
        }
    }
    std::string str(const YAML::Node &n, const std::string &what) const {
        if (!n || !n.IsScalar()) fail(n, what + " must be a string");
        return n.as<std::string>();
    }
    // A required key of `parent`: a missing one is reported at the parent's line.
    YAML::Node required(const YAML::Node &parent, const char *key, const std::string &what) const {
        const YAML::Node n = parent[key];
        if (!n) fail(parent, "missing '" + std::string(key) + "' (" + what + ")");
        return n;
    }
    bool boolean(const YAML::Node &n, const std::string &what) const {
        try {
            return n.as<bool>();
        } catch (const YAML::Exception &) {
            fail(n, what + " must be true or false");
        }
    }
    int64_t integer(const YAML::Node &n, const std::string &what) const {
        try {
            return n.as<int64_t>();
        } catch (const YAML::Exception &) {
            fail(n, what + " must be an integer");
        }
    }

    ParamType param_type(const YAML::Node &n) const {
        static const std::map<std::string, ParamType> types = {
            {"tensor", ParamType::Tensor},       {"int_array", ParamType::IntArray}, {"bool_array", ParamType::BoolArray},
            {"float_array", ParamType::FloatArray}, {"scalar", ParamType::Scalar},  {"int64", ParamType::Int64},
            {"int32", ParamType::Int32},         {"int", ParamType::Int},            {"int8", ParamType::Int8},
            {"bool", ParamType::Bool},           {"float", ParamType::Float},        {"double", ParamType::Double}};
        const auto s = str(n, "param type");
        const auto it = types.find(s);
        if (it == types.end())
            fail(n, "unknown param type '" + s + "' (known: tensor, int_array, bool_array, float_array, scalar, int64, int32, int, int8, bool, float, double)");
        return it->second;
    }

    const Param &param(const OpManifest &op, const YAML::Node &at, const std::string &name) const {
        const int i = op.index_of(name);
        if (i < 0) fail(at, "'" + name + "' is not a parameter of " + op.name);
        return op.params[static_cast<size_t>(i)];
    }
    void tensor_param(const OpManifest &op, const YAML::Node &at, const std::string &name) const {
        if (param(op, at, name).type != ParamType::Tensor) fail(at, "'" + name + "' is not a tensor parameter");
    }

    std::vector<int32_t> dtype_list(const YAML::Node &n) const {
        expect_seq(n, "a dtype list");
        std::vector<int32_t> out;
        for (const auto &e : n) {
            const auto d = acp::parse_dtype(str(e, "dtype"));
            if (!d) fail(e, "unknown dtype '" + e.as<std::string>() + "'");
            out.push_back(*d);
        }
        return out;
    }
    std::vector<int32_t> format_list(const YAML::Node &n) const {
        expect_seq(n, "a format list");
        std::vector<int32_t> out;
        for (const auto &e : n) {
            const auto f = acp::parse_format(str(e, "format"));
            if (!f) fail(e, "unknown format '" + e.as<std::string>() + "'");
            out.push_back(*f);
        }
        return out;
    }
    std::vector<int64_t> int_list(const YAML::Node &n, const std::string &what) const {
        expect_seq(n, what);
        std::vector<int64_t> out;
        for (const auto &e : n) out.push_back(integer(e, what + " entry"));
        return out;
    }

    AttrRule attr_rule(const OpManifest &op, const YAML::Node &key, const YAML::Node &n) const {
        const auto name = key.as<std::string>();
        const Param &p = param(op, key, name);
        if (p.type == ParamType::Tensor) fail(key, "'" + name + "' is a tensor: use dtypes/formats/ranks");
        expect_map(n, "attribute rule of " + name);
        only_keys(n, {"length", "range", "values"}, "attribute rule of " + name);
        AttrRule r;
        r.line = key.Mark().line + 1;
        if (n["length"]) {
            if (p.type != ParamType::IntArray && p.type != ParamType::BoolArray && p.type != ParamType::FloatArray)
                fail(n["length"], "'length' applies to array parameters only");
            r.lengths = int_list(n["length"], "length");
        }
        if (n["range"]) {
            const auto v = int_list(n["range"], "range");
            if (v.size() != 2 || v[0] > v[1]) fail(n["range"], "range must be [lo, hi] with lo <= hi");
            r.range = std::make_pair(v[0], v[1]);
        }
        if (n["values"]) r.values = int_list(n["values"], "values");
        return r;
    }

    Rules rules(const OpManifest &op, const YAML::Node &n, bool with_dtypes) const {
        Rules r;
        if (with_dtypes && n["dtypes"]) {
            expect_map(n["dtypes"], "dtypes");
            for (const auto &kv : n["dtypes"]) {
                const auto name = kv.first.as<std::string>();
                tensor_param(op, kv.first, name);
                r.dtypes[name] = dtype_list(kv.second);
            }
        }
        if (n["formats"]) {
            expect_map(n["formats"], "formats");
            for (const auto &kv : n["formats"]) {
                const auto name = kv.first.as<std::string>();
                tensor_param(op, kv.first, name);
                r.formats[name] = format_list(kv.second);
            }
        }
        if (n["ranks"]) {
            expect_map(n["ranks"], "ranks");
            for (const auto &kv : n["ranks"]) {
                const auto name = kv.first.as<std::string>();
                tensor_param(op, kv.first, name);
                r.ranks[name] = int_list(kv.second, "ranks");
            }
        }
        if (n["attrs"]) {
            expect_map(n["attrs"], "attrs");
            for (const auto &kv : n["attrs"]) r.attrs[kv.first.as<std::string>()] = attr_rule(op, kv.first, kv.second);
        }
        if (n["cube_rejects"]) {
            if (!op.cube_math) fail(n["cube_rejects"], "cube_rejects needs the operator's cube_math");
            expect_map(n["cube_rejects"], "cube_rejects");
            for (const auto &kv : n["cube_rejects"]) {
                r.cube_rejects[integer(kv.first, "cube_rejects key (a cubeMathType value)")] = dtype_list(kv.second);
            }
        }
        return r;
    }

    OpManifest op(const YAML::Node &n) const {
        expect_map(n, "an operator");
        only_keys(n, {"name", "header", "headers", "params", "null_order", "noop_if_null", "noop_if_all_false", "noop_if_empty", "early_checks", "cube_math", "same_dtype", "castable", "dtypes",
                      "formats", "format_fixes_rank", "ranks", "attrs", "cube_rejects", "products", "notes"},
                  "an operator");
        OpManifest op;
        op.line = n.Mark().line + 1;
        op.name = str(required(n, "name", "the operator name"), "operator name");
        for (char c : op.name)
            if (!std::isalnum(static_cast<unsigned char>(c))) fail(n["name"], "operator name must be alphanumeric, got '" + op.name + "'");
        auto header = [&](const YAML::Node &h) {  // a file name in aclnnop/, written by the code generator
            const auto name = str(h, "header");
            if (!is_identifier(name.size() > 2 && name.substr(name.size() - 2) == ".h" ? name.substr(0, name.size() - 2) : std::string()))
                fail(h, "header must be a file name of letters, digits and '_' ending in .h, got '" + name + "'");
            op.headers.push_back(name);
        };
        if (n["header"]) header(n["header"]);
        if (n["headers"]) {
            expect_seq(n["headers"], "headers");
            for (const auto &h : n["headers"]) header(h);
        }
        if (op.headers.empty()) fail(n, "operator " + op.name + " needs a 'header'");
        if (!n["params"]) fail(n, "operator " + op.name + " needs 'params'");
        expect_seq(n["params"], "params");
        std::set<std::string> seen;
        for (const auto &pn : n["params"]) {
            expect_map(pn, "a parameter");
            only_keys(pn, {"name", "type", "optional", "output", "required_if"}, "a parameter");
            Param p;
            p.line = pn.Mark().line + 1;
            p.name = str(required(pn, "name", "the parameter name"), "parameter name");
            if (!is_identifier(p.name) || is_reserved(p.name))
                fail(pn, "parameter name must be a C identifier other than a keyword or workspaceSize, executor, args, "
                         "workspace, stream, got '" + p.name + "'");
            if (!seen.insert(p.name).second) fail(pn, "duplicate parameter '" + p.name + "'");
            if (!pn["type"]) fail(pn, "parameter '" + p.name + "' needs a 'type'");
            p.type = param_type(pn["type"]);
            p.optional = pn["optional"] && boolean(pn["optional"], "optional");
            p.output = pn["output"] && boolean(pn["output"], "output");
            if (p.output && p.type != ParamType::Tensor) fail(pn, "only tensors can be outputs ('" + p.name + "')");
            if (p.optional && !p.is_pointer()) fail(pn, "'" + p.name + "' is passed by value and cannot be optional");
            if (pn["required_if"]) {
                if (!p.is_pointer()) fail(pn["required_if"], "'" + p.name + "' is passed by value and cannot be conditional");
                const auto spec = str(pn["required_if"], "required_if");
                const auto open = spec.find('['), close = spec.size() - 1;
                if (open == std::string::npos && !spec.empty()) {
                    p.required_if_mask = spec;  // a bool parameter (checked below)
                } else {
                    if (open == std::string::npos || open == 0 || spec[close] != ']' || close == open + 1 ||
                        spec.find_first_not_of("0123456789", open + 1) != close)
                        fail(pn["required_if"], "required_if must look like 'outputMask[0]' or 'transposed', got '" + spec + "'");
                    p.required_if_mask = spec.substr(0, open);
                    if (close - open - 1 > 9) fail(pn["required_if"], "required_if index must be below 10^9, got '" + spec + "'");
                    p.required_if_index = std::stoll(spec.substr(open + 1, close - open - 1));
                }
            }
            op.params.push_back(p);
        }
        for (const auto &p : op.params) {  // the mask may come later in the signature
            if (p.required_if_mask.empty()) continue;
            const auto at = n["params"][static_cast<size_t>(&p - op.params.data())]["required_if"];
            const ParamType want = p.required_if_index < 0 ? ParamType::Bool : ParamType::BoolArray;
            if (param(op, at, p.required_if_mask).type != want)
                fail(at, "required_if of '" + p.name + "' must name a " + (p.required_if_index < 0 ? "bool" : "bool_array") +
                             " parameter, '" + p.required_if_mask + "' is not one");
        }
        // A list of parameter names, each of the kind `ok` accepts (`kind` names it in the error).
        const auto names = [&](const char *key, const char *kind, auto ok, std::vector<std::string> &into) {
            if (!n[key]) return;
            expect_seq(n[key], key);
            for (const auto &e : n[key]) {
                const auto name = str(e, std::string(key) + " entry");
                if (!ok(param(op, e, name))) fail(e, "'" + name + "' is not a " + kind + " parameter");
                into.push_back(name);
            }
        };
        names("noop_if_all_false", "bool_array", [](const Param &p) { return p.type == ParamType::BoolArray; }, op.noop_if_all_false);
        names("noop_if_empty", "tensor", [](const Param &p) { return p.type == ParamType::Tensor; }, op.noop_if_empty);
        names("noop_if_null", "pointer", [](const Param &p) { return p.is_pointer(); }, op.noop_if_null);
        names("null_order", "pointer", [](const Param &p) { return p.is_pointer(); }, op.null_order);
        if (n["format_fixes_rank"] && n["format_fixes_rank"].IsSequence())
            names("format_fixes_rank", "tensor", [](const Param &p) { return p.type == ParamType::Tensor; }, op.format_rank_params);
        else if (n["format_fixes_rank"])
            op.format_fixes_rank = boolean(n["format_fixes_rank"], "format_fixes_rank");
        if (n["notes"]) {
            expect_seq(n["notes"], "notes");
            for (const auto &e : n["notes"]) op.notes.push_back(str(e, "notes entry"));
        }
        if (n["early_checks"]) {
            expect_map(n["early_checks"], "early_checks");
            for (const auto &kv : n["early_checks"]) {
                const auto name = kv.first.as<std::string>();
                const Param &p = param(op, kv.first, name);
                if (p.type != ParamType::IntArray && p.type != ParamType::BoolArray && p.type != ParamType::FloatArray)
                    fail(kv.first, "early_checks apply to array parameters only, '" + name + "' is not one");
                expect_map(kv.second, "early check of " + name);
                only_keys(kv.second, {"length", "code"}, "early check of " + name);
                EarlyCheck e;
                e.param = name;
                e.lengths = int_list(required(kv.second, "length", "the allowed lengths"), "length");
                if (kv.second["code"]) {
                    const int64_t code = integer(kv.second["code"], "code");
                    if (code != 161001 && code != 161002) fail(kv.second["code"], "code must be 161001 or 161002");
                    e.code = static_cast<int32_t>(code);
                }
                op.early_checks.push_back(e);
            }
        }
        if (n["cube_math"]) {
            const auto cm = n["cube_math"];
            expect_map(cm, "cube_math");
            only_keys(cm, {"param", "input"}, "cube_math");
            CubeMath c{str(required(cm, "param", "the cubeMathType parameter"), "cube_math.param"), {}};
            const YAML::Node in = required(cm, "input", "the tensor (or tensors, promoted) whose dtype selects the rule");
            if (in.IsSequence()) {
                if (in.size() == 0) fail(in, "cube_math.input must name at least one tensor");
                for (const auto &e : in) c.inputs.push_back(str(e, "cube_math.input"));
            } else {
                c.inputs.push_back(str(in, "cube_math.input"));
            }
            if (param(op, cm["param"], c.param).type != ParamType::Int8) fail(cm["param"], "cube_math.param must be an int8 parameter");
            for (size_t i = 0; i < c.inputs.size(); ++i) tensor_param(op, in.IsSequence() ? in[i] : in, c.inputs[i]);
            op.cube_math = c;
        }
        if (n["same_dtype"]) {
            expect_seq(n["same_dtype"], "same_dtype");
            const auto sd = n["same_dtype"];
            auto group = [&](const YAML::Node &g) {
                std::vector<std::string> names;
                for (const auto &e : g) {
                    const auto name = str(e, "same_dtype entry");
                    tensor_param(op, e, name);
                    names.push_back(name);
                }
                op.same_dtype.push_back(names);
            };
            if (sd.size() && sd[0].IsSequence())
                for (const auto &g : sd) group(g);
            else
                group(sd);
        }
        if (n["castable"]) {
            expect_seq(n["castable"], "castable");
            for (const auto &c : n["castable"]) {
                expect_map(c, "a castable rule");
                only_keys(c, {"from", "to"}, "a castable rule");
                const auto from = str(required(c, "from", "the source tensor"), "castable.from");
                const auto to = str(required(c, "to", "the tensor whose dtype it must cast to"), "castable.to");
                tensor_param(op, c["from"], from);
                tensor_param(op, c["to"], to);
                op.castable.emplace_back(from, to);
            }
        }
        if (n["dtypes"]) fail(n["dtypes"], "dtypes are declared per product (under 'products')");
        op.common = rules(op, n, false);
        if (!n["products"]) fail(n, "operator " + op.name + " needs 'products' (the products that support it)");
        expect_map(n["products"], "products");
        for (const auto &kv : n["products"]) {
            const auto id = kv.first.as<std::string>();
            expect_map(kv.second, "product " + id);
            only_keys(kv.second, {"dtypes", "formats", "ranks", "attrs", "cube_rejects"}, "product " + id);
            op.products[id] = rules(op, kv.second, true);
        }
        for (const auto &[id, own] : op.products) {
            Rules r = op.common;
            for (const auto &kv : own.dtypes) r.dtypes[kv.first] = kv.second;
            for (const auto &kv : own.formats) r.formats[kv.first] = kv.second;
            for (const auto &kv : own.ranks) r.ranks[kv.first] = kv.second;
            for (const auto &kv : own.attrs) r.attrs[kv.first] = kv.second;
            for (const auto &kv : own.cube_rejects) r.cube_rejects[kv.first] = kv.second;
            op.in_force[id] = std::move(r);
        }
        return op;
    }
};

}  // namespace

bool Param::is_pointer() const {
    switch (type) {
        case ParamType::Tensor: case ParamType::IntArray: case ParamType::BoolArray: case ParamType::FloatArray:
        case ParamType::Scalar: return true;
        default: return false;
    }
}

bool OpManifest::format_fixes_rank_of(const std::string &param) const {
    return format_fixes_rank &&
           (format_rank_params.empty() || std::find(format_rank_params.begin(), format_rank_params.end(), param) != format_rank_params.end());
}

int OpManifest::index_of(const std::string &param) const {
    for (size_t i = 0; i < params.size(); ++i)
        if (params[i].name == param) return static_cast<int>(i);
    return -1;
}

const Rules *OpManifest::rules_for(const std::string &product) const {
    const auto it = in_force.find(product);
    return it == in_force.end() ? nullptr : &it->second;
}

std::string Manifest::library_path() const {
    return (std::filesystem::path(dir) / ("lib" + library + ".so")).string();
}

Manifest parse_manifest(const std::string &path) {
    Parser p{path};
    YAML::Node root;
    try {
        root = YAML::LoadFile(path);
    } catch (const YAML::BadFile &) {
        throw ManifestError(path + ": cannot read the file");
    } catch (const YAML::Exception &e) {
        throw ManifestError(where(path, e.mark) + one_line(e.msg));
    }
    if (const auto dup = find_duplicate_key(root)) throw ManifestError(path + ":" + std::to_string(dup->line) + ": " + dup->message());
    try {
        p.expect_map(root, "a manifest");
        p.only_keys(root, {"plugin", "library", "abi", "version", "description", "operators"}, "the manifest");
        Manifest m;
        m.file = path;
        m.dir = std::filesystem::path(path).parent_path().string();
        if (m.dir.empty()) m.dir = ".";
        m.plugin = p.str(p.required(root, "plugin", "the plugin name"), "plugin");
        m.library = p.str(p.required(root, "library", "the library file is lib<library>.so"), "library");
        if (!is_identifier("_" + m.library))  // (a leading digit is fine in a file name)
            p.fail(root["library"], "library must be letters, digits and '_' (the file is lib<library>.so), got '" + m.library + "'");
        if (!root["abi"]) p.fail(root, "missing 'abi' (the plugin ABI major version)");
        const int64_t abi = p.integer(root["abi"], "abi");
        if (abi < 1 || abi > 1000) p.fail(root["abi"], "abi must be a plugin ABI major version (1 to 1000), got " + std::to_string(abi));
        m.abi = static_cast<unsigned>(abi);
        if (root["version"]) m.version = p.str(root["version"], "version");
        if (root["description"]) m.description = p.str(root["description"], "description");
        if (!root["operators"]) p.fail(root, "missing 'operators'");
        p.expect_seq(root["operators"], "operators");
        // Operators may share a header, which then declares each of them (CANN's
        // aclnn_max_pool2d_with_indices.h declares two).
        std::set<std::string> names;
        for (const auto &o : root["operators"]) {
            m.ops.push_back(p.op(o));
            if (!names.insert(m.ops.back().name).second) p.fail(o, "operator " + m.ops.back().name + " declared twice");
            const auto &hs = m.ops.back().headers;
            for (size_t i = 0; i < hs.size(); ++i)
                if (std::find(hs.begin(), hs.begin() + static_cast<std::ptrdiff_t>(i), hs[i]) != hs.begin() + static_cast<std::ptrdiff_t>(i))
                    p.fail(o, "header " + hs[i] + " is listed twice by operator " + m.ops.back().name);
        }
        return m;
    } catch (const YAML::Exception &e) {
        throw ManifestError(where(path, e.mark) + one_line(e.msg));
    }
}

const char *param_type_name(ParamType t) {
    switch (t) {
        case ParamType::Tensor: return "tensor";
        case ParamType::IntArray: return "int_array";
        case ParamType::BoolArray: return "bool_array";
        case ParamType::FloatArray: return "float_array";
        case ParamType::Scalar: return "scalar";
        case ParamType::Int64: return "int64";
        case ParamType::Int32: return "int32";
        case ParamType::Int: return "int";
        case ParamType::Int8: return "int8";
        case ParamType::Bool: return "bool";
        case ParamType::Float: return "float";
        case ParamType::Double: return "double";
    }
    return "?";
}

int32_t param_arg_kind(ParamType t) {
    switch (t) {
        case ParamType::Tensor: return ACP_ARG_TENSOR;
        case ParamType::IntArray: return ACP_ARG_INT_ARRAY;
        case ParamType::BoolArray: return ACP_ARG_BOOL_ARRAY;
        case ParamType::FloatArray: return ACP_ARG_FLOAT_ARRAY;
        case ParamType::Scalar: return ACP_ARG_SCALAR;
        case ParamType::Bool: return ACP_ARG_BOOL;
        case ParamType::Float: case ParamType::Double: return ACP_ARG_FLOAT;
        default: return ACP_ARG_INT;
    }
}

std::string param_c_type(const Param &p) {
    switch (p.type) {
        case ParamType::Tensor: return p.output ? "aclTensor *" : "const aclTensor *";
        case ParamType::IntArray: return "const aclIntArray *";
        case ParamType::BoolArray: return "const aclBoolArray *";
        case ParamType::FloatArray: return "const aclFloatArray *";
        case ParamType::Scalar: return "const aclScalar *";
        case ParamType::Int64: return "int64_t ";
        case ParamType::Int32: return "int32_t ";
        case ParamType::Int: return "int ";
        case ParamType::Int8: return "int8_t ";
        case ParamType::Bool: return "bool ";
        case ParamType::Float: return "float ";
        case ParamType::Double: return "double ";
    }
    return "void *";
}

}  // namespace aclcpu
