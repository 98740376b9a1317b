// RUN: kiln-opt %s --kiln-cpu-duplicate-empty-tensors | FileCheck %s
// Each use of a tensor.empty gets its own (after CSE merged them), so that
// bufferization does not analyse one alias set that spans the whole model.

// CHECK-LABEL: func.func @shared
// CHECK-COUNT-3: tensor.empty() : tensor<4xf32>
// CHECK-NOT: tensor.empty
// CHECK-COUNT-3: linalg.fill
// CHECK: return
func.func @shared(%a: f32, %b: f32, %c: f32) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.fill ins(%a : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %1 = linalg.fill ins(%b : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %2 = linalg.fill ins(%c : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// A dynamic size is the clone's too.
// CHECK-LABEL: func.func @dynamic
// CHECK-COUNT-2: tensor.empty(%arg0) : tensor<?xf32>
// CHECK-NOT: tensor.empty
func.func @dynamic(%n: index, %a: f32) -> (tensor<?xf32>, tensor<?xf32>) {
  %e = tensor.empty(%n) : tensor<?xf32>
  %0 = linalg.fill ins(%a : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %1 = linalg.fill ins(%a : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  return %0, %1 : tensor<?xf32>, tensor<?xf32>
}
