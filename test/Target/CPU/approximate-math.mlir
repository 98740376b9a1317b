// RUN: kiln-opt %s --kiln-cpu-approximate-math | FileCheck %s

// f32 exp, tanh and erf (scalar or vector) become polynomial arithmetic
// that LLVM can vectorize (no libm call per lane); other functions and
// other element types are left to math-to-llvm / math-to-libm.
// CHECK-LABEL: func.func @approximated
//   CHECK-NOT:   math.exp
//   CHECK-NOT:   math.tanh
//   CHECK-NOT:   math.erf
//       CHECK:   math.fma
//       CHECK:   return
func.func @approximated(%x: f32, %v: vector<8xf32>) -> (f32, vector<8xf32>, f32) {
  %e = math.exp %x : f32
  %t = math.tanh %v : vector<8xf32>
  %r = math.erf %e : f32
  return %e, %t, %r : f32, vector<8xf32>, f32
}

// CHECK-LABEL: func.func @kept
//       CHECK:   math.exp %{{.+}} : f64
//       CHECK:   math.sin %{{.+}} : f32
func.func @kept(%x: f64, %y: f32) -> (f64, f32) {
  %e = math.exp %x : f64
  %s = math.sin %y : f32
  return %e, %s : f64, f32
}
