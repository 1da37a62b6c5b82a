// White-box test of a task slot's memory objects and of the array form of execute() arguments
// (dnnl_common.hpp: SlotMemories, ExecArgs): a role keeps its object and follows the new address,
// takes a new object when its descriptor changes, and a primitive run through ExecArgs computes
// what the C++ API's argument map gives.
#include <gtest/gtest.h>

#include <numeric>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <vector>

#include "dnnl_common.hpp"

namespace {

using conv::onednn::cpu;
using conv::onednn::ExecArgs;
using conv::onednn::SlotMemories;
using Md = dnnl::memory::desc;
using Tag = dnnl::memory::format_tag;
using DT = dnnl::memory::data_type;

TEST(SlotMemories, ARoleKeepsItsObjectAndFollowsTheAddress) {
    SlotMemories m;
    const Md md({1, 4, 3, 3}, DT::f32, Tag::nchw);
    std::vector<float> a(36), b(36);
    const dnnl_memory_t first = m.at(0, md, a.data()).get();
    EXPECT_EQ(m.at(0, md, a.data()).get_data_handle(), a.data());
    const dnnl::memory &again = m.at(0, md, b.data());
    EXPECT_EQ(again.get(), first) << "the same descriptor made a new object";
    EXPECT_EQ(again.get_data_handle(), b.data());
    EXPECT_NE(m.at(1, md, a.data()).get(), first) << "two roles share an object";
}

TEST(SlotMemories, ANewDescriptorMakesANewObject) {
    SlotMemories m;
    std::vector<float> a(64);
    const Md four({1, 4, 4, 4}, DT::f32, Tag::nchw), two({1, 4, 2, 2}, DT::f32, Tag::nchw);
    (void)m.at(2, four, a.data());
    const dnnl::memory &now = m.at(2, two, a.data() + 8);
    EXPECT_EQ(now.get_desc(), two);
    EXPECT_EQ(now.get_data_handle(), a.data() + 8);
    EXPECT_THROW((void)m.at(SlotMemories::kRoles, two, a.data()), std::out_of_range);
}

TEST(ExecArgs, RunsAReorderAsTheArgumentMapDoes) {
    const Md from({2, 20, 3, 5}, DT::f32, Tag::nchw), to({2, 20, 3, 5}, DT::f32, Tag::nChw16c);
    std::vector<float> src(from.get_size() / sizeof(float)), want(to.get_size() / sizeof(float), -1.0f), got(want);
    std::iota(src.begin(), src.end(), 1.0f);
    const dnnl::reorder r(dnnl::reorder::primitive_desc(cpu(), from, cpu(), to));
    dnnl::stream st(cpu());
    dnnl::memory s_mem(from, cpu(), src.data()), w_mem(to, cpu(), want.data()), g_mem(to, cpu(), got.data());
    r.execute(st, {{DNNL_ARG_FROM, s_mem}, {DNNL_ARG_TO, w_mem}});
    ExecArgs args;
    args.add(DNNL_ARG_FROM, s_mem).add(DNNL_ARG_TO, g_mem).execute(r, st);
    st.wait();
    EXPECT_EQ(got, want);
    EXPECT_NE(got[1], -1.0f);
}

TEST(ExecArgs, SixArgumentsAtMost) {
    const Md md({4}, DT::f32, Tag::x);
    std::vector<float> v(4);
    dnnl::memory m(md, cpu(), v.data());
    ExecArgs args;
    for (int i = 0; i < 6; ++i) args.add(DNNL_ARG_SRC, m);
    EXPECT_THROW(args.add(DNNL_ARG_SRC, m), std::out_of_range);
}

}  // namespace
