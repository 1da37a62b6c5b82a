#include "context.hpp"

#include <dlfcn.h>
#include <tbb/info.h>
#include <tbb/task_arena.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "acl/acl.h"
#include "log.hpp"
#include "yaml_keys.hpp"

namespace aclcpu {
namespace {

constexpr const char *kDefaultProduct = "atlas-a2";
constexpr int kDefaultLogLevel = 3;  // error
// More threads than cores is allowed (tests run 3 threads on 2 cores), but each one is an OS thread
// TBB may start: 100000 stalled a 2-core machine for minutes. 1024 is far above any core count here.
constexpr int kMaxThreads = 1024;

struct Config {
    std::string product;
    int threads = 0;
    int log_level = -1;
    int timeline = -1;  // -1: not set (the environment decides)
    std::vector<std::string> plugin_paths;
    std::map<std::string, std::string> implementations;
    std::vector<std::string> enabled_ops, disabled_ops;
};

std::mutex g_mutex;
std::shared_ptr<const RuntimeState> g_state;  // guarded by g_mutex
bool g_initialized = false;                   // aclInit called and not finalized
uint64_t g_generation = 0;

// A directory's identity on the plugin search path: canonical where it exists, no trailing separator.
std::filesystem::path dir_key(const std::string &p) {
    std::error_code ec;
    std::filesystem::path k = std::filesystem::weakly_canonical(p, ec);
    if (ec) k = std::filesystem::path(p).lexically_normal();
    if (!k.has_filename() && k != k.root_path()) k = k.parent_path();
    return k;
}

std::vector<std::string> split_paths(const char *s) {
    std::vector<std::string> out;
    if (!s) return out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ':'))
        if (!item.empty()) out.push_back(item);
    return out;
}

std::string line_of(const std::string &file, const YAML::Node &n) { return file + ":" + std::to_string(n.Mark().line + 1); }

// A list of strings, or one line naming the key and what an entry must be.
std::vector<std::string> seq(const YAML::Node &n, const std::string &file, const char *key) {
    std::vector<std::string> out;
    if (!n) return out;
    if (!n.IsSequence()) throw std::runtime_error(line_of(file, n) + ": '" + key + "' must be a list");
    for (const auto &e : n) {
        if (!e.IsScalar()) throw std::runtime_error(line_of(file, e) + ": each entry of '" + key + "' must be a string, got a list or mapping");
        out.push_back(e.Scalar());
    }
    return out;
}

// A scalar key's value as T, or one line naming the key, what it must be and what it is.
template <class T>
T scalar(const YAML::Node &v, const std::string &at, const std::string &key, const char *expected) {
    try {
        return v.as<T>();
    } catch (const YAML::BadConversion &) {
        throw std::runtime_error(at + ": '" + key + "' must be " + expected + ", got " +
                                 (v.IsScalar() ? "'" + v.Scalar() + "'" : std::string("a list or mapping")));
    }
}

Config parse_config(const std::string &path) {
    Config c;
    const std::vector<YAML::Node> docs = YAML::LoadAllFromFile(path);  // YAML::Exception on syntax errors
    if (docs.size() > 1) throw std::runtime_error(path + ": the aclInit config must be one YAML document, got " + std::to_string(docs.size()));
    const YAML::Node root = docs.empty() ? YAML::Node() : docs[0];
    if (root.IsNull()) return c;
    if (!root.IsMap()) throw std::runtime_error(path + ": the aclInit config must be a YAML mapping");
    if (const auto dup = find_duplicate_key(root)) throw std::runtime_error(path + ":" + std::to_string(dup->line) + ": " + dup->message());
    for (const auto &kv : root) {
        const auto key = kv.first.as<std::string>();
        const auto &v = kv.second;
        const std::string at = line_of(path, kv.first);
        if (key == "product") c.product = scalar<std::string>(v, at, key, "a profile id or SoC name");
        else if (key == "threads") c.threads = scalar<int>(v, at, key, "an integer from 0 to 1024");
        else if (key == "log_level") c.log_level = scalar<int>(v, at, key, "an integer from 0 to 4");
        else if (key == "timeline") c.timeline = scalar<bool>(v, at, key, "true or false") ? 1 : 0;
        else if (key == "plugin_paths") c.plugin_paths = seq(v, path, "plugin_paths");
        else if (key == "enabled_ops") c.enabled_ops = seq(v, path, "enabled_ops");
        else if (key == "disabled_ops") c.disabled_ops = seq(v, path, "disabled_ops");
        else if (key == "implementations") {
            if (!v.IsMap()) throw std::runtime_error(at + ": 'implementations' must be a mapping of operator to plugin");
            for (const auto &e : v) {
                if (!e.second.IsScalar())
                    throw std::runtime_error(line_of(path, e.first) + ": 'implementations' of " + e.first.as<std::string>() +
                                             " must be a plugin name, got a list or mapping");
                c.implementations[e.first.as<std::string>()] = e.second.Scalar();
            }
        } else throw std::runtime_error(at + ": unknown key '" + key + "' (known: product, threads, log_level, timeline, plugin_paths, enabled_ops, disabled_ops, implementations)");
    }
    if (c.log_level < -1 || c.log_level > 4 || (c.log_level == -1 && root["log_level"]))
        throw std::runtime_error(path + ": log_level must be from 0 (debug) to 4 (none), got " + std::to_string(c.log_level));
    if (c.threads < 0 || c.threads > kMaxThreads)
        throw std::runtime_error(path + ": threads must be from 0 (all cores) to " + std::to_string(kMaxThreads) + ", got " +
                                 std::to_string(c.threads));
    return c;
}

std::shared_ptr<const RuntimeState> build_state(const Config &c) {
    const auto profiles = installed_profiles();
    std::string key = c.product;
    if (key.empty())
        if (const char *env = std::getenv("ACLNN_CPU_PRODUCT"); env && *env) key = env;
    if (key.empty()) key = kDefaultProduct;
    const Profile *p = find_profile(profiles, key);
    if (!p) {
        std::string known;
        for (const auto &q : profiles) known += (known.empty() ? "" : ", ") + q.id;
        throw std::invalid_argument("unknown product '" + key + "' (known: " + known + ")");
    }
    auto s = std::make_shared<RuntimeState>();
    s->product = *p;
    int threads = c.threads;
    if (threads == 0)
        if (const char *env = std::getenv("ACLNN_CPU_THREADS"); env && *env) {
            char *end = nullptr;
            const long v = std::strtol(env, &end, 10);
            if (*end != '\0' || v < 0 || v > kMaxThreads)
                throw std::invalid_argument("ACLNN_CPU_THREADS must be an integer from 0 (all cores) to " +
                                            std::to_string(kMaxThreads) + ", got '" + env + "'");
            threads = static_cast<int>(v);
        }
    if (threads <= 0) threads = tbb::info::default_concurrency();
    s->threads = threads;
    // More threads than cores is allowed (determinism tests run 3 threads on 2 cores): TBB caps its
    // workers at the core count unless told otherwise.
    if (threads > tbb::info::default_concurrency())
        s->allow_threads = std::make_shared<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                                 static_cast<size_t>(threads));
    s->arena = std::make_shared<tbb::task_arena>(threads);
    // The installed plugins first: an operator that another plugin on the path provides again is
    // the duplicate (skipped with a diagnostic) unless `implementations` picks it.
    // Each directory once, at its first place (set_env.sh puts the installed one on the env path too).
    const auto add_path = [&paths = s->plugin_paths](const std::string &pp) {
        const auto key = dir_key(pp);
        if (std::none_of(paths.begin(), paths.end(), [&](const std::string &q) { return dir_key(q) == key; }))
            paths.push_back(pp);
    };
    add_path(install_layout().plugin_dir);
    for (const auto &pp : c.plugin_paths) add_path(pp);
    for (const auto &pp : split_paths(std::getenv("ACLNN_CPU_PLUGIN_PATH"))) add_path(pp);
    s->implementations = p->implementations;
    for (const auto &kv : c.implementations) s->implementations[kv.first] = kv.second;
    s->enabled_ops = c.enabled_ops;
    if (c.timeline >= 0) {
        s->timeline = c.timeline == 1;
    } else if (const char *env = std::getenv("ACLNN_CPU_TIMELINE")) {
        s->timeline = *env && std::string(env) != "0";
    }
    s->disabled_ops = c.disabled_ops;
    s->generation = ++g_generation;
    return s;
}

}  // namespace

const InstallLayout &install_layout() {
    static const InstallLayout layout = [] {
        Dl_info info{};
        dladdr(reinterpret_cast<void *>(&install_layout), &info);
        namespace fs = std::filesystem;
        const fs::path lib = fs::path(info.dli_fname ? info.dli_fname : ".").parent_path();
        InstallLayout l;
        l.lib_dir = lib.string();
        l.products_dir = (lib / ".." / "share" / "aclnn-cpu" / "products").lexically_normal().string();
        l.plugin_dir = (lib / "aclnn-cpu" / "plugins").lexically_normal().string();
        if (const char *env = std::getenv("ACLNN_CPU_PRODUCTS_DIR"); env && *env) l.products_dir = env;
        return l;
    }();
    return layout;
}

std::vector<Profile> installed_profiles() { return load_profiles(install_layout().products_dir); }

std::shared_ptr<const RuntimeState> runtime_state() {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_state) {
        try {
            g_state = build_state(Config{});
        } catch (const std::exception &e) {
            // No usable profile at all: keep a minimal state so that calls fail cleanly, not crash.
            log(LogLevel::Error, std::string("default runtime configuration failed: ") + e.what());
            auto s = std::make_shared<RuntimeState>();
            s->product.id = "unknown";
            s->product.name = "unknown product";
            s->arena = std::make_shared<tbb::task_arena>(1);
            s->startup_error = e.what();
            g_state = s;
        }
    }
    return g_state;
}

void release_default_state() {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_initialized) g_state.reset();  // live executors keep their own snapshot
}

std::shared_ptr<const RuntimeState> make_state_for_product(const std::string &product) {
    Config c;
    c.product = product;
    std::lock_guard<std::mutex> lock(g_mutex);
    return build_state(c);
}

bool op_enabled(const RuntimeState &state, const std::string &op) {
    if (!state.product.op_enabled(op)) return false;
    auto has = [&](const std::vector<std::string> &v) {
        return std::find(v.begin(), v.end(), op) != v.end() || std::find(v.begin(), v.end(), "*") != v.end();
    };
    if (!state.enabled_ops.empty() && !has(state.enabled_ops)) return false;
    return !has(state.disabled_ops);
}

}  // namespace aclcpu

using namespace aclcpu;

extern "C" {

ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_initialized) return set_error(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized; call aclFinalize first");
    Config c;
    if (configPath && *configPath) {
        if (!std::filesystem::is_regular_file(configPath))
            return set_error(ACL_ERROR_INVALID_FILE, std::string("aclInit: config file '") + configPath + "' does not exist");
        try {
            c = parse_config(configPath);
        } catch (const YAML::Exception &e) {
            return set_error(ACL_ERROR_PARSE_FILE, std::string("aclInit: ") + configPath + ":" +
                                                       std::to_string(e.mark.line + 1) + ": " + e.msg);
        } catch (const std::exception &e) {
            return set_error(ACL_ERROR_PARSE_FILE, std::string("aclInit: ") + e.what());
        }
    }
    try {
        g_state = build_state(c);
    } catch (const std::exception &e) {
        return set_error(ACL_ERROR_INVALID_PARAM, std::string("aclInit: ") + e.what());
    }
    set_config_log_level(c.log_level >= 0 ? c.log_level : kDefaultLogLevel);  // only an accepted config counts
    g_initialized = true;
    log(LogLevel::Info, "aclInit: product " + g_state->product.id + " (" + g_state->product.soc + "), " +
                            std::to_string(g_state->threads) + " threads");
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclFinalize(void) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_initialized) return set_error(ACL_ERROR_UNINITIALIZE, "aclFinalize: aclInit was not called");
    g_initialized = false;
    g_state.reset();  // live executors keep their own snapshot
    set_config_log_level(kDefaultLogLevel);
    return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY const char *aclrtGetSocName(void) {
    // The string must outlive the call: keep every SoC name handed out (a handful at most).
    static std::mutex m;
    static std::vector<std::unique_ptr<std::string>> names;
    const std::string soc = runtime_state()->product.soc;
    std::lock_guard<std::mutex> lock(m);
    for (const auto &n : names)
        if (*n == soc) return n->c_str();
    names.push_back(std::make_unique<std::string>(soc));
    return names.back()->c_str();
}

}  // extern "C"
