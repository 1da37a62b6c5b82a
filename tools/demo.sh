#!/usr/bin/env bash
# The demo: builds the sample clients against ./install with CANN's link line, then runs them under
# several products (accepted and rejected calls, results checked), and lists the loaded plugins.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="$PWD/install"
out="$PWD/build/demo"
mkdir -p "$out"
link=(-I"$prefix/include" -L"$prefix/lib" -Wl,-rpath,"$prefix/lib" -lascendcl -lnnopbase -lopapi)
echo "== building the sample clients: g++ main.cpp -I\$PREFIX/include -L\$PREFIX/lib -lascendcl -lnnopbase -lopapi"
g++ -std=c++17 -O2 examples/avgpool2d_backward/main.cpp -o "$out/avgpool2d_backward" "${link[@]}"
g++ -std=c++17 -O2 examples/product_tour/main.cpp -o "$out/product_tour" "${link[@]}"
g++ -std=c++17 -O2 examples/convolution_backward/main.cpp -o "$out/convolution_backward" "${link[@]}"
g++ -std=c++17 -O2 examples/max_pooling/main.cpp -o "$out/max_pooling" "${link[@]}"
g++ -std=c++17 -O2 examples/grid_sampler2d_backward/main.cpp -o "$out/grid_sampler2d_backward" "${link[@]}"
echo; echo "== aclnn-cpu list"
"$prefix/bin/aclnn-cpu" list
echo; echo "== sample client, default product (atlas-a2), FLOAT"
"$out/avgpool2d_backward" | tail -n 2
echo; echo "== the same client, ACLNN_CPU_PRODUCT=atlas-training, BFLOAT16 (expected: 161002 naming the product)"
if ACLNN_CPU_PRODUCT=atlas-training "$out/avgpool2d_backward" bf16; then echo "unexpected success"; exit 1; fi
echo; echo "== the same client, ACLNN_CPU_PRODUCT=atlas-200i-500-a2 (expected: operator unsupported)"
if ACLNN_CPU_PRODUCT=atlas-200i-500-a2 "$out/avgpool2d_backward"; then echo "unexpected success"; exit 1; fi
echo; echo "== ConvolutionBackward sample client (CANN's 2-D sample shape), default product, then 3-D"
"$out/convolution_backward" | tail -n 1
"$out/convolution_backward" 3d | tail -n 1
echo; echo "== the same 3-D call, ACLNN_CPU_PRODUCT=atlas-training (expected: 161002, 3-D is A2/A3 only)"
if ACLNN_CPU_PRODUCT=atlas-training "$out/convolution_backward" 3d; then echo "unexpected success"; exit 1; fi
echo; echo "== aclnn-cpu describe ConvolutionBackward"
"$prefix/bin/aclnn-cpu" describe ConvolutionBackward | sed -n 1,12p  # sed reads it all: no SIGPIPE under pipefail
echo; echo "== max pooling through the device mask: int32 argmax on atlas-a2, the bit mask on atlas-training"
"$out/max_pooling"
ACLNN_CPU_PRODUCT=atlas-training "$out/max_pooling" 2>/dev/null | tail -n 1
echo; echo "== grid sampler backward: bilinear, zeros and border padding (the clipped x has gradient 0), checked values"
"$out/grid_sampler2d_backward" | tail -n 1
"$out/grid_sampler2d_backward" border | tail -n 1
echo; echo "== the same client, ACLNN_CPU_PRODUCT=atlas-inference (expected: operator unsupported, 161002)"
if ACLNN_CPU_PRODUCT=atlas-inference "$out/grid_sampler2d_backward"; then echo "unexpected success"; exit 1; fi
echo; echo "== product tour: the same calls under every product"
"$out/product_tour"
