// RUN: kiln-opt %s -split-input-file -kiln-insert-qdq="ranges=fc1=-1:3,fc2=-1:3,g=0:2" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-insert-qdq="ranges=fc1=-1:3,fc2=-1:3,g=0:2 activation-type=uint8" | FileCheck %s --check-prefix=U8
// RUN: kiln-opt %s -split-input-file -kiln-insert-qdq="ranges=fc1=-1:3,fc2=-1:3,g=0:2 keep-nodes=fc2" | FileCheck %s --check-prefix=KEEP
// RUN: not kiln-opt %s -split-input-file -kiln-insert-qdq="ranges=fc1=-1:3,g=0:2" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: kiln-opt %s -split-input-file -kiln-insert-qdq="ranges=fc1=-1:3,fc2=-1:3,g=0:2" -kiln-fuse-qdq -kiln-constant-fold -kiln-dce | FileCheck %s --check-prefix=FUSED

// kiln-insert-qdq (the graph half of kiln-compile --precision=int8): the
// activation through Q/DQ with onnxruntime's parameters for its calibrated
// range, the weight int8 per output channel (symmetric), the bias i32.

// Range [-1, 3], int8 asymmetric: scale = 4/255, zero point
// round(-128 + 1/scale) = round(-64.25) = -64 (uint8: 64). Weight columns:
// absmax 2 and 0.5, scales 2/127 and 0.5/127; 1.0/scale0 = 63.5 rounds to
// even (64), 0.25/scale1 likewise. Both matmuls read %x: one Q/DQ pair.
// CHECK-LABEL: func.func @two_matmuls
// CHECK-DAG: %[[S:.+]] = kiln.constant dense<0.0156862754> : tensor<f32>
// CHECK-DAG: %[[Z:.+]] = kiln.constant dense<-64> : tensor<i8>
// CHECK: %[[Q:.+]] = kiln.quantize_linear %arg0, %[[S]], %[[Z]] : (tensor<2x3xf32>, tensor<f32>, tensor<i8>) -> tensor<2x3xi8>
// CHECK: %[[DQ:.+]] = kiln.dequantize_linear %[[Q]], %[[S]], %[[Z]]
// CHECK-DAG: %[[W:.+]] = kiln.constant dense<{{\[}}[64, -127], [32, 64], [-127, 32]]> : tensor<3x2xi8>
// CHECK-DAG: %[[WS:.+]] = kiln.constant dense<[0.0157480314, 0.00393700786]> : tensor<2xf32>
// CHECK-DAG: %[[WZ:.+]] = kiln.constant dense<0> : tensor<2xi8>
// CHECK: %[[WDQ:.+]] = kiln.dequantize_linear %[[W]], %[[WS]], %[[WZ]] : (tensor<3x2xi8>, tensor<2xf32>, tensor<2xi8>) -> tensor<3x2xf32>
// CHECK: %[[M1:.+]] = kiln.matmul %[[DQ]], %[[WDQ]]
// The bias Add: i32 in units of a_scale * w_scale[n] (0.5 / 2.4703e-4 = 2024.06;
// the MatMul's per-column axis 1 is the default, not printed).
// CHECK: %[[B:.+]] = kiln.constant dense<[2024, -8096]> : tensor<2xi32>
// CHECK: %[[BS:.+]] = kiln.constant dense<[2.47027958E-4, 6.17569895E-5]> : tensor<2xf32>
// CHECK: %[[BDQ:.+]] = kiln.dequantize_linear %[[B]], %[[BS]], %{{.+}} {axis = 0 : i64} : (tensor<2xi32>, tensor<2xf32>, none) -> tensor<2xf32>
// CHECK: kiln.add %[[M1]], %[[BDQ]]
// CHECK: kiln.matmul %[[DQ]], %{{.+}} : (tensor<2x3xf32>, tensor<3x2xf32>)
// U8-LABEL: func.func @two_matmuls
// U8: kiln.constant dense<64> : tensor<ui8>
// U8: kiln.quantize_linear %arg0, %{{.+}}, %{{.+}} : (tensor<2x3xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x3xui8>
// U8-NOT: kiln.quantize_linear
// KEEP-LABEL: func.func @two_matmuls
// KEEP: kiln.matmul %{{.+}}, %{{.+}} : (tensor<2x3xf32>, tensor<3x2xf32>)
// KEEP: kiln.matmul %arg0, %{{.+}} : (tensor<2x3xf32>, tensor<3x2xf32>)
// MISSING: error: {{.*}}no calibrated range for the input of ONNX node 'fc2'
// FUSED-LABEL: func.func @two_matmuls
// FUSED: kiln.quantize_linear %arg0
// FUSED: kiln.quantized_matmul
// FUSED: kiln.quantized_matmul
// FUSED-NOT: kiln.matmul
func.func @two_matmuls(%x: tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %cst = kiln.constant dense<[[1.0, -0.5], [0.5, 0.25], [-2.0, 0.125]]> : tensor<3x2xf32>
  %bias = kiln.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %m1 = kiln.matmul %x, %cst : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32> loc("fc1")
  %y1 = kiln.add %m1, %bias : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32> loc("fc1_add")
  %y2 = kiln.matmul %x, %cst : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32> loc("fc2")
  return %y1, %y2 : tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// A Gemm with transB (weight [N, K], per-channel axis 0) and its bias;
// range [0, 2]: scale 2/255, zero point -128. A matmul with a weight that
// is not a constant is left alone.
// CHECK-LABEL: func.func @gemm
// FUSED-LABEL: func.func @gemm
// FUSED: kiln.quantized_matmul {{.*}} -> tensor<4x2xf32>
// FUSED: kiln.matmul
// U8-LABEL: func.func @gemm
// CHECK-DAG: kiln.constant dense<0.00784313772> : tensor<f32>
// CHECK-DAG: kiln.constant dense<-128> : tensor<i8>
// CHECK: kiln.dequantize_linear %{{.+}}, %{{.+}}, %{{.+}} {axis = 0 : i64} : (tensor<2x3xi8>, tensor<2xf32>, tensor<2xi8>) -> tensor<2x3xf32>
// CHECK: kiln.dequantize_linear %{{.+}}, %{{.+}}, %{{.+}} {axis = 0 : i64} : (tensor<2xi32>, tensor<2xf32>, none) -> tensor<2xf32>
// CHECK: %[[G:.+]] = kiln.gemm
// CHECK: kiln.matmul %[[G]], %arg1 : (tensor<4x2xf32>, tensor<2x2xf32>)
func.func @gemm(%x: tensor<4x3xf32>, %w2: tensor<2x2xf32>) -> tensor<4x2xf32> {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25]]> : tensor<2x3xf32>
  %b = kiln.constant dense<[0.1, 0.2]> : tensor<2xf32>
  %g = kiln.gemm %x, %w, %b {transB = 1 : i64} : (tensor<4x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x2xf32> loc("g")
  %m = kiln.matmul %g, %w2 : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32> loc("act_x_act")
  return %m : tensor<4x2xf32>
}

// -----

// Conv only with ops=Conv: the weight per output channel (axis 0 of
// [M, C, kh, kw]), the float bias left as it is. Without ops=Conv it is
// left alone.
// RUN: kiln-opt %s -split-input-file -kiln-insert-qdq="ranges=c=-2:2 ops=Conv" | FileCheck %s --check-prefix=CONV
// CONV-LABEL: func.func @conv
// CONV: %[[Q:.+]] = kiln.quantize_linear %arg0
// CONV: %[[DQ:.+]] = kiln.dequantize_linear %[[Q]]
// CONV: %[[W:.+]] = kiln.constant dense<{{\[\[\[\[127\]\], \[\[-64\]\]\], \[\[\[32\]\], \[\[127\]\]\]\]}}> : tensor<2x2x1x1xi8>
// CONV: %[[WS:.+]] = kiln.constant dense<[0.0157480314, 0.0314960629]> : tensor<2xf32>
// CONV: %[[WDQ:.+]] = kiln.dequantize_linear %[[W]], %[[WS]], %{{.+}} {axis = 0 : i64} : (tensor<2x2x1x1xi8>, tensor<2xf32>, tensor<2xi8>) -> tensor<2x2x1x1xf32>
// CONV: kiln.conv %[[DQ]], %[[WDQ]], %{{.+}} {kernel_shape = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>)
// CHECK-LABEL: func.func @conv
// CHECK-NOT: kiln.quantize_linear
func.func @conv(%x: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = kiln.constant dense<[[[[2.0]], [[-1.0]]], [[[1.0]], [[4.0]]]]> : tensor<2x2x1x1xf32>
  %b = kiln.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %y = kiln.conv %x, %w, %b {kernel_shape = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32> loc("c")
  return %y : tensor<1x2x2x2xf32>
}
