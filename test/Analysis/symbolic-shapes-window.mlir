// Convolutions and pools over run-time image sizes (models exported with
// dynamic height and width): ONNX's rule per spatial dim, floor((D + pads -
// dilation * (k - 1) - 1) / stride) + 1, or ceil(D / stride) with SAME
// padding; an input that must hold a kernel larger than its padding gets
// a constraint. ceil_mode rounds up; where its last window may be dropped
// (it would start in the end padding) the size is not expressed.
// RUN: kiln-opt --kiln-test-symbolic-shapes %s | FileCheck %s

// CHECK: kiln.constraints = ["5 <= h (kiln.conv)", "5 <= w (kiln.conv)", "2 <= (h - 1) / 2 + 1 (kiln.max_pool)", "2 <= (w - 1) / 2 + 1 (kiln.max_pool)", "3 <= (h - 1) / 2 + 1 (kiln.average_pool)", "3 <= (w - 1) / 2 + 1 (kiln.average_pool)"]
func.func @main(%x: tensor<?x3x?x?xf32> {kiln.name = "x", kiln.dims = ["n", "", "h", "w"]},
                %wt: tensor<8x3x3x3xf32> {kiln.name = "w"})
    -> (tensor<?x8x?x?xf32>, tensor<?x8x?x?xf32>, tensor<?x8x?x?xf32>, tensor<?x?x?x8xf32>, tensor<?x8x?x?xf32>, tensor<?x8x?x?xf32>) {
  %none = kiln.none
  // Stride 2, padding 1: (h + 2 - 3) / 2 + 1.
  // CHECK: kiln.conv {{.*}}kiln.symbolic_shape = ["[n, 8, (h - 1) / 2 + 1, (w - 1) / 2 + 1]"]
  %c = kiln.conv %x, %wt, %none {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
      : (tensor<?x3x?x?xf32>, tensor<8x3x3x3xf32>, none) -> tensor<?x8x?x?xf32>
  // No padding, dilation 2: (h - 5) / 1 + 1 = h - 4; the input must hold
  // the dilated kernel's 5.
  // CHECK: kiln.conv {{.*}}kiln.symbolic_shape = ["[n, 8, h - 4, w - 4]"]
  %d = kiln.conv %x, %wt, %none {dilations = array<i64: 2, 2>}
      : (tensor<?x3x?x?xf32>, tensor<8x3x3x3xf32>, none) -> tensor<?x8x?x?xf32>
  // SAME_UPPER, stride 2: ceil(h / 2).
  // CHECK: kiln.conv {{.*}}kiln.symbolic_shape = ["[n, 8, (h + 1) / 2, (w + 1) / 2]"]
  %s = kiln.conv %x, %wt, %none {auto_pad = "SAME_UPPER", strides = array<i64: 2, 2>}
      : (tensor<?x3x?x?xf32>, tensor<8x3x3x3xf32>, none) -> tensor<?x8x?x?xf32>
  // Channels last: OHWI filter, spatial dims 1 and 2.
  %xl = kiln.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<?x3x?x?xf32>) -> tensor<?x?x?x3xf32>
  %wl = kiln.constant dense<1.0> : tensor<8x3x3x3xf32>
  // CHECK: kiln.conv_nhwc {{.*}}kiln.symbolic_shape = ["[n, h, w, 8]"]
  %l = kiln.conv_nhwc %xl, %wl, %none {pads = array<i64: 1, 1, 1, 1>}
      : (tensor<?x?x?x3xf32>, tensor<8x3x3x3xf32>, none) -> tensor<?x?x?x8xf32>
  // MaxPool 2x2, stride 2 after the strided conv.
  // CHECK: kiln.max_pool {{.*}}kiln.symbolic_shape = ["[n, 8, ((h - 1) / 2 - 1) / 2 + 1, ((w - 1) / 2 - 1) / 2 + 1]"
  %p, %i = kiln.max_pool %c {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
      : (tensor<?x8x?x?xf32>) -> (tensor<?x8x?x?xf32>, tensor<?x8x?x?xi64>)
  // ceil_mode where no window is dropped (stride 2 <= kernel 3 - end
  // padding 0, SqueezeNet's pools): ceil((h' - 3) / 2) + 1, which the
  // expressions simplify to floor((h' - 2) / 2) + 1.
  // CHECK: kiln.average_pool {{.*}}kiln.symbolic_shape = ["[n, 8, ((h - 1) / 2 - 1) / 2 + 1, ((w - 1) / 2 - 1) / 2 + 1]"]
  %a = kiln.average_pool %c {ceil_mode = 1 : i64, kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>}
      : (tensor<?x8x?x?xf32>) -> tensor<?x8x?x?xf32>
  // ceil_mode where the last window may start in the end padding (and is
  // then dropped): not expressed.
  // CHECK: kiln.max_pool {{.*}}kiln.symbolic_shape = ["unknown since kiln.max_pool", "unknown since kiln.max_pool"]
  %q, %qi = kiln.max_pool %c {ceil_mode = 1 : i64, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>}
      : (tensor<?x8x?x?xf32>) -> (tensor<?x8x?x?xf32>, tensor<?x8x?x?xi64>)
  return %c, %d, %s, %l, %p, %a : tensor<?x8x?x?xf32>, tensor<?x8x?x?xf32>, tensor<?x8x?x?xf32>, tensor<?x?x?x8xf32>, tensor<?x8x?x?xf32>, tensor<?x8x?x?xf32>
}
