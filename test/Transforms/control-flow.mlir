// Graph passes on If/Loop regions: ops inside a region may use values
// defined around it; the passes fold, deduplicate, erase and fuse inside the
// regions without moving an op out of (or a region value out of) its region.
// RUN: kiln-opt %s --kiln-constant-fold | FileCheck %s --check-prefix=FOLD
// RUN: kiln-opt %s --cse | FileCheck %s --check-prefix=CSE
// RUN: kiln-opt %s --kiln-dce | FileCheck %s --check-prefix=DCE
// RUN: kiln-opt %s --kiln-fuse-epilogues | FileCheck %s --check-prefix=FUSE
// RUN: kiln-opt %s --kiln-hoist-weights=min-bytes=64 | FileCheck %s --check-prefix=HOIST
// RUN: kiln-opt %s --kiln-convert-precision=precision=fp16 | FileCheck %s --check-prefix=HALF

// Folding an op of a branch whose operands are outer constants: the
// constant is materialized at the function's start, which the branch sees.
// FOLD-LABEL: func.func @main(
//       FOLD:   %[[FIVE:.+]] = kiln.constant dense<5.000000e+00> : tensor<8xf32>
//       FOLD:   kiln.if
//  FOLD-NEXT:     %[[R:.+]] = kiln.relu
//  FOLD-NEXT:     %[[Y:.+]] = kiln.add %[[R]], %[[FIVE]]
//  FOLD-NEXT:     kiln.yield %[[Y]]

// With CSE, the branch's relu of x is the outer one (which dominates it); the
// loop's ops stay in the loop.
// CSE-LABEL: func.func @main(
//       CSE:   %[[OUTER:.+]] = kiln.relu %[[X:[^ ]+]] : tensor<4x8xf32>
//       CSE:   kiln.if
//   CSE-NOT:     kiln.relu
//       CSE:     kiln.add %[[OUTER]], %{{.+}} : (tensor<4x8xf32>, tensor<8xf32>)
//       CSE:   kiln.loop
//       CSE:     kiln.matmul
//       CSE:     kiln.relu

// Dead-code elimination: the unused op of a branch, the unused constant of a body and the
// loop whose result is unused go; the terminators stay.
// DCE-LABEL: func.func @main(
//   DCE-NOT:   kiln.neg
//       DCE:   kiln.yield %{{.+}} : tensor<4x8xf32>
//       DCE:   kiln.yield %{{.+}} : tensor<4x8xf32>
//       DCE:   kiln.loop
//   DCE-NOT:     kiln.constant dense<1.000000e+00> : tensor<8x8xf32>
//       DCE:     kiln.matmul
//   DCE-NOT:   kiln.loop
//       DCE:   return

// Epilogue fusion inside a loop body, reading the outer bias.
// FUSE-LABEL: func.func @main(
//       FUSE:   %[[TWO:.+]] = kiln.constant dense<2.000000e+00> : tensor<8xf32>
//       FUSE:   kiln.loop
//       FUSE:   ^bb0(%{{.+}}: tensor<i64>, %[[GO:.+]]: tensor<i1>, %[[ACC:.+]]: tensor<4x8xf32>):
//       FUSE:     %[[F:.+]] = kiln.fused_matmul %[[ACC]], %{{.+}}, %[[TWO]], %{{.+}} {activation = "relu"}
//  FUSE-NEXT:     kiln.yield %[[GO]], %[[F]]

// A large constant of a loop body becomes a weight argument of @main; the
// body reads it.
// HOIST-LABEL: func.func @main(
//  HOIST-SAME:     %[[BIG:[^:]+]]: tensor<8x8xf32> {kiln.weight = "big"
//       HOIST:   kiln.loop
//   HOIST-NOT:     kiln.constant dense<5.000000e-01>
//       HOIST:     kiln.matmul %{{.+}}, %[[BIG]]

// Mixed precision converts @main's own block; the regions keep float32 and
// read float32 values (a converted outer value comes back through a cast).
// HALF-LABEL: func.func @main(
//       HALF:   %[[H:.+]] = kiln.relu %{{.+}} : tensor<4x8xf16>
//       HALF:   kiln.if
//       HALF:     kiln.add %{{.+}}, %{{.+}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
//       HALF:   kiln.loop
//       HALF:     kiln.matmul %{{.+}}, %{{.+}} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
func.func @main(%c: tensor<i1>, %m: tensor<i64>, %x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %two = kiln.constant dense<2.0> : tensor<8xf32>
  %three = kiln.constant dense<3.0> : tensor<8xf32>
  %outer = kiln.relu %x : tensor<4x8xf32>
  %r = kiln.if %c : tensor<i1> -> (tensor<4x8xf32>) {
    %s = kiln.add %two, %three : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %again = kiln.relu %x : tensor<4x8xf32>
    %y = kiln.add %again, %s : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %dead = kiln.neg %x : tensor<4x8xf32>
    kiln.yield %y : tensor<4x8xf32>
  } else {
    kiln.yield %x : tensor<4x8xf32>
  }
  %none = kiln.none
  %l = kiln.loop %m, %none, %x : (tensor<i64>, none, tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %acc: tensor<4x8xf32>):
    %unused = kiln.constant dense<1.0> : tensor<8x8xf32>
    %big = kiln.constant dense<[[0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0], [0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0], [0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0], [0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0], [0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0], [0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0], [0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0], [0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0]]> : tensor<8x8xf32> loc("big")
    %mm = kiln.matmul %acc, %big : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %b = kiln.add %mm, %two : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %act = kiln.relu %b : tensor<4x8xf32>
    kiln.yield %go, %act : tensor<i1>, tensor<4x8xf32>
  }
  %gone = kiln.loop %m, %none, %x : (tensor<i64>, none, tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %acc: tensor<4x8xf32>):
    kiln.yield %go, %acc : tensor<i1>, tensor<4x8xf32>
  }
  %o = kiln.add %r, %outer : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %o, %l : tensor<4x8xf32>, tensor<4x8xf32>
}
