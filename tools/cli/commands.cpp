#include "commands.hpp"

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "aclnn_cpu/dtype.hpp"
#include "core/runtime/context.hpp"
#include "core/runtime/log.hpp"
#include "registry.hpp"

namespace aclcli {
namespace {

namespace fs = std::filesystem;
using aclcpu::OpManifest;
using aclcpu::Profile;
using aclcpu::RuntimeState;

std::shared_ptr<const RuntimeState> state_for(const Options &o) {
    aclcpu::set_config_log_level(4);  // the CLI reports problems itself
    auto s = o.product.empty() ? aclcpu::runtime_state() : aclcpu::make_state_for_product(o.product);
    if (!s->startup_error.empty()) throw std::runtime_error(s->startup_error);  // (main reports it, exit 1)
    return s;
}

std::shared_ptr<const aclcpu::Registry> registry_of(const RuntimeState &s) {
    return aclcpu::registry_for(s.plugin_paths, s.implementations);
}

template <class T, class F>
std::string join(const std::vector<T> &v, F f, const char *sep = ", ") {
    std::string out;
    for (const auto &x : v) out += (out.empty() ? "" : sep) + std::string(f(x));
    return out;
}
std::string dtypes(const std::vector<int32_t> &v) { return join(v, [](int32_t d) { return acp::dtype_name(d); }); }
std::string formats(const std::vector<int32_t> &v) { return join(v, [](int32_t f) { return acp::format_name(f); }); }
std::string ints(const std::vector<int64_t> &v) { return join(v, [](int64_t i) { return std::to_string(i); }); }

// Why an operator does or does not run on the product, in a few words.
std::string availability(const RuntimeState &s, const OpManifest &op) {
    if (!op.rules_for(s.product.id)) return "unsupported on " + s.product.id;
    if (!aclcpu::op_enabled(s, op.name)) return "disabled by profile/config";
    return "enabled";
}

void print_header(const RuntimeState &s) {
    std::cout << "product: " << s.product.id << " (" << s.product.soc << ") - " << s.product.name << "\n"
              << "plugin path: " << join(s.plugin_paths, [](const std::string &p) { return p; }, ":") << "\n";
}

std::string signature(const OpManifest &op) {
    std::ostringstream os;
    os << "aclnnStatus aclnn" << op.name << "GetWorkspaceSize(\n";
    for (const auto &p : op.params) os << "    " << aclcpu::param_c_type(p) << p.name << ",\n";
    os << "    uint64_t *workspaceSize, aclOpExecutor **executor);\n"
       << "aclnnStatus aclnn" << op.name << "(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);\n";
    return os.str();
}

void print_rules(const aclcpu::Rules &r, const OpManifest &op, const std::string &indent) {
    for (const auto &p : op.params) {
        if (p.type != aclcpu::ParamType::Tensor) continue;
        std::vector<std::string> parts;
        if (auto it = r.dtypes.find(p.name); it != r.dtypes.end()) parts.push_back("dtype " + dtypes(it->second));
        if (auto it = r.formats.find(p.name); it != r.formats.end()) parts.push_back("format " + formats(it->second));
        if (auto it = r.ranks.find(p.name); it != r.ranks.end()) parts.push_back("rank " + ints(it->second));
        if (!parts.empty()) std::cout << indent << std::left << std::setw(16) << p.name << join(parts, [](const std::string &x) { return x; }, "; ") << "\n";
    }
    for (const auto &kv : r.attrs) {
        std::vector<std::string> parts;
        if (!kv.second.lengths.empty()) parts.push_back("length " + ints(kv.second.lengths));
        if (kv.second.range) parts.push_back("range [" + std::to_string(kv.second.range->first) + ", " + std::to_string(kv.second.range->second) + "]");
        if (!kv.second.values.empty()) parts.push_back("values " + ints(kv.second.values));
        std::cout << indent << std::left << std::setw(16) << kv.first << join(parts, [](const std::string &x) { return x; }, "; ") << "\n";
    }
}

std::vector<std::string> manifests_in(const std::string &path) {
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) return {path};
    if (fs::is_regular_file(fs::path(path) / "manifest.yaml", ec)) return {(fs::path(path) / "manifest.yaml").string()};
    std::vector<std::string> out;
    for (const auto &e : fs::directory_iterator(path, ec))
        if (fs::is_regular_file(e.path() / "manifest.yaml", ec)) out.push_back((e.path() / "manifest.yaml").string());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

int cmd_list(const Options &o) {
    const auto s = state_for(o);
    const auto reg = registry_of(*s);
    print_header(*s);
    std::cout << "\n";
    size_t width = 28;  // the longest operator name and two spaces, for one column of availability
    for (const auto &p : reg->plugins())
        for (const auto &op : p->manifest.ops) width = std::max(width, op.name.size() + 2);
    for (const auto &p : reg->plugins()) {
        const auto &m = p->manifest;
        std::cout << m.plugin << " " << m.version << "  " << p->library_path << "\n";
        if (!m.description.empty()) std::cout << "  " << m.description << "\n";
        for (const auto &op : m.ops) {
            const auto *entry = reg->find(op.name);
            const bool serving = entry && entry->plugin == p;
            std::cout << "    aclnn" << std::left << std::setw(static_cast<int>(width)) << op.name << availability(*s, op)
                      << (serving ? "" : "  (shadowed by " + (entry ? entry->plugin->manifest.file : std::string("?")) + ")") << "\n";
        }
    }
    std::cout << "\n" << reg->plugins().size() << " plugin(s), " << reg->ops().size() << " operator(s)\n";
    if (!reg->diagnostics().empty()) {
        std::cout << "\nskipped:\n";
        for (const auto &d : reg->diagnostics()) std::cout << "  " << d << "\n";
    }
    return 0;
}

int cmd_describe(const Options &o) {
    std::string name = o.args[0];
    if (name.rfind("aclnn", 0) == 0) name = name.substr(5);
    const auto s = state_for(o);
    const auto reg = registry_of(*s);
    const auto *e = reg->find(name);
    if (!e) throw std::invalid_argument("no loaded plugin provides operator '" + name + "' (see 'aclnn-cpu list')");
    const OpManifest &op = *e->manifest;
    std::cout << "aclnn" << op.name << "\n"
              << "  plugin:  " << e->plugin->manifest.plugin << " " << e->plugin->manifest.version << ", plugin ABI "
              << e->plugin->descriptor->abi_major << "." << e->plugin->descriptor->abi_minor << " (" << e->plugin->library_path << ")\n"
              << "  manifest: " << e->plugin->manifest.file << "\n"
              << "  header:  " << join(op.headers, [](const std::string &h) { return "aclnnop/" + h; }) << "\n\n"
              << signature(op) << "\nparameters:\n";
    for (const auto &p : op.params)
        std::cout << "  " << std::left << std::setw(18) << p.name << std::setw(12) << aclcpu::param_type_name(p.type)
                  << (p.output ? "output" : "input")
                  << (!p.is_pointer()      ? ""
                      : p.optional         ? ", may be NULL"
                      : p.required_if_mask.empty() ? ", required"
                                           : ", required when " + p.required_if() + " is true")
                  << "\n";
    for (const auto &g : op.same_dtype)
        std::cout << "same dtype: " << join(g, [](const std::string &x) { return x; }, " = ") << "\n";
    for (const auto &[from, to] : op.castable) std::cout << "castable: " << from << " -> " << to << "\n";
    if (!op.null_order.empty())
        std::cout << "NULL check order: " << join(op.null_order, [](const std::string &x) { return x; }) << ", then the rest\n";
    if (!op.notes.empty()) std::cout << "\nnotes (checked by the plugin's plan):\n";
    for (const auto &note : op.notes) std::cout << "  - " << note << "\n";
    std::cout << "\nall products:\n";
    print_rules(op.common, op, "  ");
    std::vector<Profile> profiles = aclcpu::installed_profiles();
    if (!o.product.empty()) profiles = {s->product};
    for (const auto &pr : profiles) {
        std::cout << "\n" << pr.id << " (" << pr.soc << ", " << pr.name << "): ";
        RuntimeState view = *s;
        view.product = pr;
        const auto status = availability(view, op);
        std::cout << status << "\n";
        const auto rules = op.rules_for(pr.id);
        if (!rules) continue;
        const auto own = op.products.at(pr.id);
        print_rules(own, op, "  ");
        if (op.cube_math) {
            std::cout << "  " << std::left << std::setw(16) << op.cube_math->param;
            std::vector<std::string> modes;
            for (const auto &row : pr.cube_math) {
                std::vector<std::string> acts;
                const auto it = rules->dtypes.find(op.cube_math->inputs.front());
                for (const auto &cell : row.second)  // the product's action, less what the operator refuses
                    if (it == rules->dtypes.end() || std::count(it->second.begin(), it->second.end(), cell.first))
                        acts.push_back(std::string(acp::dtype_name(cell.first)) + " " +
                                       aclcpu::cube_action_name(aclcpu::cube_action(row.second, row.first, cell.first,
                                                                                    rules->cube_rejects)));
                modes.push_back(std::to_string(row.first) + ": " + join(acts, [](const std::string &x) { return x; }));
            }
            std::cout << join(modes, [](const std::string &x) { return x; }, " | ") << "\n";
        }
    }
    return 0;
}

int cmd_validate(const Options &o) {
    aclcpu::set_config_log_level(4);
    std::set<std::string> known;
    for (const auto &p : aclcpu::installed_profiles()) known.insert(p.id);
    int bad = 0;
    for (const auto &path : o.args) {
        const auto files = manifests_in(path);
        if (files.empty()) {
            std::cout << "FAIL " << path << ": no manifest.yaml found\n";
            ++bad;
            continue;
        }
        for (const auto &file : files) {
            const aclcpu::Registry reg({file}, {});
            std::vector<std::string> problems = reg.diagnostics();
            for (const auto &p : reg.plugins())
                for (const auto &op : p->manifest.ops)
                    for (const auto &kv : op.products)
                        if (!known.count(kv.first))
                            problems.push_back(file + ": operator " + op.name + " names unknown product '" + kv.first + "'");
            if (problems.empty() && reg.plugins().size() == 1) {
                const auto &p = reg.plugins().front();
                std::cout << "OK   " << file << ": plugin " << p->manifest.plugin << ", " << p->manifest.ops.size()
                          << " operator(s), library " << p->library_path << "\n";
            } else {
                ++bad;
                for (const auto &pr : problems) std::cout << "FAIL " << pr << "\n";
            }
        }
    }
    return bad ? 1 : 0;
}

int cmd_products(const Options &o) {
    const auto s = state_for(o);
    for (const auto &p : aclcpu::installed_profiles()) {
        std::cout << (p.id == s->product.id ? "* " : "  ") << std::left << std::setw(20) << p.id << std::setw(14) << p.soc << p.name << "\n";
        for (const auto &row : p.cube_math) {
            std::vector<std::string> acts;
            for (const auto &cell : row.second)
                acts.push_back(std::string(acp::dtype_name(cell.first)) + " " + aclcpu::cube_action_name(cell.second));
            std::cout << "      cubeMathType " << row.first << ": " << join(acts, [](const std::string &x) { return x; }) << "\n";
        }
    }
    std::cout << "(* = active: --product, else $ACLNN_CPU_PRODUCT, else atlas-a2)\n";
    return 0;
}

}  // namespace aclcli
