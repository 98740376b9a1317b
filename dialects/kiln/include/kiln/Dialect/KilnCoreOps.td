//===- KilnCoreOps.td - kiln.constant and kiln.none ----------*- tablegen -*-===//

#ifndef KILN_CORE_OPS_TD
#define KILN_CORE_OPS_TD

include "kiln/Dialect/KilnBase.td"

def Kiln_ConstantOp : Kiln_Op<"constant", [ConstantLike, Pure, Kiln_InferTypes]> {
  let summary = "A constant tensor (ONNX Constant and initializers)";
  let description = [{
    A constant tensor. Initializers of an ONNX graph and `Constant` nodes
    (whatever `value*` attribute they use) import as `kiln.constant`. Large
    initializers are held as `dense_resource` blobs, so that printing the IR
    does not print their bytes unless asked.

    ```mlir
    %0 = kiln.constant dense<[1, 2]> : tensor<2xi64>
    %w = kiln.constant dense_resource<conv1.weight> : tensor<64x3x7x7xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Kiln_NoneOp : Kiln_Op<"none", [ConstantLike, Pure]> {
  let summary = "The value of a missing optional input";
  let description = [{
    ONNX marks a missing optional input with an empty name. Kiln passes a
    value of type `none` in its place, so every op keeps ONNX's operand order.

    ```mlir
    %none = kiln.none
    %y = kiln.clip %x, %none, %max : (tensor<4xf32>, none, tensor<f32>) -> tensor<4xf32>
    ```
  }];
  let results = (outs NoneType:$output);
  let assemblyFormat = "attr-dict";
  let hasFolder = 1;
  let builders = [OpBuilder<(ins), [{
    $_state.addTypes(::mlir::NoneType::get($_builder.getContext()));
  }]>];
}

def Kiln_AllReduceOp : Kiln_Op<"all_reduce", [SameOperandsAndResultType,
                                               InferTypeOpInterface]> {
  let summary = "Sum of a tensor over the ranks of a tensor-parallel group";
  let description = [{
    Every rank of the group (the processes of an `mpirun -n N` job, one
    artifact each, docs/cluster.md) passes its tensor of the same shape;
    each gets the elementwise sum over the ranks. Made by
    `kiln-shard-tensor-parallel` after a row-parallel matmul, whose ranks
    each hold a partial sum. The sum is computed in float32 for float16 and
    bfloat16 tensors and rounded once.

    Not pure: the ranks must run their all-reduces in the same order, so it
    is neither removed when unused, merged with another nor moved across
    another. On the CPU it lowers to `kiln_abi_all_reduce_sum`, which the
    runtime answers with MPI_Allreduce; in a process that is not part of a
    tensor-parallel group the runtime refuses to run the artifact.

    ```mlir
    %y = kiln.all_reduce %partial : tensor<?x?x576xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$X);
  let results = (outs Kiln_FloatTensor:$Y);
  let assemblyFormat = "$X attr-dict `:` type($X)";
}

#endif // KILN_CORE_OPS_TD
