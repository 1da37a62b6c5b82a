// The plugin SDK's check helpers (aclnn_cpu/plugin.hpp): acp::require formats its message only when
// the check fails (phase 1 runs them on every call), and acp::shape_str is a value that outlives
// whatever it was made from.
#include <gtest/gtest.h>

#include <cstddef>
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

// A host API whose log() records its lines and whose log_enabled() says yes from `threshold` up.
struct FakeHost {
    static inline std::vector<std::string> lines;
    static inline int32_t threshold = ACP_LOG_WARNING;
    static void log(void *, int32_t, const char *m) { lines.emplace_back(m); }
    static int32_t enabled(void *, int32_t level) { return level >= threshold; }
    acp_host_api api{};
    acp_plan_ctx ctx{};
    explicit FakeHost(uint32_t struct_size) {
        lines.clear();
        api.struct_size = struct_size;
        api.log = log;
        api.log_enabled = enabled;  // beyond struct_size on an "older core": never called there
        ctx.struct_size = sizeof ctx;
        ctx.host = &api;
    }
};

TEST(PluginMessages, LogFormatsOnlyWhatTheCoreWrites) {
    FakeHost h(sizeof(acp_host_api));
    int streamed = 0;
    acp::log(&h.ctx, ACP_LOG_DEBUG, "node ", Counted{&streamed});
    acp::log(&h.ctx, ACP_LOG_INFO, "node ", Counted{&streamed});
    EXPECT_EQ(streamed, 0);
    EXPECT_TRUE(FakeHost::lines.empty());
    EXPECT_FALSE(acp::log_enabled(&h.ctx, ACP_LOG_DEBUG));
    EXPECT_TRUE(acp::log_enabled(&h.ctx, ACP_LOG_ERROR));
    acp::log(&h.ctx, ACP_LOG_WARNING, "node ", Counted{&streamed}, " after ", 3);
    EXPECT_EQ(streamed, 1);
    EXPECT_EQ(FakeHost::lines, std::vector<std::string>{"node part after 3"});
}

TEST(PluginMessages, LogOnAnOlderCoreLeavesTheLevelToIt) {
    FakeHost h(static_cast<uint32_t>(offsetof(acp_host_api, log_enabled)));  // an ABI 1.1 host API
    EXPECT_TRUE(acp::log_enabled(&h.ctx, ACP_LOG_DEBUG));
    acp::log(&h.ctx, ACP_LOG_DEBUG, "shape ", acp::shape_str(std::vector<int64_t>{2, 3}));
    EXPECT_EQ(FakeHost::lines, std::vector<std::string>{"shape [2,3]"});
}

}  // namespace
