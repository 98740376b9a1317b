// RUN: kiln-opt %s --split-input-file --kiln-cpu-outline-kernels | FileCheck %s --enable-var-scope
// Each top-level kernel of a function moves into an internal, never-inlined
// function of its own; what it reads from outside becomes parameters
// (constants are cloned in, buffers of run-time shape travel as their base
// buffer and their dynamic offset/sizes/strides). Kernels that are the same
// code (two layers of one shape reading other weights) become one function.

// Two layers: the same matmul + bias kernels on other weights, then a copy.
// The allocations, deallocations and views stay in @main.
// CHECK-LABEL: func.func @layers(
// CHECK-SAME: %[[X:[^:]+]]: memref<4x8xf32>, %[[W1:[^:]+]]: memref<8x8xf32>, %[[W2:[^:]+]]: memref<8x8xf32>, %[[Y:[^:]+]]: memref<4x8xf32>)
// CHECK: %[[H:.+]] = memref.alloc() : memref<4x8xf32>
// CHECK: call @layers_kernel_0(%[[H]]) : (memref<4x8xf32>) -> ()
// CHECK: call @layers_kernel_1(%[[X]], %[[W1]], %[[H]])
// CHECK: %[[H2:.+]] = memref.alloc() : memref<4x8xf32>
// CHECK: call @layers_kernel_0(%[[H2]]) : (memref<4x8xf32>) -> ()
// CHECK: call @layers_kernel_1(%[[H]], %[[W2]], %[[H2]])
// CHECK: call @layers_kernel_4(%[[H2]], %[[Y]])
// CHECK: memref.dealloc %[[H]]
// CHECK: memref.dealloc %[[H2]]
// CHECK-NEXT: return

// The fill: its constant cloned in, the buffer noalias (its allocation is
// no other parameter's).
// CHECK: func.func private @layers_kernel_0(%[[F:[^:]+]]: memref<4x8xf32> {llvm.noalias})
// CHECK-SAME: attributes {llvm.linkage = #llvm.linkage<internal>, llvm.no_inline}
// CHECK: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: linalg.fill ins(%[[Z]] : f32) outs(%[[F]] : memref<4x8xf32>)
// CHECK-NEXT: return
// The matmul: the input of the first layer is @layers' argument (may alias
// anything), the weight too; only the accumulator is noalias.
// CHECK: func.func private @layers_kernel_1(%[[A:[^:]+]]: memref<4x8xf32>, %[[B:[^:]+]]: memref<8x8xf32>, %[[C:[^:]+]]: memref<4x8xf32> {llvm.noalias})
// CHECK: linalg.matmul ins(%[[A]], %[[B]] : memref<4x8xf32>, memref<8x8xf32>) outs(%[[C]] : memref<4x8xf32>)
// The second layer's kernels were the same code: erased (its matmul read a
// buffer of its own, noalias; the first layer's did not: the kept one
// assumes only what both may).
// CHECK-NOT: func.func private @layers_kernel_2(
// CHECK-NOT: func.func private @layers_kernel_3(
// CHECK: func.func private @layers_kernel_4(
// CHECK: memref.copy
func.func @layers(%x: memref<4x8xf32>, %w1: memref<8x8xf32>, %w2: memref<8x8xf32>, %y: memref<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %h = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%zero : f32) outs(%h : memref<4x8xf32>)
  linalg.matmul ins(%x, %w1 : memref<4x8xf32>, memref<8x8xf32>) outs(%h : memref<4x8xf32>)
  %h2 = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%zero : f32) outs(%h2 : memref<4x8xf32>)
  linalg.matmul ins(%h, %w2 : memref<4x8xf32>, memref<8x8xf32>) outs(%h2 : memref<4x8xf32>)
  memref.copy %h2, %y : memref<4x8xf32> to memref<4x8xf32>
  memref.dealloc %h : memref<4x8xf32>
  memref.dealloc %h2 : memref<4x8xf32>
  return
}

// -----

// Run-time sizes: a buffer of dynamic shape (and a strided view of one)
// travels as its base buffer plus the dynamic offset, sizes and strides;
// the kernel function rebuilds it with the same type. Scalars are
// parameters as they are.
// CHECK-LABEL: func.func @dynamic(
// CHECK-SAME: %[[IN:[^:]+]]: memref<?x16xf32>, %[[OUT:[^:]+]]: memref<?x16xf32>, %[[N:[^:]+]]: index, %[[S:[^:]+]]: f32)
// CHECK: %[[V:.+]] = memref.subview %[[OUT]]
// CHECK: %[[BASE:[^,]+]], %{{[^,]+}}, %[[SIZES:[^:]+]]:2, %{{[^:]+}}:2 = memref.extract_strided_metadata %[[IN]]
// CHECK: %[[VBASE:[^,]+]], %[[VOFF:[^,]+]], %[[VSIZES:[^:]+]]:2, %{{[^:]+}}:2 = memref.extract_strided_metadata %[[V]]
// CHECK: call @dynamic_kernel_0(%[[N]], %[[BASE]], %[[SIZES]]#0, %[[S]], %[[VBASE]], %[[VOFF]], %[[VSIZES]]#0)
// CHECK-SAME: : (index, memref<f32>, index, f32, memref<f32>, index, index) -> ()
// CHECK: call @dynamic_kernel_1(%[[S]], %{{.+}}, %{{.+}}) : (f32, memref<f32>, index) -> ()
// CHECK: func.func private @dynamic_kernel_0(%[[UB:[^:]+]]: index, %[[B0:[^:]+]]: memref<f32>, %[[D0:[^:]+]]: index, %[[SC:[^:]+]]: f32, %[[B1:[^:]+]]: memref<f32>, %[[O1:[^:]+]]: index, %[[D1:[^:]+]]: index)
// CHECK: %[[R0:.+]] = memref.reinterpret_cast %[[B0]] to offset: [0], sizes: [%[[D0]], 16], strides: [16, 1] : memref<f32> to memref<?x16xf32>
// CHECK: %[[R1:.+]] = memref.reinterpret_cast %[[B1]] to offset: [%[[O1]]], sizes: [%[[D1]], 8], strides: [16, 1] : memref<f32> to memref<?x8xf32, strided<[16, 1], offset: ?>>
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[UB]]
// CHECK: memref.load %[[R0]]
// CHECK: arith.mulf %{{.+}}, %[[SC]]
// CHECK: memref.store %{{.+}}, %[[R1]]
func.func @dynamic(%in: memref<?x16xf32>, %out: memref<?x16xf32>, %n: index, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %d = memref.dim %in, %c0 : memref<?x16xf32>
  %v = memref.subview %out[%n, 8] [%d, 8] [1, 1] : memref<?x16xf32> to memref<?x8xf32, strided<[16, 1], offset: ?>>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %a = memref.load %in[%i, %j] : memref<?x16xf32>
      %b = arith.mulf %a, %s : f32
      memref.store %b, %v[%i, %j] : memref<?x8xf32, strided<[16, 1], offset: ?>>
    }
  }
  linalg.fill ins(%s : f32) outs(%in : memref<?x16xf32>)
  return
}

// -----

// One kernel alone stays where it is; so does an op with results (a loop
// carrying a value).
// CHECK-LABEL: func.func @single(
// CHECK: linalg.fill
// CHECK-NOT: call
// CHECK-LABEL: func.func @carried(
// CHECK: scf.for {{.*}} iter_args
// CHECK: call @carried_kernel_0(
// CHECK: call @carried_kernel_1(
func.func @single(%a: memref<8xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%a : memref<8xf32>)
  return
}

func.func @carried(%a: memref<8xf32>, %b: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> f32 {
    %x = memref.load %a[%i] : memref<8xf32>
    %y = arith.addf %acc, %x : f32
    scf.yield %y : f32
  }
  linalg.fill ins(%sum : f32) outs(%b : memref<8xf32>)
  linalg.fill ins(%zero : f32) outs(%a : memref<8xf32>)
  return %sum : f32
}
