// The conformance corpus (testing.md "Conv corners"), small enough for a double-precision reference.
#ifndef CONVOLUTION_TESTS_CONV_CASES_HPP_
#define CONVOLUTION_TESTS_CONV_CASES_HPP_

#include <optional>
#include <string>
#include <vector>

#include "conv_reference.hpp"

namespace ct {

struct Named {
    std::string name;
    cref::Conv c;
    std::optional<std::vector<int64_t>> padding;  // a 4-element 2-D padding, when used
};

inline cref::Conv conv2d(int64_t N, int64_t Cin, int64_t Cout, int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t sh = 1,
                         int64_t sw = 1, int64_t ph = 0, int64_t pw = 0, int64_t G = 1) {
    cref::Conv c;
    c.sd = 2;
    c.N = N, c.Cin = Cin, c.Cout = Cout, c.G = G;
    c.in = {H, W, 1};
    c.k = {kh, kw, 1};
    c.s = {sh, sw, 1};
    c.pl = c.pr = {ph, pw, 0};
    return c;
}

inline std::vector<Named> corpus() {
    std::vector<Named> v;
    {  // 1-D ic3iw224oc64kw7sw2pw3
        cref::Conv c;
        c.sd = 1, c.N = 2, c.Cin = 3, c.Cout = 64, c.in = {224, 1, 1}, c.k = {7, 1, 1}, c.s = {2, 1, 1}, c.pl = c.pr = {3, 0, 0};
        v.push_back({"conv1d_ic3iw224oc64kw7sw2pw3", c, {}});
    }
    v.push_back({"basic_3x3", conv2d(2, 8, 12, 10, 9, 3, 3, 1, 1, 1, 1), {}});
    {  // 3-D ic16oc16 id10 ih13 iw50 k3 p1 (iw reduced to keep the reference quick)
        cref::Conv c;
        c.sd = 3, c.N = 1, c.Cin = 16, c.Cout = 16, c.in = {10, 13, 20}, c.k = {3, 3, 3}, c.pl = c.pr = {1, 1, 1};
        v.push_back({"conv3d_ic16oc16id10ih13iw20k3p1", c, {}});
    }
    {  // dilated ic16ih8oc6kh3sh2ph1dh2
        cref::Conv c = conv2d(2, 16, 6, 8, 8, 3, 3, 2, 2, 1, 1);
        c.d = {2, 2, 1};
        v.push_back({"dilated_ic16ih8oc6kh3sh2ph1dh2", c, {}});
    }
    v.push_back({"tails_ic17oc17", conv2d(2, 17, 17, 9, 11, 3, 3, 1, 1, 1, 1), {}});
    // small plane: several images per oneDNN data call, two chunk sizes (3 + 2)
    v.push_back({"small_plane_chunks_n5", conv2d(5, 16, 16, 8, 8, 3, 3, 1, 1, 1, 1), {}});
    // 8 images: the weight pass in four chunks of two (dnnl_weight_pass.cpp)
    v.push_back({"weight_chunks_n8", conv2d(8, 16, 16, 12, 12, 3, 3, 1, 1, 1, 1), {}});
    // gradients by channel blocks over the whole minibatch (blocked and plain layouts)
    v.push_back({"channel_blocks_oc64_ic20", conv2d(3, 20, 64, 7, 7, 3, 3, 1, 1, 1, 1), {}});
    v.push_back({"channel_blocks_oc64_ic32", conv2d(3, 32, 64, 7, 7, 3, 3, 1, 1, 1, 1), {}});
    v.push_back({"channel_blocks_pointwise", conv2d(2, 64, 32, 3, 3, 1, 1), {}});
    // 16 blocks of 32 input channels (dInput), 8 of 32 output channels (dWeight, forward)
    v.push_back({"channel_blocks_16_and_8", conv2d(2, 512, 256, 4, 4, 3, 3, 1, 1, 1, 1), {}});
    // FLOAT: oneDNN's GEMM on NCHW (planes of 256 positions or more), and blocked below that
    v.push_back({"pointwise_plain_layout", conv2d(3, 8, 12, 17, 16, 1, 1), {}});
    v.push_back({"pointwise_small_plane", conv2d(3, 8, 12, 9, 10, 1, 1), {}});
    // few input channels: gradInput on oneDNN's GEMM path (plain_data_layout), ResNet-50's first layer in miniature
    v.push_back({"few_cin_7x7_s2", conv2d(2, 3, 8, 21, 20, 7, 7, 2, 2, 3, 3), {}});
    v.push_back({"ih1_kh3ph2", conv2d(2, 4, 5, 1, 7, 3, 3, 1, 1, 2, 1), {}});
    v.push_back({"ih1_kh5ph4", conv2d(1, 4, 5, 1, 7, 5, 3, 1, 1, 4, 1), {}});
    v.push_back({"groups2_stride3x2", conv2d(2, 8, 6, 11, 10, 3, 3, 3, 2, 1, 1, 2), {}});
    v.push_back({"depthwise_s2", conv2d(2, 8, 8, 12, 12, 3, 3, 2, 2, 1, 1, 8), {}});
    // column stride 2, even left padding (0 and 2), odd widths: the phase split from the source rows
    v.push_back({"depthwise_sw2_pw0", conv2d(2, 6, 6, 11, 13, 3, 4, 2, 2, 2, 0, 6), {}});
    v.push_back({"depthwise_sw2_pw2", conv2d(3, 5, 5, 7, 13, 3, 5, 1, 2, 1, 2, 5), {}});
    // own stride-1 kernel over whole flattened planes (BF16: each plane widened in the workspace)
    v.push_back({"depthwise_3x3_w20", conv2d(2, 6, 6, 9, 20, 3, 3, 1, 1, 1, 1, 6), {}});
    v.push_back({"depthwise_multiplier2", conv2d(2, 8, 16, 9, 9, 3, 3, 1, 1, 1, 1, 8), {}});
    {  // depthwise with dilation, asymmetric padding and unequal strides (own kernels)
        cref::Conv c = conv2d(2, 6, 6, 10, 11, 3, 5, 1, 2, 0, 0, 6);
        c.d = {2, 1, 1};
        c.pl = {2, 1, 0};
        c.pr = {0, 3, 0};
        v.push_back({"depthwise_dilated_pad4", c, std::vector<int64_t>{2, 0, 1, 3}});
    }
    {
        cref::Conv c;
        c.sd = 1, c.N = 3, c.Cin = 5, c.Cout = 5, c.G = 5, c.in = {37, 1, 1}, c.k = {4, 1, 1}, c.s = {3, 1, 1}, c.pl = c.pr = {2, 0, 0};
        v.push_back({"depthwise_1d", c, {}});
    }
    // depthwise kernels: channel tails (19 = 16 + 3, 35), a 1x1 plane, 7x7 (direct kernels), stride 2
    // pad 2 (channel-blocked); rows wider than a vector, odd, stride 1 and 2 (direct kernels)
    v.push_back({"depthwise_7x7_c35", conv2d(2, 35, 35, 7, 7, 3, 3, 1, 1, 1, 1, 35), {}});
    v.push_back({"depthwise_1x1_plane_c19", conv2d(3, 19, 19, 1, 1, 3, 3, 1, 1, 1, 1, 19), {}});
    v.push_back({"depthwise_9x37_c17", conv2d(2, 17, 17, 9, 37, 3, 3, 1, 1, 1, 1, 17), {}});
    v.push_back({"depthwise_10x35_s2_c17", conv2d(2, 17, 17, 10, 35, 3, 3, 2, 2, 1, 1, 17), {}});
    v.push_back({"depthwise_13x9_s2_p2_c19", conv2d(2, 19, 19, 13, 9, 3, 3, 2, 2, 2, 2, 19), {}});
    {  // stride 1, same size, dilated 5x3 taps
        cref::Conv c = conv2d(2, 5, 5, 9, 21, 5, 3, 1, 1, 4, 2, 5);
        c.d = {2, 2, 1};
        v.push_back({"depthwise_same_dilated", c, {}});
    }
    v.push_back({"depthwise_ih1_kh5ph4", conv2d(2, 4, 4, 1, 9, 5, 3, 1, 1, 4, 1, 4), {}});
    v.push_back({"pointwise_s2_unused_rows", conv2d(2, 6, 10, 9, 8, 1, 1, 2, 2, 0, 0), {}});
    // strided pointwise as unit stride over the sampled positions (strided_pointwise.hpp): rows of
    // 35 samples (two vectors and a tail) at column stride 2; column stride 1 under row stride 3
    // (unused last rows); 1-D stride 3; 3-D strides (2, 1, 2) with an unused last plane
    v.push_back({"pointwise_s2_wide_odd", conv2d(2, 20, 24, 7, 70, 1, 1, 2, 2, 0, 0), {}});
    v.push_back({"pointwise_sh3_sw1", conv2d(2, 6, 5, 8, 9, 1, 1, 3, 1, 0, 0), {}});
    {
        cref::Conv c;
        c.sd = 1, c.N = 2, c.Cin = 7, c.Cout = 4, c.in = {40, 1, 1}, c.k = {1, 1, 1}, c.s = {3, 1, 1};
        v.push_back({"pointwise_1d_s3", c, {}});
    }
    {
        cref::Conv c;
        c.sd = 3, c.N = 2, c.Cin = 5, c.Cout = 6, c.in = {6, 4, 9}, c.k = {1, 1, 1}, c.s = {2, 1, 2};
        v.push_back({"pointwise_3d_s2x1x2", c, {}});
    }
    {
        cref::Conv c = conv2d(2, 5, 7, 9, 10, 3, 3, 2, 2, 0, 0);
        c.pl = {1, 0, 0};
        c.pr = {2, 3, 0};
        v.push_back({"padding4_asym", c, std::vector<int64_t>{1, 2, 0, 3}});
    }
    {  // transposed (a GoogleNet/AlexNet-like layer inverted): input 8 ch -> gradOutput 6 ch, x2 upsampling
        cref::Conv c = conv2d(2, 8, 6, 5, 6, 3, 3, 2, 2, 1, 1);
        c.transposed = true;
        c.op = {1, 1, 0};
        v.push_back({"transposed_k3s2p1op1", c, {}});
    }
    {
        cref::Conv c = conv2d(2, 6, 4, 5, 5, 4, 3, 2, 3, 1, 0, 2);
        c.transposed = true;
        c.op = {0, 2, 0};
        v.push_back({"transposed_groups2", c, {}});
    }
    {  // channel blocks of the weight pass on the swapped operands (32 input channels)
        cref::Conv c = conv2d(2, 32, 12, 5, 6, 3, 3, 2, 2, 1, 1);
        c.transposed = true;
        c.op = {1, 1, 0};
        v.push_back({"transposed_channel_blocks", c, {}});
    }
    {  // outputPadding >= stride, allowed because < dilation
        cref::Conv c = conv2d(1, 3, 5, 6, 7, 3, 3, 1, 1, 0, 1);
        c.transposed = true;
        c.d = {3, 2, 1};
        c.op = {2, 1, 0};
        v.push_back({"transposed_outpad_lt_dilation", c, {}});
    }
    {
        cref::Conv c;
        c.sd = 1, c.N = 2, c.Cin = 4, c.Cout = 6, c.in = {13, 1, 1}, c.k = {5, 1, 1}, c.s = {3, 1, 1}, c.pl = c.pr = {2, 0, 0};
        c.op = {1, 0, 0};
        c.transposed = true;
        v.push_back({"transposed_1d", c, {}});
    }
    {
        cref::Conv c;
        c.sd = 3, c.N = 1, c.Cin = 4, c.Cout = 6, c.in = {3, 4, 5}, c.k = {2, 3, 3}, c.s = {2, 2, 1}, c.pl = c.pr = {0, 1, 1};
        c.op = {1, 0, 0};
        c.transposed = true;
        v.push_back({"transposed_3d", c, {}});
    }
    // Every gradOutput row past the last window (outputPadding and padding alone make H): gradInput
    // and gradWeight are zero, gradBias the sums, the forward's output the bias (PyTorch's answer).
    {
        cref::Conv c;
        c.sd = 1, c.N = 2, c.Cin = 3, c.Cout = 4, c.in = {1, 1, 1}, c.k = {1, 1, 1}, c.s = {3, 1, 1}, c.pl = c.pr = {1, 0, 0};
        c.op = {2, 0, 0};
        c.transposed = true;
        v.push_back({"transposed_unreachable_1d", c, {}});
    }
    {  // unreachable along H only (W is an ordinary transposed dim)
        cref::Conv c = conv2d(2, 4, 6, 1, 5, 1, 3, 1, 2, 1, 1, 2);
        c.transposed = true;
        c.d = {3, 1, 1};
        c.op = {2, 1, 0};
        v.push_back({"transposed_unreachable_h", c, {}});
    }
    // Problems oneDNN 2.6's AMX BF16 kernels got wrong (dnnl_common.cpp, amx_weights_trusted;
    // found by test_conv_sweep.cpp): a row dilation with more than 32 input channels, a row no
    // longer than its stride, 3-D (gradWeight), a 3-D transposed gradInput (now and then).
    {
        cref::Conv c = conv2d(2, 34, 25, 12, 6, 2, 3);
        c.d = {2, 1, 1};
        c.pl = {1, 0, 0};
        c.pr = {1, 1, 0};
        v.push_back({"amx_row_dilation_ic34", c, std::vector<int64_t>{1, 1, 0, 1}});
    }
    {
        cref::Conv c;
        c.sd = 1, c.N = 2, c.Cin = 15, c.Cout = 15, c.in = {1, 1, 1}, c.k = {2, 1, 1}, c.s = {2, 1, 1}, c.pl = c.pr = {1, 0, 0};
        v.push_back({"amx_row_within_stride_1d", c, {}});
    }
    {
        cref::Conv c;
        c.sd = 3, c.N = 2, c.Cin = 2, c.Cout = 4, c.in = {3, 3, 5}, c.k = {3, 3, 2}, c.s = {2, 3, 1}, c.pl = c.pr = {1, 0, 0};
        v.push_back({"amx_3d_s2x3x1", c, {}});
    }
    {
        cref::Conv c;
        c.sd = 3, c.N = 3, c.Cin = 7, c.Cout = 17, c.in = {4, 6, 3}, c.k = {1, 2, 1}, c.s = {3, 2, 4}, c.op = {1, 0, 1};
        c.transposed = true;
        v.push_back({"amx_3d_transposed_s3x2x4", c, {}});
    }
    return v;
}

}  // namespace ct

#endif  // CONVOLUTION_TESTS_CONV_CASES_HPP_
