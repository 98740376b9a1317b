// RUN: kiln-opt %s -kiln-convert-precision | FileCheck %s --check-prefix=DEFAULT
// RUN: kiln-opt %s -kiln-convert-precision='keep-ops=Relu,kiln.sigmoid,gelu' | FileCheck %s --check-prefix=OPS
// RUN: kiln-opt %s -kiln-convert-precision='keep-nodes=/layers.0/mlp/MatMul' | FileCheck %s --check-prefix=NODES
// RUN: kiln-opt %s -kiln-convert-precision='keep-classes=none' | FileCheck %s --check-prefix=NONE
// RUN: kiln-opt %s -kiln-convert-precision='keep-classes=softmax' | FileCheck %s --check-prefix=SOFTMAX
// RUN: kiln-opt %s -kiln-convert-precision='only-nodes=/layers.0/mlp/MatMul_1' | FileCheck %s --check-prefix=ONLY
// RUN: kiln-opt %s -kiln-convert-precision='convert-io=true' | FileCheck %s --check-prefix=IO
// RUN: not kiln-opt %s -kiln-convert-precision='keep-ops=NoSuchOp' 2>&1 | FileCheck %s --check-prefix=BADOP
// RUN: not kiln-opt %s -kiln-convert-precision='keep-classes=softmax,attention' 2>&1 | FileCheck %s --check-prefix=BADCLASS
// RUN: not kiln-opt %s -kiln-convert-precision='precision=fp8' 2>&1 | FileCheck %s --check-prefix=BADPREC
// The keep lists of kiln-convert-precision: op types by ONNX or kiln name,
// ONNX node names (the op locations), the default classes, and only-nodes
// (convert just these nodes, as kiln-compile --auto-keep does per layer).

// DEFAULT-LABEL: func.func @block
// DEFAULT: kiln.rms_norm {{.*}} -> tensor<1x4xf32>
// DEFAULT: kiln.matmul {{.*}} -> tensor<1x8xf16>
// DEFAULT: kiln.relu {{.*}} : tensor<1x8xf16>
// DEFAULT: kiln.sigmoid {{.*}} : tensor<1x8xf16>
// DEFAULT: kiln.gelu {{.*}} : tensor<1x8xf16>
// DEFAULT: kiln.matmul {{.*}} -> tensor<1x4xf16>
// DEFAULT: kiln.add {{.*}} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>

// Relu, Sigmoid and Gelu named three ways: ONNX type, kiln.name, mnemonic.
// OPS: kiln.matmul {{.*}} -> tensor<1x8xf16>
// OPS: kiln.relu {{.*}} : tensor<1x8xf32>
// OPS: kiln.sigmoid {{.*}} : tensor<1x8xf32>
// OPS: kiln.gelu {{.*}} : tensor<1x8xf32>
// OPS: kiln.matmul {{.*}} -> tensor<1x4xf16>

// NODES: kiln.matmul {{.*}} : (tensor<1x4xf32>, tensor<4x8xf32>) -> tensor<1x8xf32>
// NODES: kiln.relu {{.*}} : tensor<1x8xf16>
// NODES: kiln.matmul {{.*}} : (tensor<1x8xf16>, tensor<8x4xf16>) -> tensor<1x4xf16>

// No class kept: the norm and the residual add convert too, and nothing is
// cast back before the output cast.
// NONE: kiln.rms_norm {{.*}} -> tensor<1x4xf16>
// NONE: kiln.add {{.*}} : (tensor<1x4xf16>, tensor<1x4xf16>) -> tensor<1x4xf16>
// NONE-NEXT: kiln.cast %{{.*}} {to = f32} : (tensor<1x4xf16>) -> tensor<1x4xf32>
// NONE-NEXT: return

// SOFTMAX: kiln.rms_norm {{.*}} -> tensor<1x4xf16>
// SOFTMAX: kiln.add {{.*}} : (tensor<1x4xf16>, tensor<1x4xf16>) -> tensor<1x4xf16>

// Only the second matmul converts: its input and output are cast, its
// weight converted; everything else stays f32.
// ONLY: kiln.matmul {{.*}} : (tensor<1x4xf32>, tensor<4x8xf32>) -> tensor<1x8xf32>
// ONLY: kiln.gelu {{.*}} : tensor<1x8xf32>
// ONLY-NEXT: kiln.cast %{{.*}} {to = f16} : (tensor<1x8xf32>) -> tensor<1x8xf16>
// ONLY-NEXT: kiln.matmul {{.*}} : (tensor<1x8xf16>, tensor<8x4xf16>) -> tensor<1x4xf16>
// ONLY-NEXT: kiln.cast %{{.*}} {to = f32} : (tensor<1x4xf16>) -> tensor<1x4xf32>

// convert-io: the signature takes and returns f16; the kept ops are cast.
// IO-LABEL: func.func @block
// IO-SAME: (%[[X:.+]]: tensor<1x4xf16>) -> tensor<1x4xf16>
// IO-NEXT: kiln.cast %[[X]] {to = f32}
// IO: %[[Y:.+]] = kiln.add {{.*}} -> tensor<1x4xf32>
// IO-NEXT: %[[YH:.+]] = kiln.cast %[[Y]] {to = f16}
// IO-NEXT: return %[[YH]] : tensor<1x4xf16>

// BADOP: keep-ops: 'NoSuchOp' is neither an ONNX op type Kiln imports nor a kiln op
// BADCLASS: unknown keep class 'attention' (the classes are softmax, normalization, reduction, residual-add, or none)
// BADPREC: precision must be fp16 or bf16, got 'fp8'

func.func @block(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %g = kiln.constant dense<1.0> : tensor<4xf32>
  %w1 = kiln.constant dense<0.5> : tensor<4x8xf32>
  %w2 = kiln.constant dense<0.25> : tensor<8x4xf32>
  %n = kiln.rms_norm %x, %g {epsilon = 1.0e-06 : f32} : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32> loc("/layers.0/norm/Mul")
  %h = kiln.matmul %n, %w1 : (tensor<1x4xf32>, tensor<4x8xf32>) -> tensor<1x8xf32> loc("/layers.0/mlp/MatMul")
  %r = kiln.relu %h : tensor<1x8xf32> loc("/layers.0/mlp/Relu")
  %s = kiln.sigmoid %r : tensor<1x8xf32> loc("/layers.0/mlp/Sigmoid")
  %ge = kiln.gelu %s : tensor<1x8xf32> loc("/layers.0/mlp/Gelu")
  %o = kiln.matmul %ge, %w2 : (tensor<1x8xf32>, tensor<8x4xf32>) -> tensor<1x4xf32> loc("/layers.0/mlp/MatMul_1")
  %y = kiln.add %x, %o : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32> loc("/layers.0/Add")
  return %y : tensor<1x4xf32>
}
