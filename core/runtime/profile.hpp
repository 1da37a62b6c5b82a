// Product profiles (configs/products/*.yaml): which Ascend product the CPU behaves as.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl_base.h"

namespace aclcpu {

// What the product's cube unit does with an input dtype under one cubeMathType value.
enum class CubeAction { Keep, Fp16, Hf32, Reject };

struct ACL_FUNC_VISIBILITY Profile {
    std::string id;    // "atlas-a2"
    std::string name;  // "Atlas A2 training series / ..."
    std::string soc;   // "Ascend910B"
    std::string file;  // where it was read from
    // cube_math[cubeMathType][dtype] -> action; a value missing from the table is invalid.
    std::map<int, std::map<int32_t, CubeAction>> cube_math;
    std::vector<std::string> enabled_ops;   // empty = all
    std::vector<std::string> disabled_ops;
    std::map<std::string, std::string> implementations;  // operator -> preferred plugin name

    bool op_enabled(const std::string &op) const;
};

// Reads one profile file; throws std::runtime_error naming the file and line on bad content.
ACL_FUNC_VISIBILITY Profile load_profile(const std::string &path);
// Loads every *.yaml under `dir`; throws on a bad file.
ACL_FUNC_VISIBILITY std::vector<Profile> load_profiles(const std::string &dir);
// Finds a profile by id or SoC name (case-insensitive for SoC).
ACL_FUNC_VISIBILITY const Profile *find_profile(const std::vector<Profile> &all, const std::string &key);

ACL_FUNC_VISIBILITY const char *cube_action_name(CubeAction a);
// What an operator does with an input of `dtype` under cubeMathType `mode`: the product's action
// (`row`, its cube_math[mode]), or Reject where the operator's manifest refuses the pair
// (`rejects`: its cube_rejects, mode -> dtypes).
ACL_FUNC_VISIBILITY CubeAction cube_action(const std::map<int32_t, CubeAction> &row, int64_t mode, int32_t dtype,
                                           const std::map<int64_t, std::vector<int32_t>> &rejects);

}  // namespace aclcpu
