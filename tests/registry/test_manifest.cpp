// The manifest parser (registry/manifest.hpp): every error names the file AND the line
// ("<file>:<line>: <what>"), one table row per rule; good manifests (the in-tree plugin's and the test
// fixtures') parse into what they declare.
#include <gtest/gtest.h>

#include <filesystem>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "manifest.hpp"
#include "test_util.hpp"

namespace {

using aclcpu::ManifestError;
using aclcpu::parse_manifest;
using aclcpu::ParamType;

// A good manifest, one entry per line (line numbers are 1-based in the table below).
const std::vector<std::string> kGood = {
    /*  1 */ "# a good manifest",
    /*  2 */ "plugin: fixture",
    /*  3 */ "library: aclnn_fixture",
    /*  4 */ "abi: 1",
    /*  5 */ "operators:",
    /*  6 */ "  - name: Foo",
    /*  7 */ "    header: aclnn_foo.h",
    /*  8 */ "    params:",
    /*  9 */ "      - {name: self, type: tensor}",
    /* 10 */ "      - {name: sizes, type: int_array, optional: true}",
    /* 11 */ "      - {name: alpha, type: int64}",
    /* 12 */ "      - {name: mode, type: int8}",
    /* 13 */ "      - {name: out, type: tensor, output: true}",
    /* 14 */ "    formats: {self: [ND], out: [ND]}",
    /* 15 */ "    ranks: {self: [1, 2]}",
    /* 16 */ "    attrs:",
    /* 17 */ "      alpha: {range: [0, 8]}",
    /* 18 */ "    same_dtype: [self, out]",
    /* 19 */ "    cube_math: {param: mode, input: self}",
    /* 20 */ "    products:",
    /* 21 */ "      atlas-a2:",
    /* 22 */ "        dtypes: {self: [FLOAT, BF16], out: [FLOAT, BF16]}",
    /* 23 */ "      atlas-training:",
    /* 24 */ "        dtypes: {self: [FLOAT], out: [FLOAT]}",
};

std::string join(const std::vector<std::string> &lines) {
    std::string s;
    for (const auto &l : lines) s += l + "\n";
    return s;
}
// Line `n` (1-based) replaced by `text`.
std::string with(int n, const std::string &text) {
    auto l = kGood;
    l[static_cast<size_t>(n - 1)] = text;
    return join(l);
}
std::string without(int n) {
    auto l = kGood;
    l[static_cast<size_t>(n - 1)] = "# (removed)";
    return join(l);
}
std::string inserted(int n, const std::string &text) {  // `text` becomes line n
    auto l = kGood;
    l.insert(l.begin() + (n - 1), text);
    return join(l);
}
std::string appended(const std::string &text) { return join(kGood) + text; }
std::string firstLines(int n) { return join(std::vector<std::string>(kGood.begin(), kGood.begin() + n)); }
// Lines first..last (1-based, inclusive) replaced by the one line `text`.
std::string replacedRange(int first, int last, const std::string &text) {
    auto l = kGood;
    l.erase(l.begin() + (first - 1), l.begin() + last);
    l.insert(l.begin() + (first - 1), text);
    return join(l);
}

struct BadManifest {
    const char *what;
    std::string text;
    int line;            // the line the message must name; 0 = any line >= 1
    const char *needle;  // a word the message must contain
};
void PrintTo(const BadManifest &b, std::ostream *os) { *os << b.what; }

// True when `msg` contains "<path>:<n>:" with n >= 1.
bool namesFileAndLine(const std::string &msg, const std::string &path) {
    for (size_t at = msg.find(path + ":"); at != std::string::npos; at = msg.find(path + ":", at + 1)) {
        size_t i = at + path.size() + 1, digits = 0;
        long line = 0;
        while (i < msg.size() && std::isdigit(static_cast<unsigned char>(msg[i]))) line = line * 10 + (msg[i++] - '0'), ++digits;
        if (digits && line >= 1 && i < msg.size() && msg[i] == ':') return true;
    }
    return false;
}

class BadManifestTest : public ::testing::TestWithParam<BadManifest> {};

TEST_P(BadManifestTest, ErrorNamesFileAndLine) {
    const BadManifest &b = GetParam();
    const std::string path = coretest::writeTempFile(std::string("manifest-") + b.what, b.text);
    try {
        (void)parse_manifest(path);
        FAIL() << b.what << ": parsed without error:\n" << b.text;
    } catch (const ManifestError &e) {
        const std::string msg = e.what();
        if (b.line > 0) {
            EXPECT_NE(msg.find(path + ":" + std::to_string(b.line) + ":"), std::string::npos)
                << b.what << ": expected '" << path << ":" << b.line << ":' in: " << msg;
        } else {
            EXPECT_TRUE(namesFileAndLine(msg, path))
                << b.what << ": expected '<file>:<line>:' with a line >= 1 in: " << msg;
        }
        EXPECT_NE(msg.find(b.needle), std::string::npos) << b.what << ": expected '" << b.needle << "' in: " << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
    } catch (const std::exception &e) {
        FAIL() << b.what << ": threw something other than ManifestError: " << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadManifestTest,
    ::testing::Values(
        // found by the manifest fuzzer: an empty document has no YAML position (reported at line 1,
        // not 0), and a key spanning lines (a mangled quote) still gives a message of one line
        BadManifest{"only_comments", "# nothing else\n", 1, "must be a mapping"},
        BadManifest{"key_spanning_lines", inserted(5, "\"colour\\nof the\\nplugin\": red"), 5, "unknown key 'colour of the plugin'"},
        BadManifest{"missing_library", without(3), 0, "library"},
        BadManifest{"missing_plugin", without(2), 0, "plugin"},
        BadManifest{"missing_abi", without(4), 0, "abi"},
        BadManifest{"abi_not_an_integer", with(4, "abi: one"), 4, "abi"},
        BadManifest{"abi_beyond_32_bits", with(4, "abi: 4294967297"), 4, "abi must be a plugin ABI major version (1 to 1000), got 4294967297"},
        BadManifest{"abi_negative", with(4, "abi: -4294967295"), 4, "got -4294967295"},
        BadManifest{"duplicate_key", inserted(5, "abi: 2"), 5, "'abi' is given twice (first on line 4)"},
        BadManifest{"duplicate_nested_key", with(15, "    ranks: {self: [1, 2], self: [3]}"), 15, "'self' is given twice"},
        BadManifest{"unknown_top_level_key", inserted(5, "colour: red"), 5, "colour"},
        BadManifest{"unknown_operator_key", inserted(8, "    colour: red"), 8, "colour"},
        BadManifest{"unknown_param_key", with(11, "      - {name: alpha, type: int64, colour: red}"), 11, "colour"},
        BadManifest{"unknown_product_key", inserted(22, "        colour: {self: [ND]}"), 22, "colour"},
        BadManifest{"unknown_dtype", with(22, "        dtypes: {self: [FLOAT, FLAOT], out: [FLOAT]}"), 22, "FLAOT"},
        BadManifest{"unknown_format", with(14, "    formats: {self: [ND], out: [NDD]}"), 14, "NDD"},
        BadManifest{"unknown_param_type", with(11, "      - {name: alpha, type: int65}"), 11, "int65"},
        BadManifest{"param_without_type", with(11, "      - {name: alpha}"), 11, "alpha"},
        BadManifest{"duplicate_param", with(13, "      - {name: self, type: tensor, output: true}"), 13, "self"},
        BadManifest{"format_rule_names_a_non_parameter", with(14, "    formats: {self: [ND], output: [ND]}"), 14, "output"},
        BadManifest{"rank_rule_names_a_non_parameter", with(15, "    ranks: {selff: [1, 2]}"), 15, "selff"},
        BadManifest{"attr_rule_names_a_non_parameter", with(17, "      beta: {range: [0, 8]}"), 17, "beta"},
        BadManifest{"dtype_rule_names_a_non_parameter", with(24, "        dtypes: {self: [FLOAT], outt: [FLOAT]}"), 24, "outt"},
        BadManifest{"same_dtype_names_a_non_parameter", with(18, "    same_dtype: [self, other]"), 18, "other"},
        BadManifest{"early_check_on_a_non_array", inserted(14, "    early_checks: {alpha: {length: [1]}}"), 14, "alpha"},
        BadManifest{"early_check_bad_code", inserted(14, "    early_checks: {sizes: {length: [1], code: 42}}"), 14, "161001"},
        BadManifest{"early_check_code_beyond_32_bits", inserted(14, "    early_checks: {sizes: {length: [1], code: 4295128297}}"), 14, "161001"},
        BadManifest{"castable_names_a_non_tensor", inserted(14, "    castable: [{from: self, to: alpha}]"), 14, "alpha"},
        BadManifest{"castable_without_to", inserted(14, "    castable: [{from: self}]"), 14, "to"},
        BadManifest{"cube_math_names_a_non_parameter", with(19, "    cube_math: {param: mod, input: self}"), 19, "mod"},
        BadManifest{"null_order_names_a_non_parameter", inserted(14, "    null_order: [out, nothing]"), 14, "nothing"},
        BadManifest{"format_rule_on_a_non_tensor", with(14, "    formats: {self: [ND], alpha: [ND]}"), 14, "alpha"},
        BadManifest{"attr_rule_on_a_tensor", with(17, "      self: {range: [0, 8]}"), 17, "self"},
        BadManifest{"attr_range_reversed", with(17, "      alpha: {range: [8, 0]}"), 17, "range"},
        BadManifest{"length_rule_on_a_scalar", with(17, "      alpha: {length: [1]}"), 17, "length"},
        BadManifest{"cube_math_param_not_int8", with(19, "    cube_math: {param: alpha, input: self}"), 19, "int8"},
        BadManifest{"noop_if_empty_on_a_non_tensor", inserted(14, "    noop_if_empty: [self, alpha]"), 14, "alpha"},
        BadManifest{"cube_math_input_list_empty", with(19, "    cube_math: {param: mode, input: []}"), 19, "at least one"},
        BadManifest{"cube_math_input_list_names_a_non_tensor", with(19, "    cube_math: {param: mode, input: [self, alpha]}"), 19,
                    "alpha"},
        BadManifest{"cube_rejects_without_cube_math", with(19, "    cube_rejects: {1: [FLOAT]}"), 19, "cube_math"},
        BadManifest{"notes_not_a_list", inserted(14, "    notes: one line"), 14, "notes"},
        BadManifest{"notes_entry_not_a_string", inserted(14, "    notes: [{a: 1}]"), 14, "notes entry"},
        BadManifest{"cube_rejects_unknown_dtype", inserted(23, "        cube_rejects: {1: [FLAOT]}"), 23, "FLAOT"},
        BadManifest{"cube_rejects_key_not_a_mode", inserted(23, "        cube_rejects: {one: [FLOAT]}"), 23, "cubeMathType"},
        BadManifest{"dtypes_at_operator_level", inserted(20, "    dtypes: {self: [FLOAT], out: [FLOAT]}"), 20, "dtypes"},
        BadManifest{"optional_by_value_param", with(11, "      - {name: alpha, type: int64, optional: true}"), 11, "alpha"},
        BadManifest{"output_non_tensor", with(11, "      - {name: alpha, type: int64, output: true}"), 11, "alpha"},
        BadManifest{"required_if_on_a_value", with(11, "      - {name: alpha, type: int64, required_if: 'sizes[0]'}"), 11, "alpha"},
        BadManifest{"required_if_without_index_on_a_non_bool", with(13, "      - {name: out, type: tensor, output: true, required_if: sizes}"), 13,
                    "must name a bool parameter"},
        BadManifest{"required_if_bad_index", with(13, "      - {name: out, type: tensor, output: true, required_if: 'sizes[x]'}"), 13, "sizes[x]"},
        BadManifest{"required_if_names_a_non_parameter", with(13, "      - {name: out, type: tensor, output: true, required_if: 'mask[0]'}"), 13, "mask"},
        BadManifest{"required_if_names_a_non_bool_array", with(13, "      - {name: out, type: tensor, output: true, required_if: 'sizes[0]'}"), 13, "bool_array"},
        BadManifest{"noop_if_null_names_a_value", inserted(14, "    noop_if_null: [alpha]"), 14, "alpha"},
        BadManifest{"format_fixes_rank_not_a_bool", inserted(14, "    format_fixes_rank: sometimes"), 14, "format_fixes_rank"},
        BadManifest{"format_fixes_rank_lists_a_non_tensor", inserted(14, "    format_fixes_rank: [self, alpha]"), 14, "alpha"},
        BadManifest{"noop_if_all_false_names_a_tensor", inserted(14, "    noop_if_all_false: [self]"), 14, "bool_array"},
        BadManifest{"output_int_array", with(10, "      - {name: sizes, type: int_array, output: true}"), 10, "sizes"},
        BadManifest{"operator_without_header", without(7), 6, "header"},
        BadManifest{"header_with_a_path", with(7, "    header: ../../escaped.h"), 7, "header must be a file name"},
        BadManifest{"header_with_a_quote", with(7, "    header: 'a\"b.h'"), 7, "header must be a file name"},
        BadManifest{"header_not_dot_h", with(7, "    header: aclnn_foo.hpp"), 7, "ending in .h"},
        BadManifest{"header_listed_twice", with(7, "    headers: [aclnn_foo.h, aclnn_bar.h, aclnn_foo.h]"), 6,
                    "header aclnn_foo.h is listed twice by operator Foo"},
        BadManifest{"optional_not_a_bool", with(10, "      - {name: sizes, type: int_array, optional: maybe}"), 10, "optional must be true or false"},
        BadManifest{"param_name_with_a_space", with(11, "      - {name: 'al pha', type: int64}"), 11, "C identifier"},
        BadManifest{"param_name_injects_code", with(11, "      - {name: 'a);int y(', type: int64}"), 11, "C identifier"},
        BadManifest{"param_name_empty", with(11, "      - {name: '', type: int64}"), 11, "C identifier"},
        BadManifest{"param_name_clashes_with_the_entry_point", with(11, "      - {name: workspaceSize, type: int64}"), 11, "workspaceSize"},
        BadManifest{"param_name_keyword", with(11, "      - {name: int, type: int64}"), 11, "keyword"},
        BadManifest{"library_with_a_hyphen", with(3, "library: aclnn-fixture"), 3, "library must be letters, digits and '_'"},
        BadManifest{"required_if_index_beyond_int64", with(13, "      - {name: out, type: tensor, output: true, required_if: 'sizes[99999999999999999999]'}"), 13, "below 10^9"},
        BadManifest{"misspelled_products_key", inserted(20, "    products_typo:"), 20, "products_typo"},
        BadManifest{"operator_without_products", firstLines(19), 6, "products"},
        BadManifest{"operator_name_not_alphanumeric", with(6, "  - name: Foo-Bar"), 6, "Foo-Bar"},
        BadManifest{"operator_declared_twice",
                    appended("  - name: Foo\n"                                 // line 25
                             "    header: aclnn_foo2.h\n"
                             "    params:\n"
                             "      - {name: self, type: tensor}\n"
                             "    products:\n"
                             "      atlas-a2: {dtypes: {self: [FLOAT]}}\n"),
                    25, "Foo"},
        BadManifest{"yaml_syntax_error", with(4, "abi: 1: 2"), 4, ""},
        BadManifest{"yaml_unclosed_flow_map", with(11, "      - {name: alpha, type: int64"), 0, ""},
        BadManifest{"yaml_tab_indentation", with(12, "\t  - {name: mode, type: int8}"), 12, ""},
        BadManifest{"params_not_a_list", replacedRange(8, 13, "    params: {self: tensor, out: tensor}"), 8, "params"},
        BadManifest{"root_not_a_mapping", "- just\n- a list\n", 0, "mapping"}),
    [](const ::testing::TestParamInfo<BadManifest> &i) { return std::string(i.param.what); });

TEST(Manifest, MissingFileNamesTheFile) {
    const std::string path = (coretest::scratchDir() / "no-such-manifest.yaml").string();
    try {
        (void)parse_manifest(path);
        FAIL() << "parsed a missing file";
    } catch (const ManifestError &e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
}

TEST(Manifest, GoodManifestParses) {
    const std::string path = coretest::writeTempFile("manifest-good", join(kGood));
    const aclcpu::Manifest m = parse_manifest(path);
    EXPECT_EQ(m.file, path);
    EXPECT_EQ(m.plugin, "fixture");
    EXPECT_EQ(m.library, "aclnn_fixture");
    EXPECT_EQ(m.abi, 1u);
    EXPECT_EQ(m.library_path(), (std::filesystem::path(path).parent_path() / "libaclnn_fixture.so").string());
    ASSERT_EQ(m.ops.size(), 1u);
    const auto &op = m.ops[0];
    EXPECT_EQ(op.name, "Foo");
    EXPECT_EQ(op.line, 6);
    ASSERT_EQ(op.headers.size(), 1u);
    EXPECT_EQ(op.headers[0], "aclnn_foo.h");
    ASSERT_EQ(op.params.size(), 5u);
    EXPECT_EQ(op.params[0].name, "self");
    EXPECT_EQ(op.params[0].type, ParamType::Tensor);
    EXPECT_FALSE(op.params[0].output);
    EXPECT_EQ(op.params[1].type, ParamType::IntArray);
    EXPECT_TRUE(op.params[1].optional);
    EXPECT_EQ(op.params[2].type, ParamType::Int64);
    EXPECT_EQ(op.params[3].type, ParamType::Int8);
    EXPECT_TRUE(op.params[4].output);
    EXPECT_EQ(op.params[4].line, 13);
    EXPECT_EQ(op.index_of("alpha"), 2);
    EXPECT_EQ(op.index_of("nothing"), -1);
    ASSERT_TRUE(op.cube_math);
    EXPECT_EQ(op.cube_math->param, "mode");
    EXPECT_EQ(op.cube_math->inputs, (std::vector<std::string>{"self"}));
    ASSERT_EQ(op.same_dtype.size(), 1u);
    EXPECT_EQ(op.same_dtype[0], (std::vector<std::string>{"self", "out"}));
    EXPECT_TRUE(op.format_fixes_rank) << "a layout name fixes the rank unless the manifest says not";

    const auto a2 = op.rules_for("atlas-a2");
    ASSERT_TRUE(a2);
    EXPECT_EQ(a2->dtypes.at("self"), (std::vector<int32_t>{0, 27}));
    EXPECT_EQ(a2->formats.at("self"), (std::vector<int32_t>{2}));  // common rules apply per product
    EXPECT_EQ(a2->ranks.at("self"), (std::vector<int64_t>{1, 2}));
    ASSERT_TRUE(a2->attrs.at("alpha").range);
    EXPECT_EQ(a2->attrs.at("alpha").range->second, 8);
    const auto tr = op.rules_for("atlas-training");
    ASSERT_TRUE(tr);
    EXPECT_EQ(tr->dtypes.at("self"), (std::vector<int32_t>{0}));
    EXPECT_FALSE(op.rules_for("atlas-200i-500-a2")) << "a product not listed is unsupported";
}

// cube_rejects: per product (or for every product), merged into the rules in force.
TEST(Manifest, CubeRejectsNarrowTheProductsTable) {
    const aclcpu::Manifest m = parse_manifest(
        coretest::writeTempFile("manifest-cube-rejects", inserted(23, "        cube_rejects: {1: [FLOAT], 3: [FLOAT, BF16]}")));
    ASSERT_EQ(m.ops.size(), 1u);
    const auto a2 = m.ops[0].rules_for("atlas-a2");
    ASSERT_TRUE(a2);
    ASSERT_EQ(a2->cube_rejects.size(), 2u);
    EXPECT_EQ(a2->cube_rejects.at(1), (std::vector<int32_t>{0}));       // FLOAT
    EXPECT_EQ(a2->cube_rejects.at(3), (std::vector<int32_t>{0, 27}));   // FLOAT, BF16
    EXPECT_TRUE(m.ops[0].rules_for("atlas-training")->cube_rejects.empty()) << "another product's rules are its own";
}

// notes: lines for `aclnn-cpu describe`, in order.
TEST(Manifest, NotesAreKeptInOrder) {
    const aclcpu::Manifest m = parse_manifest(coretest::writeTempFile(
        "manifest-notes", inserted(14, "    notes: [\"first: the cube kernel\", second]")));
    ASSERT_EQ(m.ops.size(), 1u);
    EXPECT_EQ(m.ops[0].notes, (std::vector<std::string>{"first: the cube kernel", "second"}));
    EXPECT_TRUE(parse_manifest(coretest::writeTempFile("manifest-no-notes", join(kGood))).ops[0].notes.empty());
}

// cube_math.input may list tensors whose dtypes are promoted (the convolution's input and weight).
TEST(Manifest, CubeMathInputMayListTensors) {
    const aclcpu::Manifest m =
        parse_manifest(coretest::writeTempFile("manifest-cube-inputs", with(19, "    cube_math: {param: mode, input: [self, out]}")));
    ASSERT_EQ(m.ops.size(), 1u);
    ASSERT_TRUE(m.ops[0].cube_math);
    EXPECT_EQ(m.ops[0].cube_math->inputs, (std::vector<std::string>{"self", "out"}));
}

// required_if may name a bool parameter (Convolution's outputPadding when transposed).
TEST(Manifest, RequiredIfABool) {
    const aclcpu::Manifest m = parse_manifest(coretest::writeTempFile(
        "manifest-required-if-bool", appended("  - name: Bar\n"
                                              "    header: aclnn_bar.h\n"
                                              "    params:\n"
                                              "      - {name: flag, type: bool}\n"
                                              "      - {name: sizes, type: int_array, required_if: flag}\n"
                                              "    products:\n"
                                              "      atlas-a2: {dtypes: {}}\n")));
    ASSERT_EQ(m.ops.size(), 2u);
    const auto &p = m.ops[1].params[1];
    EXPECT_EQ(p.required_if_mask, "flag");
    EXPECT_EQ(p.required_if_index, -1);
    EXPECT_EQ(p.required_if(), "flag");
}

TEST(Manifest, NoopIfEmptyListsTensors) {
    const aclcpu::Manifest m = parse_manifest(coretest::writeTempFile("manifest-noop-empty", inserted(14, "    noop_if_empty: [self, out]")));
    ASSERT_EQ(m.ops.size(), 1u);
    EXPECT_EQ(m.ops[0].noop_if_empty, (std::vector<std::string>{"self", "out"}));
}

TEST(Manifest, FormatFixesRankCanBeTurnedOff) {
    const aclcpu::Manifest m = parse_manifest(coretest::writeTempFile("manifest-format-tag", inserted(14, "    format_fixes_rank: false")));
    ASSERT_EQ(m.ops.size(), 1u);
    EXPECT_FALSE(m.ops[0].format_fixes_rank);
}

// A list names the tensors whose layout fixes their rank; the others' layouts are tags.
TEST(Manifest, FormatFixesRankMayListTensors) {
    const aclcpu::Manifest m = parse_manifest(coretest::writeTempFile("manifest-format-list", inserted(14, "    format_fixes_rank: [self]")));
    ASSERT_EQ(m.ops.size(), 1u);
    EXPECT_TRUE(m.ops[0].format_fixes_rank_of("self"));
    EXPECT_FALSE(m.ops[0].format_fixes_rank_of("out"));
    const aclcpu::Manifest all = parse_manifest(coretest::writeTempFile("manifest-format-all", join(kGood)));
    EXPECT_TRUE(all.ops[0].format_fixes_rank_of("out")) << "every tensor by default";
    const aclcpu::Manifest none = parse_manifest(coretest::writeTempFile("manifest-format-none", inserted(14, "    format_fixes_rank: false")));
    EXPECT_FALSE(none.ops[0].format_fixes_rank_of("self"));
}

// Operators may share a header (CANN's aclnn_max_pool2d_with_indices.h declares two entry points).
TEST(Manifest, OperatorsMayShareAHeader) {
    const aclcpu::Manifest m = parse_manifest(coretest::writeTempFile("manifest-shared-header",
                                                                      appended("  - name: Bar\n"
                                                                               "    headers: [aclnn_bar.h, aclnn_foo.h]\n"
                                                                               "    params:\n"
                                                                               "      - {name: self, type: tensor}\n"
                                                                               "    products:\n"
                                                                               "      atlas-a2: {dtypes: {self: [FLOAT]}}\n")));
    ASSERT_EQ(m.ops.size(), 2u);
    EXPECT_EQ(m.ops[0].headers, (std::vector<std::string>{"aclnn_foo.h"}));
    EXPECT_EQ(m.ops[1].headers, (std::vector<std::string>{"aclnn_bar.h", "aclnn_foo.h"}));
}

TEST(Manifest, InTreeAvgPool2dManifestParses) {
    const aclcpu::Manifest m = parse_manifest(ACLNN_CPU_TEST_AVGPOOL_MANIFEST);
    EXPECT_EQ(m.plugin, "avgpool2d");
    EXPECT_EQ(m.abi, 1u);
    bool found = false;
    for (const auto &op : m.ops)
        if (op.name == "AvgPool2dBackward") {
            found = true;
            EXPECT_EQ(op.params.size(), 10u);
            EXPECT_TRUE(op.rules_for("atlas-a2"));
            EXPECT_FALSE(op.rules_for("atlas-200i-500-a2")) << "products.md: not supported on 200I/500 A2";
        }
    EXPECT_TRUE(found);
}

TEST(Manifest, EveryFixtureManifestParses) {
    namespace fs = std::filesystem;
    int n = 0;
    for (const auto &e : fs::directory_iterator(ACLNN_CPU_TEST_FIXTURE_SOURCE_DIR)) {
        const fs::path m = e.path() / "manifest.yaml";
        if (!fs::exists(m)) continue;
        EXPECT_NO_THROW((void)parse_manifest(m.string())) << m;
        ++n;
    }
    EXPECT_GE(n, 7);
}

}  // namespace
