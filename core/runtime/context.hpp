// The runtime context: what aclInit chose (product profile, threads, plugin paths, log level) and
// where the installed tree is. Readers take an immutable snapshot, so an executor planned under one
// configuration keeps it even if the application re-initializes.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include "acl/acl_base.h"
#include "profile.hpp"

namespace aclcpu {

struct RuntimeState {
    Profile product;
    int threads = 1;                                 // worker threads of `arena`
    std::shared_ptr<tbb::task_arena> arena; // executors run inside it
    std::shared_ptr<tbb::global_control> allow_threads;  // lifts TBB's default cap when threads > cores
    std::vector<std::string> plugin_paths;           // search order: installed, config, env
    std::map<std::string, std::string> implementations;  // operator -> preferred plugin (config over profile)
    std::vector<std::string> enabled_ops, disabled_ops;  // from the config file, on top of the profile
    bool timeline = false;                           // log every run's node times (config `timeline`, env ACLNN_CPU_TIMELINE)
    uint64_t generation = 0;                         // bumps on every aclInit
    // Why the default configuration (no aclInit: environment only) could not start, or empty;
    // operator calls and the CLI report it instead of an empty plugin list.
    std::string startup_error;
};

struct InstallLayout {
    std::string lib_dir;       // directory of libascendcl.so
    std::string products_dir;  // <prefix>/share/aclnn-cpu/products
    std::string plugin_dir;    // <lib>/aclnn-cpu/plugins
};

ACL_FUNC_VISIBILITY const InstallLayout &install_layout();
// The current state; initializes with defaults (env, then atlas-a2) if aclInit was never called.
ACL_FUNC_VISIBILITY std::shared_ptr<const RuntimeState> runtime_state();
// Drops the state runtime_state() started without aclInit (aclnnFinalize), so the next call starts
// afresh from the environment; the state of an aclInit in force stays (aclFinalize owns it).
ACL_FUNC_VISIBILITY void release_default_state();
// Every product profile installed (for the CLI and tests).
ACL_FUNC_VISIBILITY std::vector<Profile> installed_profiles();
// Builds a state for `product` (id or SoC) with the current env and defaults: the CLI's --product.
ACL_FUNC_VISIBILITY std::shared_ptr<const RuntimeState> make_state_for_product(const std::string &product);
// True when the op is enabled by both the profile and the runtime config.
ACL_FUNC_VISIBILITY bool op_enabled(const RuntimeState &state, const std::string &op);
// Whether `stream` is the default (NULL) stream or one aclrtCreateStream made and nobody destroyed.
ACL_FUNC_VISIBILITY bool stream_is_live(const void *stream);

}  // namespace aclcpu
