// The aclnn-cpu inspector's commands (gst-inspect for operator plugins).
#pragma once

#include <string>
#include <vector>

namespace aclcli {

struct Options {
    std::string product;  // --product <id>; empty = the runtime's choice (env, then atlas-a2)
    std::vector<std::string> args;
};

int cmd_list(const Options &o);
int cmd_describe(const Options &o);
int cmd_validate(const Options &o);
int cmd_products(const Options &o);

}  // namespace aclcli
