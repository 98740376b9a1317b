// kiln-shard-tensor-parallel on models with ONNX's multi-device
// annotations (IR version 11), as the importer records them
// (kiln.device_configurations, kiln.sharding_annotations; test/Import/
// sharding-annotations.test makes them from an ONNX file).
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-shard-tensor-parallel="ranks=2 rank=1" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-shard-tensor-parallel="ranks=2 rank=1" --kiln-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS
// Without the annotations Kiln infers the split: both MLPs of the first
// model are split, and the wrong annotations of the later ones do not
// matter.
// RUN: kiln-opt %s -split-input-file --kiln-shard-tensor-parallel="ranks=2 rank=1 annotations=false" 2>&1 | FileCheck %s --check-prefix=INFERRED

// Counted over the file: the second MLP's two matmuls of the first model,
// gate/up/down of the second model and its LM head kept whole.
// STATS: kiln-shard-tensor-parallel
// STATS-DAG: (annotated-matmuls) 6
// STATS-DAG: (column-parallel) 3
// STATS-DAG: (row-parallel) 2

// Two MLPs with residuals. The annotations split only the second one
// (up2 by columns, down2 by rows): the first stays whole on every rank,
// although Kiln alone would split it too (INFERRED).
//       CHECK: module attributes {{.*}}kiln.tensor_parallel = {configuration = "tp2", plan = "annotations", rank = 1 : i64, ranks = 2 : i64}
// CHECK-LABEL: func.func @main
//       CHECK: kiln.matmul %{{.+}}, %{{.+}} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
//       CHECK: kiln.matmul %{{.+}}, %{{.+}} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
//   CHECK-NOT: kiln.all_reduce
//       CHECK: %[[H:.+]] = kiln.add
//       CHECK: kiln.matmul %[[H]], %{{.+}} : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
//       CHECK: %[[D:.+]] = kiln.matmul %{{.+}}, %{{.+}} : (tensor<2x2xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
//       CHECK: %[[S:.+]] = kiln.all_reduce %[[D]]
//       CHECK: kiln.add %[[S]], %[[H]]
//       INFERRED: module attributes {{.*}}kiln.tensor_parallel = {plan = "inferred", rank = 1 : i64, ranks = 2 : i64}
// INFERRED-LABEL: func.func @main
//       INFERRED: kiln.matmul %{{.+}}, %{{.+}} : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
//       INFERRED: kiln.all_reduce
//       INFERRED: kiln.matmul %{{.+}}, %{{.+}} : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
//       INFERRED: kiln.all_reduce
module attributes {
  kiln.device_configurations = [{name = "tp4", num_devices = 4 : i64}, {name = "tp2", num_devices = 2 : i64}],
  kiln.sharding_annotations = {
    up2 = [{configuration = "tp4", weight = "column", tensors = [{tensor = "w3", input = 1 : i64, axis = 1 : i64, shards = 4 : i64}]},
           {configuration = "tp2", weight = "column", tensors = [{tensor = "h", input = 0 : i64}, {tensor = "w3", input = 1 : i64, axis = 1 : i64, shards = 2 : i64}, {tensor = "u2", output = 0 : i64, axis = -1 : i64, shards = 2 : i64}]}],
    down2 = [{configuration = "tp2", weight = "row", tensors = [{tensor = "w4", input = 1 : i64, axis = 0 : i64, shards = 2 : i64}]}]}} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w1 = kiln.constant dense<1.0> : tensor<4x4xf32>
  %w2 = kiln.constant dense<2.0> : tensor<4x4xf32>
  %w3 = kiln.constant dense<3.0> : tensor<4x4xf32>
  %w4 = kiln.constant dense<4.0> : tensor<4x4xf32>
  %u1 = kiln.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("up1")
  %r1 = kiln.relu %u1 : tensor<2x4xf32>
  %d1 = kiln.matmul %r1, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("down1")
  %h = kiln.add %d1, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %u2 = kiln.matmul %h, %w3 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("up2")
  %r2 = kiln.relu %u2 : tensor<2x4xf32>
  %d2 = kiln.matmul %r2, %w4 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("down2")
  %y = kiln.add %d2, %h : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
}

// -----

// A SwiGLU MLP and an LM head, every matmul annotated (the LM head
// replicated): the split Kiln would infer, now as the model says; the
// annotation of the row-parallel down projection sits on the ONNX MatMul
// that kiln.fused_matmul's location keeps beside the Add's.
//       CHECK: module attributes {{.*}}kiln.tensor_parallel = {configuration = "mesh", plan = "annotations"
// CHECK-LABEL: func.func @main
//       CHECK: kiln.matmul %{{.+}}, %{{.+}} : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
//       CHECK: kiln.matmul %{{.+}}, %{{.+}} : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
//       CHECK: kiln.fused_matmul {{.*}}: (tensor<2x2xf32>, tensor<2x4xf32>, none, none) -> tensor<2x4xf32>
//       CHECK: kiln.all_reduce
//       CHECK: kiln.matmul %{{.+}}, %{{.+}} : (tensor<2x4xf32>, tensor<4x6xf32>) -> tensor<2x6xf32>
module attributes {
  kiln.device_configurations = [{name = "mesh", num_devices = 2 : i64, devices = ["gpu0", "gpu1"]}],
  kiln.sharding_annotations = {
    gate = [{configuration = "mesh", weight = "column", tensors = [{tensor = "wg", input = 1 : i64, axis = -1 : i64, shards = 2 : i64}]}],
    up = [{configuration = "mesh", weight = "column", tensors = [{tensor = "wu", input = 1 : i64, axis = 1 : i64, shards = 2 : i64}]}],
    down = [{configuration = "mesh", weight = "row", tensors = [{tensor = "wd", input = 1 : i64, axis = 0 : i64, shards = 2 : i64}]}],
    head = [{configuration = "mesh", weight = "replicated", tensors = [{tensor = "wh", input = 1 : i64}]}]}} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x6xf32> {
  %none = kiln.none
  %wg = kiln.constant dense<1.0> : tensor<4x4xf32>
  %wu = kiln.constant dense<2.0> : tensor<4x4xf32>
  %wd = kiln.constant dense<3.0> : tensor<4x4xf32>
  %wh = kiln.constant dense<0.5> : tensor<4x6xf32>
  %g = kiln.matmul %x, %wg : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("gate")
  %u = kiln.matmul %x, %wu : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("up")
  %s = kiln.swiglu %g, %u : tensor<2x4xf32>
  %d = kiln.fused_matmul %s, %wd, %none, %x : (tensor<2x4xf32>, tensor<4x4xf32>, none, tensor<2x4xf32>) -> tensor<2x4xf32> loc(fused["down", "residual"])
  %l = kiln.matmul %d, %wh : (tensor<2x4xf32>, tensor<4x6xf32>) -> tensor<2x6xf32> loc("head")
  return %l : tensor<2x6xf32>
}
}

