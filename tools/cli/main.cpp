// aclnn-cpu: inspect the operator plugins the library would load, their manifests and products.
#include <cstdint>
#include <cstring>
#include <iostream>
#include <map>
#include <string>

#include "commands.hpp"

namespace {

struct Command {
    int (*run)(const aclcli::Options &);
    const char *usage;
    const char *help;
    size_t min_args = 0, max_args = 0;  // operands after the command (SIZE_MAX: any number)
};

const std::map<std::string, Command> &commands() {
    static const std::map<std::string, Command> c = {
        {"list", {aclcli::cmd_list, "aclnn-cpu list [--product <id>]",
                  "Lists the plugins found on the plugin path (installed plugins, $ACLNN_CPU_PLUGIN_PATH), their\n"
                  "library files and operators, and whether each operator is enabled on the active product.\n"
                  "Plugins that failed to load are listed with the reason."}},
        {"describe", {aclcli::cmd_describe, "aclnn-cpu describe <Operator> [--product <id>]",
                      "Shows an operator's C signature, its header, the plugin that provides it, and the\n"
                      "constraints its manifest declares per product (dtypes, formats, ranks, attributes,\n"
                      "cubeMathType). With --product, only that product.",
                      1, 1}},
        {"validate", {aclcli::cmd_validate, "aclnn-cpu validate <manifest.yaml | plugin dir> ...",
                      "Checks manifests against the schema, loads each plugin library and checks that it agrees\n"
                      "with its manifest (ABI, operators). Exit status 0 when everything is valid, 1 otherwise.",
                      1, SIZE_MAX}},
        {"products", {aclcli::cmd_products, "aclnn-cpu products",
                      "Lists the installed product profiles: id, SoC name, product name, cubeMathType rules."}},
    };
    return c;
}

int usage(std::ostream &os, int code) {
    os << "usage: aclnn-cpu [--product <id>] <command> [args]\n\n"
          "Inspects aclnn-cpu's operator plugins and product profiles.\n\ncommands:\n";
    for (const auto &kv : commands()) os << "  " << kv.second.usage << "\n";
    os << "\nRun 'aclnn-cpu <command> --help' for details. --product takes a profile id or SoC name\n"
          "(default: $ACLNN_CPU_PRODUCT, else atlas-a2).\n";
    return code;
}

}  // namespace

int main(int argc, char **argv) {
    aclcli::Options o;
    std::string name;
    bool help = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--help" || a == "-h") {
            help = true;
        } else if (a == "--product" || a.rfind("--product=", 0) == 0) {
            if (a == "--product") {
                if (i + 1 >= argc) {
                    std::cerr << "aclnn-cpu: --product needs a value\n";
                    return 2;
                }
                o.product = argv[++i];
            } else {
                o.product = a.substr(std::strlen("--product="));
            }
            if (o.product.empty()) {  // (an empty value would mean "the default" silently)
                std::cerr << "aclnn-cpu: --product needs a value, got an empty one\n";
                return 2;
            }
        } else if (name.empty() && a[0] != '-') {
            name = a;
        } else if (a[0] == '-') {
            std::cerr << "aclnn-cpu: unknown option " << a << "\n";
            return 2;
        } else {
            o.args.push_back(a);
        }
    }
    if (name.empty()) return usage(help ? std::cout : std::cerr, help ? 0 : 2);
    const auto it = commands().find(name);
    if (it == commands().end()) {
        std::cerr << "aclnn-cpu: unknown command '" << name << "'\n";
        return usage(std::cerr, 2);
    }
    if (help) {
        std::cout << "usage: " << it->second.usage << "\n\n" << it->second.help << "\n";
        return 0;
    }
    const Command &c = it->second;
    if (o.args.size() < c.min_args || o.args.size() > c.max_args) {  // a usage error, like an unknown option
        std::cerr << "aclnn-cpu " << name << ": expected " << (c.max_args == 0 ? "no operands" : c.min_args == c.max_args ? "one operand" : "one or more operands")
                  << ", got " << o.args.size() << "\nusage: " << c.usage << "\n";
        return 2;
    }
    try {
        return it->second.run(o);
    } catch (const std::exception &e) {
        std::cerr << "aclnn-cpu " << name << ": " << e.what() << "\n";
        return 1;
    }
}
