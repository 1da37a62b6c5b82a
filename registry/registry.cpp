#include "registry.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <boost/dll/shared_library.hpp>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "../core/runtime/log.hpp"

namespace aclcpu {
namespace fs = std::filesystem;

namespace {

// Why a library does not load, in the dynamic loader's words (an undefined symbol, not an ELF
// file, ...): Boost.DLL's error code keeps only errno ("Bad file descriptor"), so on this failure
// path the library is opened once more to read dlerror().
std::string load_failure(const std::string &path, const boost::system::error_code &ec) {
    (void)dlerror();
    if (void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        dlclose(h);
        return ec.message();
    }
    const char *why = dlerror();
    return why ? why : ec.message();
}


std::mutex &load_mutex() {  // one loader at a time: dlopen order and diagnostics stay deterministic
    static std::mutex m;
    return m;
}

// A plugin library, opened once per process and never closed: a plugin rejected after loading may
// already run threads or hold callbacks (closing it would take the process down), and init() runs
// once per load (plugin_abi.h), however many registries the configurations build.
struct OpenedLibrary {
    std::shared_ptr<boost::dll::shared_library> lib;
    bool init_ran = false;
    acp_status init_status = 0;
    std::string init_message;
};

// The library at `path`, opened on first use (the caller holds load_mutex); nullptr when it does
// not load, with the reason in `why`.
OpenedLibrary *open_library(const std::string &path, std::string &why) {
    static auto *opened = new std::map<std::string, OpenedLibrary>;  // never destroyed, like the libraries
    std::error_code fec;
    const std::string key = fs::weakly_canonical(path, fec).string();
    const auto it = opened->find(key);
    if (it != opened->end()) return &it->second;
    boost::system::error_code ec;
    auto lib = std::make_shared<boost::dll::shared_library>(
        path, boost::dll::load_mode::rtld_local | boost::dll::load_mode::rtld_now, ec);
    if (ec || !lib->is_loaded()) {
        why = load_failure(path, ec);
        return nullptr;
    }
    OpenedLibrary &o = (*opened)[key];
    o.lib = std::move(lib);
    return &o;
}

std::vector<std::string> manifests_under(const std::string &path) {
    std::vector<std::string> out;
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) return {path};
    if (!fs::is_directory(path, ec)) return out;
    if (fs::is_regular_file(fs::path(path) / "manifest.yaml", ec)) return {(fs::path(path) / "manifest.yaml").string()};
    for (const auto &e : fs::directory_iterator(path, ec)) {
        const auto m = e.path() / "manifest.yaml";
        if (e.is_directory(ec) && fs::is_regular_file(m, ec)) out.push_back(m.string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

Registry::Registry(const std::vector<std::string> &paths, const std::map<std::string, std::string> &preferred)
    : preferred_(preferred) {
    std::lock_guard<std::mutex> lock(load_mutex());
    std::set<std::string> seen;
    for (const auto &path : paths)
        for (const auto &file : manifests_under(path)) {
            std::error_code ec;
            const auto canonical = fs::weakly_canonical(file, ec).string();
            if (seen.insert(canonical).second) load_manifest(file);
        }
}

void Registry::diagnose(const std::string &line) {
    diagnostics_.push_back(line);
    log(LogLevel::Error, "plugin skipped: " + line);
}

void Registry::load_manifest(const std::string &file) {
    auto p = std::make_shared<LoadedPlugin>();
    try {
        p->manifest = parse_manifest(file);
    } catch (const std::exception &e) {
        diagnose(e.what());
        return;
    }
    const Manifest &m = p->manifest;
    p->library_path = m.library_path();
    if (m.abi != ACP_ABI_MAJOR) {
        diagnose(file + ": manifest declares plugin ABI " + std::to_string(m.abi) + ", this core speaks ABI " +
                 std::to_string(ACP_ABI_MAJOR));
        return;
    }
    if (!fs::is_regular_file(p->library_path)) {
        diagnose(file + ": the library it names does not exist: " + p->library_path);
        return;
    }
    std::string why;
    OpenedLibrary *opened = open_library(p->library_path, why);
    if (!opened) {
        diagnose(p->library_path + ": cannot load the plugin library (" + why + ")");
        return;
    }
    const auto &lib = opened->lib;
    if (!lib->has(ACP_ENTRY_POINT)) {
        diagnose(p->library_path + ": no exported entry point '" ACP_ENTRY_POINT "'");
        return;
    }
    const acp_plugin *d = lib->get<const acp_plugin *()>(ACP_ENTRY_POINT)();
    if (!d || d->struct_size < sizeof(acp_plugin) - sizeof(d->reserved)) {
        diagnose(p->library_path + ": the entry point returned no valid descriptor");
        return;
    }
    if (d->abi_major != ACP_ABI_MAJOR) {
        diagnose(p->library_path + ": plugin ABI major " + std::to_string(d->abi_major) + ", this core speaks " +
                 std::to_string(ACP_ABI_MAJOR));
        return;
    }
    // The manifest and the library must declare the same operators.
    std::set<std::string> declared, provided;
    for (const auto &op : m.ops) declared.insert(op.name);
    for (uint32_t i = 0; i < d->n_ops; ++i) {
        if (!d->ops || !d->ops[i].name || !d->ops[i].plan) {
            diagnose(p->library_path + ": operator entry " + std::to_string(i) + " has no name or plan function");
            return;
        }
        provided.insert(d->ops[i].name);
    }
    for (const auto &name : declared)
        if (!provided.count(name)) {
            diagnose(file + ": declares operator " + name + " but " + p->library_path + " does not provide it");
            return;
        }
    for (const auto &name : provided)
        if (!declared.count(name)) {
            diagnose(p->library_path + ": provides operator " + name + " that " + file + " does not declare");
            return;
        }
    if (d->init && !opened->init_ran) {
        const char *message = nullptr;
        opened->init_status = d->init(host_api(), &message);
        opened->init_message = message ? message : "";
        opened->init_ran = true;
    }
    if (opened->init_status != 0) {
        diagnose(p->library_path + ": plugin init failed with status " + std::to_string(opened->init_status) +
                 (opened->init_message.empty() ? std::string() : ": " + opened->init_message));
        return;
    }
    p->library = lib;
    p->descriptor = d;
    plugins_.push_back(p);
    add_ops(p);
}

void Registry::add_ops(const std::shared_ptr<const LoadedPlugin> &p) {
    for (const auto &opm : p->manifest.ops) {
        OpEntry e;
        e.manifest = &opm;
        e.plugin = p;
        for (uint32_t i = 0; i < p->descriptor->n_ops; ++i)
            if (opm.name == p->descriptor->ops[i].name) e.op = &p->descriptor->ops[i];
        const auto pref = preferred_.find(opm.name);
        const auto it = ops_.find(opm.name);
        if (it == ops_.end()) {
            ops_[opm.name] = e;
        } else if (pref != preferred_.end() && pref->second == p->manifest.plugin) {
            log(LogLevel::Info, "operator " + opm.name + ": using plugin " + p->manifest.plugin + " (" +
                                    p->manifest.file + ") as configured, over " + it->second.plugin->manifest.file);
            it->second = e;
        } else if (pref != preferred_.end() && pref->second == it->second.plugin->manifest.plugin) {
            log(LogLevel::Info, "operator " + opm.name + ": keeping plugin " + pref->second + " as configured");
        } else {
            diagnose(p->manifest.file + ": duplicate operator " + opm.name + ", already provided by " +
                     it->second.plugin->manifest.file + "; keeping the first (choose one with implementations: {" +
                     opm.name + ": <plugin>} in the profile or aclInit config)");
        }
    }
}

const OpEntry *Registry::find(const std::string &op) const {
    const auto it = ops_.find(op);
    return it == ops_.end() ? nullptr : &it->second;
}

std::shared_ptr<const Registry> registry_for(const std::vector<std::string> &paths,
                                             const std::map<std::string, std::string> &preferred) {
    static std::mutex m;
    static auto *cache = new std::map<std::pair<std::vector<std::string>, std::map<std::string, std::string>>,
                                      std::shared_ptr<const Registry>>;  // never destroyed: plugins stay resident
    std::lock_guard<std::mutex> lock(m);
    auto &slot = (*cache)[{paths, preferred}];
    if (!slot) slot = std::make_shared<const Registry>(paths, preferred);
    return slot;
}

}  // namespace aclcpu
