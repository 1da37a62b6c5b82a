// The plugin SDK's check helpers (aclnn_cpu/plugin.hpp): acp::require formats its message only when
// the check fails (phase 1 runs them on every call), and acp::shape_str is a value that outlives
// whatever it was made from.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "aclnn_cpu/plugin.hpp"

namespace {

// Streams as "part" and counts how often it was streamed.
struct Counted {
    int *streamed;
};
std::ostream &operator<<(std::ostream &os, const Counted &c) {
    ++*c.streamed;
    return os << "part";
}

TEST(PluginMessages, PassingRequireFormatsNothing) {
    int streamed = 0;
    for (int i = 0; i < 100; ++i) acp::require(true, acp::kInvalid, "x ", Counted{&streamed}, " y");
    EXPECT_EQ(streamed, 0);
}

TEST(PluginMessages, FailingRequireThrowsTheWholeMessageWithItsCode) {
    int streamed = 0;
    const std::vector<int64_t> dims{2, 3, 4};
    try {
        acp::require(false, acp::kNullptr, "x ", Counted{&streamed}, " got ", 7, " ", acp::shape_str(dims));
        FAIL() << "require(false, ...) returned";
    } catch (const acp::Rejection &r) {
        EXPECT_EQ(r.code, acp::kNullptr);
        EXPECT_EQ(r.message, "x part got 7 [2,3,4]");
    }
    EXPECT_EQ(streamed, 1);
}

TEST(PluginMessages, ShapeTextOwnsItsValues) {
    // Made from temporaries that are gone when it is read, inline (up to 8 values) and on the heap.
    const auto small = acp::shape_str(std::vector<int64_t>{1, -2, 3});
    const auto large = acp::shape_str(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
    const auto empty = acp::shape_str(std::vector<int64_t>{});
    std::vector<int64_t> grow{5, 6};
    const auto before = acp::shape_str(grow);
    grow.assign(100, 0);  // reallocates what `before` was made from
    EXPECT_EQ(small.str(), "[1,-2,3]");
    EXPECT_EQ(large.str(), "[1,2,3,4,5,6,7,8,9,10]");
    EXPECT_EQ(empty.str(), "[]");
    EXPECT_EQ(before.str(), "[5,6]");
    const std::string as_string = large;  // still converts where a std::string is wanted
    EXPECT_EQ(as_string, "[1,2,3,4,5,6,7,8,9,10]");
    EXPECT_EQ(acp::cat("t ", small), "t [1,-2,3]");
}

TEST(PluginMessages, ShapeOfATensorDescriptor) {
    int64_t dims[4] = {8, 64, 56, 56}, strides[4] = {200704, 3136, 56, 1};
    acp_tensor_desc t{};
    t.rank = 4;
    t.dims = dims;
    t.strides = strides;
    const auto text = acp::shape_str(t);
    dims[0] = 1;  // the text was taken when it was made
    EXPECT_EQ(text.str(), "[8,64,56,56]");
}

}  // namespace
