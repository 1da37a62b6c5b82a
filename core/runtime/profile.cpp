#include "profile.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "aclnn_cpu/dtype.hpp"

namespace aclcpu {
namespace {

std::string where(const std::string &file, const YAML::Node &n) {
    return file + ":" + std::to_string(n.Mark().line + 1);
}

std::vector<std::string> string_list(const std::string &file, const YAML::Node &n) {
    if (!n) return {};
    if (!n.IsSequence()) throw std::runtime_error(where(file, n) + ": expected a list of operator names");
    std::vector<std::string> out;
    for (const auto &e : n) out.push_back(e.as<std::string>());
    return out;
}

CubeAction parse_action(const std::string &file, const YAML::Node &n) {
    const auto s = n.as<std::string>();
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
    Profile p;
    p.file = path;
    for (const char *key : {"id", "name", "soc"})
        if (!root[key]) throw std::runtime_error(path + ": missing required key '" + key + "'");
    p.id = root["id"].as<std::string>();
    p.name = root["name"].as<std::string>();
    p.soc = root["soc"].as<std::string>();
    if (const auto cm = root["cube_math"]) {
        if (!cm.IsMap()) throw std::runtime_error(where(path, cm) + ": cube_math must map cubeMathType values");
        for (const auto &entry : cm) {
            const int mode = entry.first.as<int>();
            for (const auto &d : entry.second) {
                const auto dt = acp::parse_dtype(d.first.as<std::string>());
                if (!dt) throw std::runtime_error(where(path, d.first) + ": unknown dtype '" + d.first.as<std::string>() + "'");
                p.cube_math[mode][*dt] = parse_action(path, d.second);
            }
        }
    }
    p.enabled_ops = string_list(path, root["enabled_ops"]);
    p.disabled_ops = string_list(path, root["disabled_ops"]);
    if (const auto impl = root["implementations"])
        for (const auto &e : impl) p.implementations[e.first.as<std::string>()] = e.second.as<std::string>();
    for (const auto &kv : root) {
        const auto k = kv.first.as<std::string>();
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
    for (const auto &f : files) out.push_back(load_profile(f.string()));
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

const char *cube_action_name(CubeAction a) {
    switch (a) {
        case CubeAction::Keep: return "keep";
        case CubeAction::Fp16: return "fp16";
        case CubeAction::Hf32: return "hf32";
        default: return "reject";
    }
}

}  // namespace aclcpu
