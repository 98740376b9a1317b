// RUN: kiln-opt %s --kiln-cpu-outline-parallel-regions | FileCheck %s
// Each omp.parallel of a function with several moves into an internal
// function of its own: the values it uses from outside become parameters,
// constants are cloned in. Translating OpenMP regions analyses the whole
// enclosing function once per region; in kiln_main, with every kernel of a
// model, that was quadratic in the model's depth.

// CHECK-LABEL: llvm.func @main(
// CHECK-SAME: %[[A:.+]]: !llvm.ptr, %[[N:.+]]: i64)
// CHECK-NOT: omp.parallel
// CHECK: llvm.call @main_parallel_0(%[[A]]) : (!llvm.ptr) -> ()
// CHECK-NEXT: llvm.call @main_parallel_1(%[[A]], %[[N]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT: llvm.return

// CHECK-LABEL: llvm.func internal @main_parallel_1(
// CHECK-SAME: %[[A1:.+]]: !llvm.ptr, %[[N1:.+]]: i64)
// CHECK: %[[C1:.+]] = llvm.mlir.constant(2.000000e+00 : f32) : f32
// CHECK: omp.parallel {
// CHECK: %[[G:.+]] = llvm.getelementptr %[[A1]][%[[N1]]]
// CHECK: llvm.store %[[C1]], %[[G]]
// CHECK: omp.terminator
// CHECK: llvm.return

// CHECK-LABEL: llvm.func internal @main_parallel_0(
// CHECK-SAME: %[[A0:.+]]: !llvm.ptr)
// CHECK: %[[C0:.+]] = llvm.mlir.constant(1.000000e+00 : f32) : f32
// CHECK: omp.parallel {
// CHECK: llvm.store %[[C0]], %[[A0]]
// CHECK: llvm.return
llvm.func @main(%a: !llvm.ptr, %n: i64) {
  %one = llvm.mlir.constant(1.0 : f32) : f32
  %two = llvm.mlir.constant(2.0 : f32) : f32
  omp.parallel {
    llvm.store %one, %a : f32, !llvm.ptr
    omp.terminator
  }
  omp.parallel {
    %g = llvm.getelementptr %a[%n] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %two, %g : f32, !llvm.ptr
    omp.terminator
  }
  llvm.return
}

// A function with one parallel region keeps it.
// CHECK-LABEL: llvm.func @single(
// CHECK: omp.parallel {
// CHECK-NOT: llvm.call
llvm.func @single(%a: !llvm.ptr) {
  %one = llvm.mlir.constant(1.0 : f32) : f32
  omp.parallel {
    llvm.store %one, %a : f32, !llvm.ptr
    omp.terminator
  }
  llvm.return
}
