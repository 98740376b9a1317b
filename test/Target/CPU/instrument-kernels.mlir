// kiln-cpu-instrument-kernels: every top-level kernel of @main between
// kiln_abi_prof_begin/end(id), allocations and deallocation conditionals
// left alone, and the kernel table (names, categories, ONNX nodes) taken
// from the locations that convert-kiln-to-linalg and kiln-decompose-fused
// tag with their origin (kiln/Transforms/Origin.h).
//
// RUN: kiln-opt %s --kiln-cpu-instrument-kernels | FileCheck %s
// RUN: kiln-opt %s --kiln-cpu-instrument-kernels --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

#map = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
module {
  func.func private @kiln_abi_sgemm(index, index, index)

  func.func @main(%x: memref<4x8xf32>, %w: memref<8x8xf32>,
                  %out: memref<4x8xf32>, %q: memref<4x8xi8>) {
    %cst = arith.constant 0.0 : f32
    %c1 = arith.constant 1 : index
    %a = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
    linalg.fill ins(%cst : f32) outs(%a : memref<4x8xf32>) loc(#mm)
    linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x8xf32>)
                  outs(%a : memref<4x8xf32>) loc(#mm)
    // add+relu fused: both nodes, elementwise.
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%a : memref<4x8xf32>) outs(%out : memref<4x8xf32>) {
    ^bb0(%i: f32, %o: f32):
      %s = arith.addf %i, %i : f32 loc(#add)
      %r = arith.maximumf %s, %cst : f32 loc(#relu)
      linalg.yield %r : f32
    } loc(#addrelu)
    // A dequantize with a fused add: quantize ranks above elementwise.
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%q : memref<4x8xi8>) outs(%out : memref<4x8xf32>) {
    ^bb0(%i: i8, %o: f32):
      %f = arith.sitofp %i : i8 to f32
      %s = arith.addf %f, %o : f32
      linalg.yield %s : f32
    } loc(#dqadd)
    // A matmul that an attention decomposed into.
    linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x8xf32>)
                  outs(%a : memref<4x8xf32>) loc(#attnmm)
    // A softmax's reduction.
    %m = memref.alloc() : memref<4xf32>
    linalg.generic {indexing_maps = [#map, #red], iterator_types = ["parallel", "reduction"]}
        ins(%a : memref<4x8xf32>) outs(%m : memref<4xf32>) {
    ^bb0(%i: f32, %o: f32):
      %mx = arith.maximumf %i, %o : f32
      linalg.yield %mx : f32
    } loc(#softmax)
    // No origin at all: named by the op, filed by its shape.
    linalg.generic {indexing_maps = [#map, #red], iterator_types = ["parallel", "reduction"]}
        ins(%a : memref<4x8xf32>) outs(%m : memref<4xf32>) {
    ^bb0(%i: f32, %o: f32):
      %s = arith.addf %i, %o : f32
      linalg.yield %s : f32
    }
    memref.copy %a, %out : memref<4x8xf32> to memref<4x8xf32> loc(#concat)
    // A fused matmul's epilogue on its own is elementwise; an rms_norm's
    // pieces are a reduction's.
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%a : memref<4x8xf32>) outs(%out : memref<4x8xf32>) {
    ^bb0(%i: f32, %o: f32):
      %s = arith.addf %i, %o : f32
      linalg.yield %s : f32
    } loc(#epilogue)
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%a : memref<4x8xf32>) outs(%out : memref<4x8xf32>) {
    ^bb0(%i: f32, %o: f32):
      %s = arith.mulf %i, %o : f32
      linalg.yield %s : f32
    } loc(#normmul)
    func.call @kiln_abi_sgemm(%c1, %c1, %c1) : (index, index, index) -> () loc(#mm2)
    // A tiled kernel: its views, constants and accumulator fill may carry
    // another kernel's location (CSE shares them); they do not name it.
    %c0 = arith.constant 0 : index
    scf.for %i = %c0 to %c1 step %c1 {
      %zero = arith.constant 0.0 : f32 loc(#mm)
      %sv = memref.subview %a[0, 0] [4, 8] [1, 1] : memref<4x8xf32> to memref<4x8xf32, strided<[8, 1]>> loc(#mm)
      linalg.fill ins(%zero : f32) outs(%sv : memref<4x8xf32, strided<[8, 1]>>) loc(#mm)
      linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x8xf32>)
                    outs(%sv : memref<4x8xf32, strided<[8, 1]>>) loc(#tiled)
    } loc(#tiled)
    %cond = arith.constant true
    scf.if %cond {
      memref.dealloc %m : memref<4xf32>
    }
    memref.dealloc %a : memref<4x8xf32>
    return
  }
}

#mm = loc(fused<"kiln.matmul">["fc1/MatMul"])
#mm2 = loc(fused<"kiln.matmul">["fc2/MatMul"])
#add = loc(fused<"kiln.add">["fc1/Add"])
#relu = loc(fused<"kiln.relu">["Relu_1"])
// "x" names a graph input (the importer's NameLoc on it), not a node.
#addrelu = loc(fused[#add, #relu, "x"])
#dqadd = loc(fused[fused<"kiln.dequantize_linear">["dq"], fused<"kiln.add">["dq_add"]])
#attnmm = loc(fused<"kiln.matmul">[fused<"kiln.attention">["attn/SDPA"]])
#softmax = loc(fused<"kiln.softmax">["attn_out/Softmax"])
#concat = loc(fused<"kiln.concat">["cat"])
#tiled = loc(fused<"kiln.matmul">["fc4/MatMul"])
#epilogue = loc(fused<"kiln.add">[fused<"kiln.fused_matmul">["fc3/Gemm"]])
#normmul = loc(fused<"kiln.mul">[fused<"kiln.rms_norm">["norm"]])

// CHECK: module attributes {kiln.kernels = [
// CHECK-SAME: {category = "copy", id = 0 : i32, name = "matmul.fill_0", onnx_nodes = ["fc1/MatMul"]},
// CHECK-SAME: {category = "gemm", id = 1 : i32, name = "matmul_0", onnx_nodes = ["fc1/MatMul"]},
// CHECK-SAME: {category = "elementwise", id = 2 : i32, name = "add+relu_0", onnx_nodes = ["fc1/Add", "Relu_1"]},
// CHECK-SAME: {category = "quantize", id = 3 : i32, name = "dequantize_linear+add_0", onnx_nodes = ["dq", "dq_add"]},
// CHECK-SAME: {category = "attention", id = 4 : i32, name = "attention/matmul_0", onnx_nodes = ["attn/SDPA"]},
// CHECK-SAME: {category = "reduction", id = 5 : i32, name = "softmax_0", onnx_nodes = ["attn_out/Softmax"]},
// CHECK-SAME: {category = "reduction", id = 6 : i32, name = "generic_0", onnx_nodes = []},
// CHECK-SAME: {category = "copy", id = 7 : i32, name = "concat.copy_0", onnx_nodes = ["cat"]},
// CHECK-SAME: {category = "elementwise", id = 8 : i32, name = "fused_matmul/add_0", onnx_nodes = ["fc3/Gemm"]},
// CHECK-SAME: {category = "reduction", id = 9 : i32, name = "rms_norm/mul_0", onnx_nodes = ["norm"]},
// CHECK-SAME: {category = "gemm", id = 10 : i32, name = "matmul_1", onnx_nodes = ["fc2/MatMul"]},
// CHECK-SAME: {category = "gemm", id = 11 : i32, name = "matmul_2", onnx_nodes = ["fc4/MatMul"]}]}
// CHECK-DAG: func.func private @kiln_abi_prof_begin(i32)
// CHECK-DAG: func.func private @kiln_abi_prof_end(i32)
// CHECK-LABEL: func.func @main
// CHECK: memref.alloc()
// CHECK-NOT: call @kiln_abi_prof
// CHECK: %[[ID0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: call @kiln_abi_prof_begin(%[[ID0]])
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: call @kiln_abi_prof_end(%[[ID0]])
// CHECK: %[[ID1:.*]] = arith.constant 1 : i32
// CHECK-NEXT: call @kiln_abi_prof_begin(%[[ID1]])
// CHECK-NEXT: linalg.matmul
// CHECK-NEXT: call @kiln_abi_prof_end(%[[ID1]])
// CHECK: call @kiln_abi_prof_begin
// CHECK-NEXT: linalg.generic
// CHECK: call @kiln_abi_prof_end
// CHECK: %[[ID10:.*]] = arith.constant 10 : i32
// CHECK-NEXT: call @kiln_abi_prof_begin(%[[ID10]])
// CHECK-NEXT: call @kiln_abi_sgemm
// CHECK-NEXT: call @kiln_abi_prof_end(%[[ID10]])
// CHECK: call @kiln_abi_prof_begin
// CHECK-NEXT: scf.for
// CHECK: call @kiln_abi_prof_end
// CHECK-NOT: call @kiln_abi_prof
// CHECK: scf.if
// CHECK: memref.dealloc
// CHECK-NOT: call @kiln_abi_prof
// CHECK: return

// The hooks carry the kernel's location.
// LOC: call @kiln_abi_prof_begin({{.*}}) : (i32) -> () loc(#[[MM:loc[0-9]*]])
// LOC-NEXT: linalg.fill {{.*}} loc(#[[MM]])
