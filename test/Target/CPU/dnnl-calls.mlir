// RUN: kiln-opt %s -split-input-file -kiln-cpu-dnnl-calls -cse | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-decompose-fused=keep-library-convs=true | FileCheck %s --check-prefix=KEEP

// kiln-cpu-dnnl-calls: the float32 channels-last convolutions become calls
// to oneDNN (kiln_abi_dnnl_conv2d_f32) on 1-element views of their buffers,
// with the sizes, the window and the epilogue as index arguments; each call
// has its own state slot. kiln-decompose-fused keep-library-convs keeps
// exactly these convolutions (and the channels-last pools) and decomposes
// the others.

// CHECK: func.func private @kiln_abi_dnnl_conv2d_f32(memref<1xi64>, memref<1xf32>, memref<1xf32>, memref<1xf32>, memref<1xf32>, memref<1xf32>, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index)
// CHECK: memref.global "private" @kiln_dnnl_state_0 : memref<1xi64> = dense<0> {alignment = 8 : i64}
// CHECK-LABEL: func.func @resnet_block
// CHECK-SAME: (%[[X:.+]]: tensor<1x56x56x64xf32>, %[[W:.+]]: tensor<64x3x3x64xf32> {kiln.weight_value
// CHECK-SAME: %[[B:.+]]: tensor<64xf32>, %[[R:.+]]: tensor<1x56x56x64xf32>)
// CHECK: %[[XB:.+]] = bufferization.to_buffer %[[X]] read_only : tensor<1x56x56x64xf32> to memref<1x56x56x64xf32>
// CHECK: %[[XP:.+]] = memref.reinterpret_cast %[[XB]] to offset: [0], sizes: [1], strides: [1]
// CHECK: %[[WB:.+]] = bufferization.to_buffer %[[W]] read_only
// CHECK: %[[WP:.+]] = memref.reinterpret_cast %[[WB]]
// CHECK: %[[BB:.+]] = bufferization.to_buffer %[[B]] read_only
// CHECK: %[[BP:.+]] = memref.reinterpret_cast %[[BB]]
// CHECK: %[[RB:.+]] = bufferization.to_buffer %[[R]] read_only
// CHECK: %[[RP:.+]] = memref.reinterpret_cast %[[RB]]
// CHECK: %[[Y:.+]] = memref.alloc() {alignment = 64 : i64} : memref<1x56x56x64xf32>
// CHECK: %[[YP:.+]] = memref.reinterpret_cast %[[Y]]
// CHECK: %[[SLOT:.+]] = memref.get_global @kiln_dnnl_state_0
// n, h, w, c, oh, ow, m, kh, kw, group, strides, dilations, pads (top,
// left, bottom, right), activation (relu), residual first, bias, residual,
// constant filter.
// CHECK: call @kiln_abi_dnnl_conv2d_f32(%[[SLOT]], %[[XP]], %[[WP]], %[[BP]], %[[RP]], %[[YP]], %c1, %c56, %c56, %c64, %c56, %c56, %c64, %c3, %c3, %c1, %c1, %c1, %c1, %c1, %c1, %c1, %c1, %c1, %c1, %c1, %c1, %c1, %c1)
// CHECK: %[[T:.+]] = bufferization.to_tensor %[[Y]] restrict writable
// CHECK: return %[[T]]
// KEEP-LABEL: func.func @resnet_block
// KEEP: kiln.fused_conv_nhwc
// KEEP-NOT: kiln.transpose
func.func @resnet_block(%x: tensor<1x56x56x64xf32>,
                        %w: tensor<64x3x3x64xf32> {kiln.weight_value = dense<0.5> : tensor<64x3x3x64xf32>},
                        %b: tensor<64xf32>, %r: tensor<1x56x56x64xf32>)
    -> tensor<1x56x56x64xf32> {
  %y = kiln.fused_conv_nhwc %x, %w, %b, %r {activation = "relu", pads = array<i64: 1, 1, 1, 1>, residual_before_activation = true}
      : (tensor<1x56x56x64xf32>, tensor<64x3x3x64xf32>, tensor<64xf32>, tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  return %y : tensor<1x56x56x64xf32>
}

// -----

// A depthwise convolution with a run-time batch, stride 2, SAME_UPPER
// padding (0 before, 1 after for 8 -> 4), no bias and a filter computed at
// run time (flags 0); the output buffer takes the batch.
// CHECK-LABEL: func.func @depthwise
// CHECK-SAME: (%[[X:.+]]: tensor<?x8x8x32xf32>, %[[W:.+]]: tensor<32x3x3x1xf32>)
// CHECK: %[[XP:.+]] = memref.reinterpret_cast
// CHECK: %[[N:.+]] = tensor.dim %[[X]], %c0
// CHECK: %[[Y:.+]] = memref.alloc(%[[N]]) {alignment = 64 : i64} : memref<?x4x4x32xf32>
// CHECK: call @kiln_abi_dnnl_conv2d_f32(%{{.+}}, %[[XP]], %{{.+}}, %[[XP]], %[[XP]], %{{.+}}, %[[N]], %c8, %c8, %c32, %c4, %c4, %c32, %c3, %c3, %c32, %c2, %c2, %c1, %c1, %c0, %c0, %c1, %c1, %c0, %c0, %c0, %c0, %c0)
// KEEP-LABEL: func.func @depthwise
// KEEP: kiln.conv_nhwc
func.func @depthwise(%x: tensor<?x8x8x32xf32>, %w: tensor<32x3x3x1xf32>)
    -> tensor<?x4x4x32xf32> {
  %none = kiln.none
  %y = kiln.conv_nhwc %x, %w, %none {auto_pad = "SAME_UPPER", group = 32 : i64, strides = array<i64: 2, 2>}
      : (tensor<?x8x8x32xf32>, tensor<32x3x3x1xf32>, none) -> tensor<?x4x4x32xf32>
  return %y : tensor<?x4x4x32xf32>
}

// -----

// Not a library convolution: half precision, and a 1x1 filter over a 1x1
// image (a squeeze-and-excitation layer: a matrix-vector product per
// image, left to Kiln's kernel); keep-library-convs decomposes them (NCHW
// between transposes). The run-time spatial size between them is one
// (explicit padding: @dynamic_image below).
// CHECK-LABEL: func.func @not_library
// CHECK-NOT: call
// CHECK: kiln.conv_nhwc
// CHECK: call @kiln_abi_dnnl_conv2d_f32(
// CHECK-NOT: call
// CHECK: kiln.fused_conv_nhwc
// KEEP-LABEL: func.func @not_library
// KEEP: kiln.conv {{.*}}tensor<1x8x6x6xf16>
// KEEP: kiln.conv_nhwc {{.*}}tensor<1x?x6x8xf32>
// KEEP: kiln.conv {{.*}}tensor<?x96x1x1xf32>
func.func @not_library(%x: tensor<1x6x6x8xf16>, %w: tensor<8x1x1x8xf16>,
                       %x2: tensor<1x?x6x8xf32>, %w2: tensor<8x1x1x8xf32>,
                       %x3: tensor<?x1x1x24xf32>, %w3: tensor<96x1x1x24xf32>)
    -> (tensor<1x6x6x8xf16>, tensor<1x?x6x8xf32>, tensor<?x1x1x96xf32>) {
  %none = kiln.none
  %y = kiln.conv_nhwc %x, %w, %none : (tensor<1x6x6x8xf16>, tensor<8x1x1x8xf16>, none) -> tensor<1x6x6x8xf16>
  %y2 = kiln.conv_nhwc %x2, %w2, %none : (tensor<1x?x6x8xf32>, tensor<8x1x1x8xf32>, none) -> tensor<1x?x6x8xf32>
  %y3 = kiln.fused_conv_nhwc %x3, %w3, %none, %none {activation = "relu"} : (tensor<?x1x1x24xf32>, tensor<96x1x1x24xf32>, none, none) -> tensor<?x1x1x96xf32>
  return %y, %y2, %y3 : tensor<1x6x6x8xf16>, tensor<1x?x6x8xf32>, tensor<?x1x1x96xf32>
}

// -----

// MobileNet's activations are post-ops: hard_swish (7) and relu6 (8), the
// fifth argument from the end.
// CHECK-LABEL: func.func @mobilenet_activations
// CHECK: call @kiln_abi_dnnl_conv2d_f32({{.*}}, %c7, %c0, %c0, %c0, %c0) :
// CHECK: call @kiln_abi_dnnl_conv2d_f32({{.*}}, %c8, %c0, %c0, %c0, %c0) :
func.func @mobilenet_activations(%x: tensor<1x8x8x16xf32>, %w: tensor<16x3x3x1xf32>, %w2: tensor<32x1x1x16xf32>)
    -> tensor<1x8x8x32xf32> {
  %none = kiln.none
  %y = kiln.fused_conv_nhwc %x, %w, %none, %none {activation = "hard_swish", group = 16 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x16xf32>, tensor<16x3x3x1xf32>, none, none) -> tensor<1x8x8x16xf32>
  %z = kiln.fused_conv_nhwc %y, %w2, %none, %none {activation = "relu6"} : (tensor<1x8x8x16xf32>, tensor<32x1x1x16xf32>, none, none) -> tensor<1x8x8x32xf32>
  return %z : tensor<1x8x8x32xf32>
}

// -----

// keep-library-convs keeps the channels-last pools too.
// KEEP-LABEL: func.func @pool
// KEEP: kiln.max_pool_nhwc
func.func @pool(%x: tensor<1x8x8x16xf32>) -> tensor<1x4x4x16xf32> {
  %y = kiln.max_pool_nhwc %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
      : (tensor<1x8x8x16xf32>) -> tensor<1x4x4x16xf32>
  return %y : tensor<1x4x4x16xf32>
}

// -----

// ... but not a pool with a run-time batch: its channels-last lowering needs
// static shapes.
// KEEP-LABEL: func.func @dynamic_pool
// KEEP-NOT: kiln.max_pool_nhwc
// KEEP: kiln.max_pool {{.*}}tensor<?x16x8x8xf32>
func.func @dynamic_pool(%x: tensor<?x8x8x16xf32>) -> tensor<?x4x4x16xf32> {
  %y = kiln.max_pool_nhwc %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
      : (tensor<?x8x8x16xf32>) -> tensor<?x4x4x16xf32>
  return %y : tensor<?x4x4x16xf32>
}

// -----

// A matmul of 128 rows or more by a weight is a oneDNN matmul (m, k, n,
// bias, constant weight); Gemm's bias of N elements goes with it. Fewer
// rows, or a right-hand side that is not a weight, stay Kiln's GEMM.
// CHECK-LABEL: func.func @matmuls
// CHECK: call @kiln_abi_dnnl_matmul_f32(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %c256, %c16, %c32, %c0, %c1)
// CHECK: call @kiln_abi_dnnl_matmul_f32(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %c128, %c16, %c32, %c1, %c1)
// CHECK: kiln.matmul %{{.+}} : (tensor<8x16xf32>
// CHECK: kiln.matmul %{{.+}} : (tensor<128x16xf32>, tensor<16x32xf32>)
func.func @matmuls(%a: tensor<2x128x16xf32>, %small: tensor<8x16xf32>,
                   %g: tensor<128x16xf32>, %x: tensor<16x32xf32>,
                   %w: tensor<16x32xf32> {kiln.weight_value = dense<0.5> : tensor<16x32xf32>},
                   %bias: tensor<32xf32>)
    -> (tensor<2x128x32xf32>, tensor<128x32xf32>, tensor<8x32xf32>, tensor<128x32xf32>) {
  %0 = kiln.matmul %a, %w : (tensor<2x128x16xf32>, tensor<16x32xf32>) -> tensor<2x128x32xf32>
  %1 = kiln.gemm %g, %w, %bias : (tensor<128x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<128x32xf32>
  %2 = kiln.matmul %small, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %3 = kiln.matmul %g, %x : (tensor<128x16xf32>, tensor<16x32xf32>) -> tensor<128x32xf32>
  return %0, %1, %2, %3 : tensor<2x128x32xf32>, tensor<128x32xf32>, tensor<8x32xf32>, tensor<128x32xf32>
}

// -----

// A static channels-last max pool (ceil_mode: the overhang is bottom/right
// padding, 1 here for 8 -> 4 with a 3x3 window, stride 2) is a oneDNN
// pooling (kind 0: max); an average pool counting its padding with
// ceil_mode is not (ONNX leaves the overhang out of the count).
// CHECK-LABEL: func.func @pools
// CHECK: call @kiln_abi_dnnl_pool2d_f32(%{{.+}}, %{{.+}}, %{{.+}}, %c1, %c8, %c8, %c16, %c4, %c4, %c3, %c3, %c2, %c2, %c0, %c0, %c1, %c1, %c0)
// CHECK: kiln.average_pool_nhwc
func.func @pools(%x: tensor<1x8x8x16xf32>) -> (tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32>) {
  %0 = kiln.max_pool_nhwc %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64}
      : (tensor<1x8x8x16xf32>) -> tensor<1x4x4x16xf32>
  %1 = kiln.average_pool_nhwc %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64, count_include_pad = 1 : i64}
      : (tensor<1x8x8x16xf32>) -> tensor<1x4x4x16xf32>
  return %0, %1 : tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32>
}

// -----

// Run-time image sizes (a fully convolutional model exported with dynamic
// height and width): H and W are the input's dims, OH and OW ONNX's rule
// for the explicit padding, (H + 2 - 3) floordiv 2 + 1, and the output
// buffer takes N, OH and OW. The runtime makes a primitive per size seen.
// CHECK-LABEL: func.func @dynamic_image
// CHECK-SAME: (%[[X:.+]]: tensor<?x?x?x16xf32>,
// CHECK-DAG: %[[N:.+]] = tensor.dim %[[X]], %c0
// CHECK-DAG: %[[H:.+]] = tensor.dim %[[X]], %c1
// CHECK-DAG: %[[W:.+]] = tensor.dim %[[X]], %c2
// CHECK: %[[HS:.+]] = arith.addi %[[H]], %c-1
// CHECK: %[[HD:.+]] = arith.floordivsi %[[HS]], %c2
// CHECK: %[[OH:.+]] = arith.addi %[[HD]], %c1
// CHECK: %[[WS:.+]] = arith.addi %[[W]], %c-1
// CHECK: %[[WD:.+]] = arith.floordivsi %[[WS]], %c2
// CHECK: %[[OW:.+]] = arith.addi %[[WD]], %c1
// CHECK: memref.alloc(%[[N]], %[[OH]], %[[OW]]) {alignment = 64 : i64} : memref<?x?x?x32xf32>
// CHECK: call @kiln_abi_dnnl_conv2d_f32(%{{.+}}, %[[N]], %[[H]], %[[W]], %c16, %[[OH]], %[[OW]], %c32, %c3, %c3, %c1, %c2, %c2, %c1, %c1, %c1, %c1, %c1, %c1,
// KEEP-LABEL: func.func @dynamic_image
// KEEP: kiln.conv_nhwc
func.func @dynamic_image(%x: tensor<?x?x?x16xf32>,
                         %w: tensor<32x3x3x16xf32> {kiln.weight_value = dense<0.5> : tensor<32x3x3x16xf32>})
    -> tensor<?x?x?x32xf32> {
  %none = kiln.none
  %y = kiln.conv_nhwc %x, %w, %none {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
      : (tensor<?x?x?x16xf32>, tensor<32x3x3x16xf32>, none) -> tensor<?x?x?x32xf32>
  return %y : tensor<?x?x?x32xf32>
}

// -----

// SAME_UPPER over a run-time image size: OH = ceil(H / 2), the total
// padding max(0, (OH - 1) * 2 + 3 - H), its smaller half at the top (the
// odd element at the bottom), all computed at run time.
// CHECK-LABEL: func.func @dynamic_image_same
// CHECK-SAME: (%[[X:.+]]: tensor<1x?x?x16xf32>,
// CHECK: %[[H:.+]] = tensor.dim %[[X]], %c1
// CHECK: %[[HU:.+]] = arith.addi %[[H]], %c1
// CHECK: %[[OH:.+]] = arith.floordivsi %[[HU]], %c2
// CHECK: %[[L:.+]] = arith.subi %[[OH]], %c1
// CHECK: %[[M:.+]] = arith.muli %[[L]], %c2
// CHECK: %[[R:.+]] = arith.addi %[[M]], %c3
// CHECK: %[[D:.+]] = arith.subi %[[R]], %[[H]]
// CHECK: %[[T:.+]] = arith.maxsi %[[D]], %c0
// CHECK: %[[TOP:.+]] = arith.floordivsi %[[T]], %c2
// CHECK: %[[BOTTOM:.+]] = arith.subi %[[T]], %[[TOP]]
// CHECK: call @kiln_abi_dnnl_conv2d_f32({{.*}}, %c1, %[[H]], %{{.+}}, %c16, %[[OH]], %{{.+}}, %c32, %c3, %c3, %c1, %c2, %c2, %c1, %c1, %[[TOP]], %{{.+}}, %[[BOTTOM]], %{{.+}}, %c0, %c0, %c0, %c0, %c0)
// KEEP-LABEL: func.func @dynamic_image_same
// KEEP: kiln.conv_nhwc
func.func @dynamic_image_same(%x: tensor<1x?x?x16xf32>,
                              %w: tensor<32x3x3x16xf32>) -> tensor<1x?x?x32xf32> {
  %none = kiln.none
  %y = kiln.conv_nhwc %x, %w, %none {auto_pad = "SAME_UPPER", strides = array<i64: 2, 2>}
      : (tensor<1x?x?x16xf32>, tensor<32x3x3x16xf32>, none) -> tensor<1x?x?x32xf32>
  return %y : tensor<1x?x?x32xf32>
}

// -----

// A max pool over run-time image sizes (ResNet's 3x3, stride 2, padding
// 1): OH = (H + 2 - 3) floordiv 2 + 1 and the end padding oneDNN needs for
// it, (OH - 1) * 2 + 3 - H - 1, at run time (0 or 1, never negative: the
// end padding is at least stride - 1). A 2x2 stride-2 pool without padding
// could leave the last row unread: it is decomposed instead.
// CHECK-LABEL: func.func @dynamic_pools
// CHECK-SAME: (%[[X:.+]]: tensor<1x?x?x8xf32>)
// CHECK-DAG: %[[H:.+]] = tensor.dim %[[X]], %c1
// CHECK-DAG: %[[W:.+]] = tensor.dim %[[X]], %c2
// CHECK: %[[HS:.+]] = arith.addi %[[H]], %c-1
// CHECK: %[[HD:.+]] = arith.floordivsi %[[HS]], %c2
// CHECK: %[[OH:.+]] = arith.addi %[[HD]], %c1
// CHECK: %[[HL:.+]] = arith.subi %[[OH]], %c1
// CHECK: %[[HM:.+]] = arith.muli %[[HL]], %c2
// CHECK: %[[HR:.+]] = arith.addi %[[HM]], %c2
// CHECK: %[[HE:.+]] = arith.subi %[[HR]], %[[H]]
// CHECK: memref.alloc(%{{.+}}, %{{.+}}) {alignment = 64 : i64} : memref<1x?x?x8xf32>
// CHECK: call @kiln_abi_dnnl_pool2d_f32(%{{.+}}, %{{.+}}, %{{.+}}, %c1, %[[H]], %[[W]], %c8, %[[OH]], %{{.+}}, %c3, %c3, %c2, %c2, %c1, %c1, %[[HE]], %{{.+}}, %c0)
// CHECK: kiln.max_pool_nhwc
// KEEP-LABEL: func.func @dynamic_pools
// KEEP: kiln.max_pool_nhwc
// KEEP: kiln.max_pool {{.*}}tensor<1x8x?x?xf32>
func.func @dynamic_pools(%x: tensor<1x?x?x8xf32>) -> (tensor<1x?x?x8xf32>, tensor<1x?x?x8xf32>) {
  %y = kiln.max_pool_nhwc %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
      : (tensor<1x?x?x8xf32>) -> tensor<1x?x?x8xf32>
  %z = kiln.max_pool_nhwc %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
      : (tensor<1x?x?x8xf32>) -> tensor<1x?x?x8xf32>
  return %y, %z : tensor<1x?x?x8xf32>, tensor<1x?x?x8xf32>
}
