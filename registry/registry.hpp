// The plugin registry: scans plugin directories for manifests, loads each plugin library with
// Boost.DLL, checks it against its manifest, and answers "who implements operator X". A broken
// plugin is skipped with one diagnostic naming its file. Libraries are never unloaded, not even
// rejected ones, and each plugin's init() runs once per process; every operator entry (and every
// executor) holds a shared reference to its library.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl_base.h"
#include "aclnn_cpu/plugin_abi.h"
#include "manifest.hpp"

namespace boost::dll {
class shared_library;
}

namespace aclcpu {

struct LoadedPlugin {
    Manifest manifest;
    std::string library_path;
    std::shared_ptr<boost::dll::shared_library> library;
    const acp_plugin *descriptor = nullptr;
};

struct OpEntry {
    const OpManifest *manifest = nullptr;
    const acp_op *op = nullptr;
    std::shared_ptr<const LoadedPlugin> plugin;
};

class ACL_FUNC_VISIBILITY Registry {
public:
    // Scans `paths` in order (a directory holding manifest.yaml, a directory of such directories,
    // or a manifest file). `preferred` maps operator -> plugin name for resolving duplicates.
    Registry(const std::vector<std::string> &paths, const std::map<std::string, std::string> &preferred);

    const OpEntry *find(const std::string &op) const;
    const std::map<std::string, OpEntry> &ops() const { return ops_; }
    const std::vector<std::shared_ptr<const LoadedPlugin>> &plugins() const { return plugins_; }
    // One line per problem met while scanning ("<file>: <what>").
    const std::vector<std::string> &diagnostics() const { return diagnostics_; }

private:
    void load_manifest(const std::string &file);
    void add_ops(const std::shared_ptr<const LoadedPlugin> &p);
    void diagnose(const std::string &line);

    std::map<std::string, std::string> preferred_;
    std::vector<std::shared_ptr<const LoadedPlugin>> plugins_;
    std::map<std::string, OpEntry> ops_;
    std::vector<std::string> diagnostics_;
};

// The registry for these search paths and preferences, built once and shared.
ACL_FUNC_VISIBILITY std::shared_ptr<const Registry> registry_for(const std::vector<std::string> &paths,
                                             const std::map<std::string, std::string> &preferred);

// The host API handed to plugins (planning and running functions), defined by the executor.
const acp_host_api *host_api();

}  // namespace aclcpu
