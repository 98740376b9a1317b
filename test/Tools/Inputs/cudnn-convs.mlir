// Convolutions that --kernels=library turns into kiln_rt_cuda_conv2d calls
// only (kiln-run-cuda-cudnn.test): bias + relu with pads 1, strides 2,
// depthwise, dilations 2 with pads 2. No generated kernel at all (the
// artifact has no fatbin section).
func.func @main(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>,
                %w2: tensor<6x4x3x3xf32>, %wd: tensor<6x1x3x3xf32>, %w3: tensor<5x6x3x3xf32>, %b3: tensor<5xf32>)
    -> (tensor<2x6x5x5xf32>, tensor<2x5x5x5xf32>) {
  %c = kiln.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x9x9xf32> loc("/n/Conv")
  %r = kiln.relu %c : tensor<2x4x9x9xf32> loc("/n/Relu")
  %none = kiln.none
  %c2 = kiln.conv %r, %w2, %none {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>, none) -> tensor<2x6x5x5xf32> loc("/n/Conv2")
  %d = kiln.conv %c2, %wd, %none {pads = array<i64: 1, 1, 1, 1>, group = 6 : i64} : (tensor<2x6x5x5xf32>, tensor<6x1x3x3xf32>, none) -> tensor<2x6x5x5xf32> loc("/n/Depthwise")
  %e = kiln.conv %d, %w3, %b3 {pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>} : (tensor<2x6x5x5xf32>, tensor<5x6x3x3xf32>, tensor<5xf32>) -> tensor<2x5x5x5xf32> loc("/n/Dilated")
  %er = kiln.relu %e : tensor<2x5x5x5xf32> loc("/n/Relu3")
  return %d, %er : tensor<2x6x5x5xf32>, tensor<2x5x5x5xf32>
}
