// REQUIRES: cuda-target
// kiln-cuda-device-memory: whatever would touch a device buffer on the host
// is an error naming the op and its ONNX node, never host code reading
// device memory.
//
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-cuda-device-memory

module attributes {gpu.container_module} {
  func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    // expected-error@unknown {{CUDA target: 'memref.load' from ONNX node '/x/Load' would run on the host with device buffers}}
    %v = memref.load %x[%c0] : memref<4xf32> loc("/x/Load")
    memref.store %v, %y[%c0] : memref<4xf32>
    return
  }
}

// -----

module attributes {gpu.container_module} {
  memref.global "private" constant @c : memref<4xf32> = dense<1.0>
  func.func @main(%y: memref<4xf32>) {
    // expected-error@unknown {{CUDA target: the constant @c (ONNX node 'c') is used on the host, not by a kernel}}
    %g = memref.get_global @c : memref<4xf32> loc("c")
    memref.copy %g, %y : memref<4xf32> to memref<4xf32>
    return
  }
}

// -----

module attributes {gpu.container_module} {
  func.func private @helper(memref<4xf32>)
  func.func @main(%y: memref<4xf32>) {
    // expected-error@unknown {{CUDA target: 'func.call' from ONNX node '/h/Call' would run on the host with device buffers}}
    func.call @helper(%y) : (memref<4xf32>) -> () loc("/h/Call")
    return
  }
}

// -----

module attributes {gpu.container_module} {
  // expected-error @+1 {{CUDA target: @main takes 'memref<?xf32>'; the entry takes dense static buffers only}}
  func.func @main(%y: memref<?xf32>) {
    return
  }
}
