//===- KilnControlFlowOps.td - If, Loop and Scan ---------------*- tablegen -*-===//
//
// ONNX's control flow: the subgraphs of If, Loop and Scan are regions of
// one block ending in kiln.yield. A region may use any value defined before
// its op (ONNX's outer-scope names): the ops are not IsolatedFromAbove.
// Values named in the subgraph (its inputs: Loop's iteration number,
// condition and carried values, Scan's state and scan slices) are the
// block's arguments.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONTROL_FLOW_OPS_TD
#define KILN_CONTROL_FLOW_OPS_TD

include "kiln/Dialect/KilnBase.td"

def Kiln_YieldOp : Kiln_Op<"yield", [Pure, Terminator,
    ParentOneOf<["IfOp", "LoopOp", "ScanOp"]>]> {
  let summary = "The outputs of a subgraph (the end of an If, Loop or Scan region)";
  let description = [{
    Ends the region of a `kiln.if`, `kiln.loop` or `kiln.scan`: its operands
    are the subgraph's outputs, in ONNX order. What they must be is the
    parent op's business (its verifier says).

    ```mlir
    kiln.yield %a, %b : tensor<2xf32>, tensor<i1>
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

def Kiln_IfOp : Kiln_Op<"if", [RecursiveMemoryEffects, RecursivelySpeculatable,
    NoRegionArguments, Kiln_InferTypes]> {
  let summary = "ONNX If: one of two subgraphs, chosen by a run-time condition";
  let description = [{
    Runs `then_branch` when the single element of `cond` is true, else
    `else_branch`, and returns the outputs of the region that ran. Both
    regions have no arguments, use values defined outside (ONNX's
    outer-scope names) and end in a `kiln.yield` of as many values as the op
    has results.

    The result types are the branches' common types: same element type and
    rank in both branches (ONNX allows ranks to differ; Kiln does not), a
    dim that differs between the branches is dynamic. As for every kiln op,
    a declared result type may be more static than that (a model's
    declaration).

    ```mlir
    %r = kiln.if %c : tensor<i1> -> (tensor<?xf32>) {
      %a = kiln.relu %x : tensor<4xf32>
      kiln.yield %a : tensor<4xf32>
    } else {
      kiln.yield %y : tensor<3xf32>
    }
    ```
  }];
  let arguments = (ins Kiln_BoolTensor:$cond);
  let results = (outs Variadic<Kiln_Tensor>:$outputs);
  let regions = (region SizedRegion<1>:$then_branch, SizedRegion<1>:$else_branch);
  let assemblyFormat = [{
    $cond `:` type($cond) `->` `(` type($outputs) `)` $then_branch `else`
    $else_branch attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    YieldOp thenYield();
    YieldOp elseYield();
  }];
}

def Kiln_LoopOp : Kiln_Op<"loop", [RecursiveMemoryEffects, Kiln_InferTypes]> {
  let summary = "ONNX Loop: a subgraph run while a trip count and a condition allow";
  let description = [{
    ONNX Loop. With `M` the trip count (`max_trip_count`, a scalar `i64`;
    `none`: unbounded) and `cond` the condition (a one-element `i1`;
    `none`: no condition), it runs

    ```
    v = v_initial; keep_going = cond (true when none)
    for (i = 0; (M is none || i < M) && keep_going; ++i) {
      cond_out, v, scan_outputs = body(i, keep_going, v)
      if (cond is not none) keep_going = cond_out
      append scan_outputs to the op's scan results
    }
    ```

    The body's block has arguments `(iteration_num: tensor<i64>,
    condition: tensor<i1>, carried...)`: as many carried values as
    `v_initial`, of the loop-carried types; it yields
    `(condition, carried..., scan_elements...)`. The op's results are the
    final carried values, then one tensor per scan element stacking the
    iterations' values along a new first dim: its size is the number of
    iterations, static only when the loop cannot stop early (no condition,
    or a condition that is a constant true the body passes on or yields as
    a constant true) and `M` is a constant.

    A carried value's type (the block argument's, the result's) is the
    common type of its initial value and of what the body yields for it: a
    dim the body changes is dynamic.

    ```mlir
    %sum, %all = kiln.loop %m, %c, %x
        : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> (tensor<2xf32>, tensor<?x2xf32>) {
    ^bb0(%i: tensor<i64>, %go: tensor<i1>, %acc: tensor<2xf32>):
      %next = kiln.add %acc, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      kiln.yield %go, %next, %next : tensor<i1>, tensor<2xf32>, tensor<2xf32>
    }
    ```
  }];
  let arguments = (ins Kiln_Optional<Kiln_I64Tensor>:$max_trip_count,
                       Kiln_Optional<Kiln_BoolTensor>:$cond,
                       Variadic<Kiln_Tensor>:$v_initial);
  let results = (outs Variadic<Kiln_Tensor>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    operands attr-dict `:` functional-type(operands, results) $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    YieldOp bodyYield();
    /// The number of loop-carried values (v_initial).
    unsigned getNumCarried() { return getVInitial().size(); }
    /// The number of scan outputs.
    unsigned getNumScanOutputs() { return getNumResults() - getNumCarried(); }
    /// True when the loop runs exactly max_trip_count times (when it has
    /// one): no condition, or a constant true condition that the body
    /// passes on unchanged or yields as a constant true.
    bool cannotStopEarly();
    /// The number of iterations when it is a compile-time constant.
    std::optional<int64_t> getConstantTripCount();
  }];
}

def Kiln_ScanOp : Kiln_Op<"scan", [RecursiveMemoryEffects, Kiln_InferTypes]> {
  let summary = "ONNX Scan: a subgraph run over slices of its scan inputs";
  let description = [{
    ONNX Scan (opset 9 and later). The operands are `N` initial state
    values followed by the `num_scan_inputs` scan inputs; each iteration
    `t` of the `L` iterations (`L` is the length of the scan inputs along
    their scan axes) runs the body on the states and on slice `t` of every
    scan input (slice `L - 1 - t` for a reverse direction), and stacks the
    body's scan outputs along their scan axes (from the end for a reverse
    direction). The results are the final states, then the scan outputs.

    The body's block has arguments `(state..., scan_slice...)`: the states
    of the state types, the slices of the scan inputs' types without their
    scan axis. It yields `(state..., scan_output_element...)`.

    `scan_input_axes`, `scan_input_directions`, `scan_output_axes` and
    `scan_output_directions` have ONNX's meaning; absent, they are all 0.

    ```mlir
    %sum, %running = kiln.scan %init, %xs {num_scan_inputs = 1 : i64}
        : (tensor<2xf32>, tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>) {
    ^bb0(%acc: tensor<2xf32>, %x: tensor<2xf32>):
      %next = kiln.add %acc, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      kiln.yield %next, %next : tensor<2xf32>, tensor<2xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$initial_state_and_scan_inputs,
                       I64Attr:$num_scan_inputs,
                       OptionalAttr<DenseI64ArrayAttr>:$scan_input_axes,
                       OptionalAttr<DenseI64ArrayAttr>:$scan_input_directions,
                       OptionalAttr<DenseI64ArrayAttr>:$scan_output_axes,
                       OptionalAttr<DenseI64ArrayAttr>:$scan_output_directions);
  let results = (outs Variadic<Kiln_Tensor>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    operands attr-dict `:` functional-type(operands, results) $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    YieldOp bodyYield();
    /// The number of state values.
    unsigned getNumStates() {
      return getNumOperands() - static_cast<unsigned>(getNumScanInputs());
    }
    /// The number of scan outputs.
    unsigned getNumScanOutputs() { return getNumResults() - getNumStates(); }
    /// Scan input `i`'s axis, in [0, rank).
    int64_t getScanInputAxis(unsigned i);
    /// True when scan input `i` is read from its end.
    bool isScanInputReversed(unsigned i);
    /// Scan output `j`'s axis, in [0, rank of the result).
    int64_t getScanOutputAxis(unsigned j);
    /// True when scan output `j` is written from its end.
    bool isScanOutputReversed(unsigned j);
  }];
}

#endif // KILN_CONTROL_FLOW_OPS_TD
