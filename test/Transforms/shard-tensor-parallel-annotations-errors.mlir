// kiln-shard-tensor-parallel's errors on ONNX sharding annotations it
// cannot follow, each naming the ONNX node (the ops' locations are the
// node names, as the importer gives them).
// RUN: not kiln-opt %s -split-input-file --kiln-shard-tensor-parallel="ranks=2 rank=1" -o /dev/null 2>&1 | FileCheck %s
// Ignoring the annotations, Kiln splits each of these models:
// RUN: kiln-opt %s -split-input-file --kiln-shard-tensor-parallel="ranks=2 rank=1 annotations=false" -o /dev/null




// CHECK: error: kiln-shard-tensor-parallel: the model's ONNX sharding annotations are for 'tp4' (4 devices), 'tp8' (8 devices), not 2 ranks (--tensor-parallel-plan=inferred splits it as Kiln infers from the graph)
// CHECK: error: {{.*}}kiln-shard-tensor-parallel: ONNX node 'up' splits 'w1' in 4 shards, but configuration 'tp2' has 2 devices
// CHECK: error: {{.*}}kiln-shard-tensor-parallel: ONNX node 'other' is annotated row-parallel, but the annotated column-parallel matmuls make it whole on every rank: no column-parallel matmul's split reaches its contracted dim
// CHECK: error: {{.*}}kiln-shard-tensor-parallel: ONNX node 'down' is annotated whole on every rank, but the annotated column-parallel matmuls make it row-parallel: the split of a column-parallel matmul reaches its contracted dim
// CHECK: error: {{.*}}kiln-shard-tensor-parallel: ONNX node 'head' is annotated column-parallel, but the split of its columns reaches no matmul that contracts over them
// CHECK: error: {{.*}}kiln-shard-tensor-parallel: ONNX node 'up_b' is annotated column-parallel, but the annotated column-parallel matmuls make it whole on every rank: Kiln cannot split its weight (a constant [K, N] with N divisible by the ranks)
// CHECK: error: {{.*}}kiln-shard-tensor-parallel: ONNX node 'up' is in pipeline stage 1, node 'down' in stage 0: pipeline parallelism is not supported (Kiln splits tensors over the ranks)
// CHECK: error: {{.*}}kiln-shard-tensor-parallel: ONNX node 'gone' has a sharding annotation for its weight, but no matmul of the compiled graph comes from it

// Annotations for 4 devices only, compiled for 2 ranks.
module attributes {
  kiln.device_configurations = [{name = "tp4", num_devices = 4 : i64}, {name = "tp8", num_devices = 8 : i64}],
  kiln.sharding_annotations = {
    up = [{configuration = "tp4", weight = "column", tensors = [{tensor = "w1", input = 1 : i64, axis = 1 : i64, shards = 4 : i64}]}]}} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w1 = kiln.constant dense<1.0> : tensor<4x4xf32>
  %w2 = kiln.constant dense<2.0> : tensor<4x4xf32>
  %u = kiln.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("up")
  %d = kiln.matmul %u, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("down")
  return %d : tensor<2x4xf32>
}
}

// -----

// A shard count that is not the configuration's device count.
module attributes {
  kiln.device_configurations = [{name = "tp2", num_devices = 2 : i64}],
  kiln.sharding_annotations = {
    up = [{configuration = "tp2", weight = "column", tensors = [{tensor = "w1", input = 1 : i64, axis = 1 : i64, shards = 4 : i64}]}]}} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w1 = kiln.constant dense<1.0> : tensor<4x4xf32>
  %w2 = kiln.constant dense<2.0> : tensor<4x4xf32>
  %u = kiln.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("up")
  %d = kiln.matmul %u, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("down")
  return %d : tensor<2x4xf32>
}
}

// -----

// Row-parallel without a column-parallel matmul before it.
module attributes {
  kiln.device_configurations = [{name = "tp2", num_devices = 2 : i64}],
  kiln.sharding_annotations = {
    up = [{configuration = "tp2", weight = "column", tensors = [{tensor = "w1", input = 1 : i64, axis = 1 : i64, shards = 2 : i64}]}],
    other = [{configuration = "tp2", weight = "row", tensors = [{tensor = "w3", input = 1 : i64, axis = 0 : i64, shards = 2 : i64}]}]}} {
func.func @main(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %w1 = kiln.constant dense<1.0> : tensor<4x4xf32>
  %w2 = kiln.constant dense<2.0> : tensor<4x4xf32>
  %w3 = kiln.constant dense<3.0> : tensor<4x4xf32>
  %u = kiln.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("up")
  %d = kiln.matmul %u, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("down")
  %o = kiln.matmul %x, %w3 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("other")
  return %d, %o : tensor<2x4xf32>, tensor<2x4xf32>
}
}

// -----

// Replicated, but reached by the split of a column-parallel matmul.
module attributes {
  kiln.device_configurations = [{name = "tp2", num_devices = 2 : i64}],
  kiln.sharding_annotations = {
    up = [{configuration = "tp2", weight = "column", tensors = [{tensor = "w1", input = 1 : i64, axis = 1 : i64, shards = 2 : i64}]}],
    down = [{configuration = "tp2", weight = "replicated", tensors = [{tensor = "w2", input = 1 : i64}]}]}} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w1 = kiln.constant dense<1.0> : tensor<4x4xf32>
  %w2 = kiln.constant dense<2.0> : tensor<4x4xf32>
  %u = kiln.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("up")
  %d = kiln.matmul %u, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("down")
  return %d : tensor<2x4xf32>
}
}

// -----

// Column-parallel, but nothing contracts over its columns (the LM head
// after an MLP that is not annotated).
module attributes {
  kiln.device_configurations = [{name = "tp2", num_devices = 2 : i64}],
  kiln.sharding_annotations = {
    head = [{configuration = "tp2", weight = "column", tensors = [{tensor = "wh", input = 1 : i64, axis = 1 : i64, shards = 2 : i64}]}]}} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x6xf32> {
  %w1 = kiln.constant dense<1.0> : tensor<4x4xf32>
  %w2 = kiln.constant dense<2.0> : tensor<4x4xf32>
  %wh = kiln.constant dense<0.5> : tensor<4x6xf32>
  %u = kiln.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("up")
  %d = kiln.matmul %u, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("down")
  %l = kiln.matmul %d, %wh : (tensor<2x4xf32>, tensor<4x6xf32>) -> tensor<2x6xf32> loc("head")
  return %l : tensor<2x6xf32>
}
}

// -----

// Column-parallel on a weight Kiln cannot split (5 columns, 2 ranks).
module attributes {
  kiln.device_configurations = [{name = "tp2", num_devices = 2 : i64}],
  kiln.sharding_annotations = {
    up = [{configuration = "tp2", weight = "column", tensors = [{tensor = "w1", input = 1 : i64, axis = 1 : i64, shards = 2 : i64}]}],
    up_b = [{configuration = "tp2", weight = "column", tensors = [{tensor = "w3", input = 1 : i64, axis = 1 : i64, shards = 2 : i64}]}]}} {
func.func @main(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x5xf32>) {
  %w1 = kiln.constant dense<1.0> : tensor<4x4xf32>
  %w2 = kiln.constant dense<2.0> : tensor<4x4xf32>
  %w3 = kiln.constant dense<3.0> : tensor<4x5xf32>
  %u = kiln.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("up")
  %d = kiln.matmul %u, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("down")
  %b = kiln.matmul %x, %w3 : (tensor<2x4xf32>, tensor<4x5xf32>) -> tensor<2x5xf32> loc("up_b")
  return %d, %b : tensor<2x4xf32>, tensor<2x5xf32>
}
}

// -----

// Pipeline stages.
module attributes {
  kiln.device_configurations = [{name = "tp2", num_devices = 2 : i64}],
  kiln.sharding_annotations = {
    down = [{configuration = "tp2", pipeline_stage = 0 : i64, tensors = []}],
    up = [{configuration = "tp2", pipeline_stage = 1 : i64, tensors = []}]}} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w1 = kiln.constant dense<1.0> : tensor<4x4xf32>
  %w2 = kiln.constant dense<2.0> : tensor<4x4xf32>
  %u = kiln.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("up")
  %d = kiln.matmul %u, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("down")
  return %d : tensor<2x4xf32>
}
}

// -----

// An annotated node that no matmul comes from.
module attributes {
  kiln.device_configurations = [{name = "tp2", num_devices = 2 : i64}],
  kiln.sharding_annotations = {
    up = [{configuration = "tp2", weight = "column", tensors = [{tensor = "w1", input = 1 : i64, axis = 1 : i64, shards = 2 : i64}]}],
    gone = [{configuration = "tp2", weight = "column", tensors = [{tensor = "w9", input = 1 : i64, axis = 1 : i64, shards = 2 : i64}]}]}} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w1 = kiln.constant dense<1.0> : tensor<4x4xf32>
  %w2 = kiln.constant dense<2.0> : tensor<4x4xf32>
  %u = kiln.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("up")
  %d = kiln.matmul %u, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("down")
  return %d : tensor<2x4xf32>
}
}
