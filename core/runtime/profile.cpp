#include "profile.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "aclnn_cpu/dtype.hpp"
#include "yaml_keys.hpp"

namespace aclcpu {
namespace {

std::string where(const std::string &file, const YAML::Node &n) {
    return file + ":" + std::to_string(n.Mark().line + 1);
}

// A scalar of type T, or an error naming the file, the line and what was expected.
template <class T>
T scalar(const std::string &file, const YAML::Node &n, const std::string &what) {
    if (n.IsScalar()) try {
            return n.as<T>();
        } catch (const YAML::BadConversion &) {
        }
    throw std::runtime_error(where(file, n) + ": " + what + ", got " +
                             (n.IsScalar() ? "'" + n.Scalar() + "'" : n.IsNull() ? std::string("nothing") : std::string("a list or mapping")));
}

std::vector<std::string> string_list(const std::string &file, const YAML::Node &n) {
    if (!n) return {};
    if (!n.IsSequence()) throw std::runtime_error(where(file, n) + ": expected a list of operator names");
    std::vector<std::string> out;
    for (const auto &e : n) out.push_back(scalar<std::string>(file, e, "expected an operator name"));
    return out;
}

CubeAction parse_action(const std::string &file, const YAML::Node &n) {
    const auto s = scalar<std::string>(file, n, "cube_math action must be keep, fp16, hf32 or reject");
    if (s == "keep") return CubeAction::Keep;
    if (s == "fp16") return CubeAction::Fp16;
    if (s == "hf32") return CubeAction::Hf32;
    if (s == "reject") return CubeAction::Reject;
    throw std::runtime_error(where(file, n) + ": cube_math action must be keep, fp16, hf32 or reject, got '" + s + "'");
}

}  // namespace

bool Profile::op_enabled(const std::string &op) const {
    auto has = [&](const std::vector<std::string> &v) {
        return std::find(v.begin(), v.end(), op) != v.end() || std::find(v.begin(), v.end(), "*") != v.end();
    };
    if (!enabled_ops.empty() && !has(enabled_ops)) return false;
    return !has(disabled_ops);
}

Profile load_profile(const std::string &path) {
    YAML::Node root;
    try {
        root = YAML::LoadFile(path);
    } catch (const YAML::Exception &e) {
        throw std::runtime_error(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
    }
    if (!root.IsMap()) throw std::runtime_error(path + ": a product profile must be a YAML mapping");
    if (const auto dup = find_duplicate_key(root)) throw std::runtime_error(path + ":" + std::to_string(dup->line) + ": " + dup->message());
    Profile p;
    p.file = path;
    for (const char *key : {"id", "name", "soc"})
        if (!root[key]) throw std::runtime_error(path + ": missing required key '" + key + "'");
    p.id = scalar<std::string>(path, root["id"], "id must be a profile id");
    p.name = scalar<std::string>(path, root["name"], "name must be the product's name");
    p.soc = scalar<std::string>(path, root["soc"], "soc must be a SoC name");
    if (const auto cm = root["cube_math"]) {
        if (!cm.IsMap()) throw std::runtime_error(where(path, cm) + ": cube_math must map cubeMathType values");
        for (const auto &entry : cm) {
            const int mode = scalar<int>(path, entry.first, "cube_math keys must be cubeMathType values (integers)");
            if (!entry.second.IsMap())
                throw std::runtime_error(where(path, entry.first) + ": cube_math " + std::to_string(mode) + " must map dtypes to actions");
            for (const auto &d : entry.second) {
                const auto name = scalar<std::string>(path, d.first, "expected a dtype name");
                const auto dt = acp::parse_dtype(name);
                if (!dt) throw std::runtime_error(where(path, d.first) + ": unknown dtype '" + name + "'");
                p.cube_math[mode][*dt] = parse_action(path, d.second);
            }
        }
    }
    p.enabled_ops = string_list(path, root["enabled_ops"]);
    p.disabled_ops = string_list(path, root["disabled_ops"]);
    if (const auto impl = root["implementations"]) {
        if (!impl.IsMap()) throw std::runtime_error(where(path, impl) + ": implementations must map operators to plugins");
        for (const auto &e : impl)
            p.implementations[scalar<std::string>(path, e.first, "expected an operator name")] =
                scalar<std::string>(path, e.second, "implementations of an operator must be a plugin name");
    }
    for (const auto &kv : root) {
        const auto k = scalar<std::string>(path, kv.first, "expected a key");
        static const char *known[] = {"id", "name", "soc", "cube_math", "enabled_ops", "disabled_ops", "implementations"};
        if (std::none_of(std::begin(known), std::end(known), [&](const char *s) { return k == s; }))
            throw std::runtime_error(where(path, kv.first) + ": unknown key '" + k + "'");
    }
    return p;
}

std::vector<Profile> load_profiles(const std::string &dir) {
    std::vector<Profile> out;
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    for (const auto &e : std::filesystem::directory_iterator(dir, ec))
        if (e.path().extension() == ".yaml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto &f : files) {
        out.push_back(load_profile(f.string()));
        for (size_t i = 0; i + 1 < out.size(); ++i)
            if (out[i].id == out.back().id)
                throw std::runtime_error(out.back().file + ": profile id '" + out.back().id + "' is already declared by " + out[i].file);
    }
    return out;
}

const Profile *find_profile(const std::vector<Profile> &all, const std::string &key) {
    auto lower = [](std::string s) {
        std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        return s;
    };
    for (const auto &p : all)
        if (p.id == key || lower(p.soc) == lower(key)) return &p;
    return nullptr;
}

CubeAction cube_action(const std::map<int32_t, CubeAction> &row, int64_t mode, int32_t dtype,
                       const std::map<int64_t, std::vector<int32_t>> &rejects) {
    const auto r = rejects.find(mode);
    if (r != rejects.end() && std::find(r->second.begin(), r->second.end(), dtype) != r->second.end())
        return CubeAction::Reject;
    const auto a = row.find(dtype);
    return a == row.end() ? CubeAction::Keep : a->second;
}

const char *cube_action_name(CubeAction a) {
    switch (a) {
        case CubeAction::Keep: return "keep";
        case CubeAction::Fp16: return "fp16";
        case CubeAction::Hf32: return "hf32";
        default: return "reject";
    }
}

}  // namespace aclcpu
