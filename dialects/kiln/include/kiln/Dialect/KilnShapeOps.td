//===- KilnShapeOps.td - Shape and data-movement ops ---------*- tablegen -*-===//
//
// ONNX's shape and data-movement operators. Each op's inferReturnTypes (in
// lib/ShapeOps.cpp) also checks what ONNX forbids, so that a malformed op
// fails verification with a message naming the values involved. Shape-like
// operands (Reshape's shape, Slice's starts, ...) contribute through
// kiln::getKnownIntValues (lib/KnownValues.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SHAPE_OPS_TD
#define KILN_SHAPE_OPS_TD

include "kiln/Dialect/KilnBase.td"

def Kiln_ShapeOptIndexTensor : Kiln_Optional<Kiln_IndexTensor>;

/// A shape op with inferred types and a folder (lib/ShapeFolds.cpp).
class Kiln_FoldableShapeOp<string mnemonic, list<Trait> traits = []>
    : Kiln_OnnxOp<mnemonic, traits> {
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Shape queries
//===----------------------------------------------------------------------===//

def Kiln_ShapeOp : Kiln_FoldableShapeOp<"shape"> {
  let summary = "ONNX Shape: the dims of a tensor, optionally a slice of them";
  let description = [{
    The 1-D i64 tensor of the dims `[start, end)` of `data`. Negative `start`
    and `end` count from the rank; both are clamped to `[0, rank]`, and an
    omitted `end` is the rank. Folds to a constant when those dims are static;
    `kiln::getKnownIntValues` sees the static ones of a partially static tensor.

    ```mlir
    %s = kiln.shape %x {start = 0 : i64} : (tensor<?x128x8xf32>) -> tensor<3xi64>
    %t = kiln.shape %x {start = 1 : i64, end = -1 : i64} : (tensor<?x128x8xf32>) -> tensor<1xi64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, DefaultValuedAttr<I64Attr, "0">:$start,
                   OptionalAttr<I64Attr>:$end);
  let results = (outs Kiln_I64Tensor:$shape);
}

def Kiln_SizeOp : Kiln_FoldableShapeOp<"size"> {
  let summary = "ONNX Size: the number of elements, as an i64 scalar";
  let description = [{
    ```mlir
    %n = kiln.size %x : (tensor<?x4xf32>) -> tensor<i64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data);
  let results = (outs Kiln_I64Tensor:$size);
}

//===----------------------------------------------------------------------===//
// Reshaping
//===----------------------------------------------------------------------===//

def Kiln_ReshapeOp : Kiln_FoldableShapeOp<"reshape"> {
  let summary = "ONNX Reshape";
  let description = [{
    Reshapes `data` to the 1-D i64 `shape`. With `allowzero = 0` (the
    default) a 0 copies the input dim at the same index; with `allowzero = 1`
    it is a zero-sized dim (and no -1 may appear). At most one -1, whose size
    is inferred from the element count. Elements of `shape` not known at
    compile time give `?` dims; a -1 is still inferred when the unknown
    elements are dims of `data` itself (the exported
    `Shape → Gather → Unsqueeze → Concat` pattern), as they cancel out.

    ```mlir
    %y = kiln.reshape %x, %shape {allowzero = 0 : i64}
        : (tensor<?x128x8xf32>, tensor<3xi64>) -> tensor<?x16x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_I64Tensor:$shape,
                   DefaultValuedAttr<I64Attr, "0">:$allowzero);
  let results = (outs Kiln_Tensor:$reshaped);
}

def Kiln_FlattenOp : Kiln_FoldableShapeOp<"flatten"> {
  let summary = "ONNX Flatten: a 2-D tensor split at `axis`";
  let description = [{
    The result is `(d_0 * ... * d_{axis-1}, d_axis * ... * d_{n-1})`;
    `axis` is in `[-rank, rank]`.

    ```mlir
    %y = kiln.flatten %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs Kiln_Tensor:$output);
}

def Kiln_SqueezeOp : Kiln_FoldableShapeOp<"squeeze"> {
  let summary = "ONNX Squeeze: removes dims of size 1";
  let description = [{
    Removes the dims listed in the 1-D i64 `axes` operand, or, in the
    pre-opset-13 form, in the `axes` attribute (the importer keeps the
    attribute; give at most one of the two). Without axes every static dim of
    size 1 is removed; dynamic dims are kept (assumed not to be 1). The axes
    must be known at compile time, since they determine the result rank.

    ```mlir
    %y = kiln.squeeze %x, %axes : (tensor<1x3x1xf32>, tensor<1xi64>) -> tensor<3x1xf32>
    %z = kiln.squeeze %x, %none : (tensor<1x3x1xf32>, none) -> tensor<3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_OptI64Tensor:$axes_input,
                   OptionalAttr<DenseI64ArrayAttr>:$axes);
  let results = (outs Kiln_Tensor:$squeezed);
}

def Kiln_UnsqueezeOp : Kiln_FoldableShapeOp<"unsqueeze"> {
  let summary = "ONNX Unsqueeze: inserts dims of size 1";
  let description = [{
    Inserts a dim of size 1 at each of the `axes` (operand, or the
    pre-opset-13 attribute), which index the result, in
    `[-rank(result), rank(result))`, without duplicates.

    ```mlir
    %y = kiln.unsqueeze %x, %axes : (tensor<3xf32>, tensor<2xi64>) -> tensor<1x3x1xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_OptI64Tensor:$axes_input,
                   OptionalAttr<DenseI64ArrayAttr>:$axes);
  let results = (outs Kiln_Tensor:$expanded);
}

def Kiln_TransposeOp : Kiln_FoldableShapeOp<"transpose"> {
  let summary = "ONNX Transpose";
  let description = [{
    Result dim `i` is input dim `perm[i]`; without `perm` the dims are
    reversed. Folds to its input when `perm` is the identity.

    ```mlir
    %y = kiln.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, OptionalAttr<DenseI64ArrayAttr>:$perm);
  let results = (outs Kiln_Tensor:$transposed);
}

def Kiln_ExpandOp : Kiln_FoldableShapeOp<"expand"> {
  let summary = "ONNX Expand: bidirectional broadcast to a shape";
  let description = [{
    Broadcasts `input` and the 1-D i64 `shape` together with numpy rules, so
    the result may be larger than `shape` (a 1 in `shape` keeps the input
    dim).

    ```mlir
    %y = kiln.expand %x, %shape : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_I64Tensor:$shape);
  let results = (outs Kiln_Tensor:$output);
}

def Kiln_TileOp : Kiln_FoldableShapeOp<"tile"> {
  let summary = "ONNX Tile: repeats the input along each dim";
  let description = [{
    `repeats` is a 1-D i64 tensor with one entry per input dim.

    ```mlir
    %y = kiln.tile %x, %repeats : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_I64Tensor:$repeats);
  let results = (outs Kiln_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Joining and splitting
//===----------------------------------------------------------------------===//

def Kiln_ConcatOp : Kiln_FoldableShapeOp<"concat"> {
  let summary = "ONNX Concat";
  let description = [{
    Concatenates one or more tensors of the same rank and element type along
    `axis`; the other dims must agree.

    ```mlir
    %y = kiln.concat %a, %b {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64>
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$concat_result);
}

def Kiln_SplitOp : Kiln_OnnxOp<"split"> {
  let summary = "ONNX Split (variadic results)";
  let description = [{
    Splits `input` along `axis` into parts whose sizes are the 1-D i64
    `split` operand, or the pre-opset-13 `split` attribute, or, without
    either, `num_outputs` equal parts of size `ceil(dim / num_outputs)` with
    a smaller last one (opset 18). The number of results is `num_outputs`
    when given, else the number of split sizes; the importer always sets
    `num_outputs` to the node's output count.

    ```mlir
    %a:2 = kiln.split %x, %none {axis = 1 : i64, num_outputs = 2 : i64}
        : (tensor<2x5xf32>, none) -> (tensor<2x3xf32>, tensor<2x2xf32>)
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_OptI64Tensor:$split_input,
                   DefaultValuedAttr<I64Attr, "0">:$axis,
                   OptionalAttr<I64Attr>:$num_outputs,
                   OptionalAttr<DenseI64ArrayAttr>:$split);
  let results = (outs Variadic<Kiln_Tensor>:$outputs);
}

def Kiln_SliceOp : Kiln_FoldableShapeOp<"slice"> {
  let summary = "ONNX Slice";
  let description = [{
    Slices `data` along `axes` (default: the first `len(starts)` dims) from
    `starts` to `ends` with `steps` (default 1), with ONNX's rules: negative
    starts/ends count from the dim; then, for a positive step, both are
    clamped to `[0, dim]`, for a negative one `start` to `[0, dim - 1]` and
    `end` to `[-1, dim - 1]`. `ends = INT64_MAX` (or `INT64_MIN` with a
    negative step) means "to the end". A step of 0 is an error.

    Note: `kiln::getKnownIntValues` uses INT64_MIN (`ShapedType::kDynamic`)
    for "unknown", so an end of INT64_MIN gives a `?` dim; exporters' usual
    `-INT64_MAX` is exact.

    ```mlir
    %y = kiln.slice %x, %starts, %ends, %axes, %steps
        : (tensor<8x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$starts,
                   Kiln_IndexTensor:$ends, Kiln_ShapeOptIndexTensor:$axes,
                   Kiln_ShapeOptIndexTensor:$steps);
  let results = (outs Kiln_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Gather and scatter
//===----------------------------------------------------------------------===//

def Kiln_GatherOp : Kiln_FoldableShapeOp<"gather"> {
  let summary = "ONNX Gather: takes entries along an axis";
  let description = [{
    The result shape is `data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`; negative indices count from the end.

    ```mlir
    %d0 = kiln.gather %s, %zero {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Kiln_Tensor:$output);
}

def Kiln_GatherElementsOp : Kiln_OnnxOp<"gather_elements"> {
  let summary = "ONNX GatherElements";
  let description = [{
    `data` and `indices` have the same rank; the result has the shape of
    `indices`.

    ```mlir
    %y = kiln.gather_elements %x, %i {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Kiln_Tensor:$output);
}

def Kiln_GatherNDOp : Kiln_OnnxOp<"gather_nd"> {
  let summary = "ONNX GatherND";
  let description = [{
    With `k = indices.shape[-1]` (which must be static), the result shape is
    `indices.shape[:-1] + data.shape[batch_dims + k:]`.

    ```mlir
    %y = kiln.gather_nd %x, %i {batch_dims = 0 : i64} : (tensor<4x5x6xf32>, tensor<3x2xi64>) -> tensor<3x6xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_I64Tensor:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs Kiln_Tensor:$output);
}

def Kiln_ScatterElementsOp : Kiln_OnnxOp<"scatter_elements"> {
  let summary = "ONNX ScatterElements";
  let description = [{
    Writes `updates` into a copy of `data` at `indices` along `axis`;
    `indices` and `updates` have the same shape and the rank of `data`.
    `reduction` is one of `none`, `add`, `mul`, `max`, `min`.

    ```mlir
    %y = kiln.scatter_elements %x, %i, %u {axis = 0 : i64, reduction = "none"}
        : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                   Kiln_Tensor:$updates, DefaultValuedAttr<I64Attr, "0">:$axis,
                   DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs Kiln_Tensor:$output);
}

def Kiln_ScatterNDOp : Kiln_OnnxOp<"scatter_nd"> {
  let summary = "ONNX ScatterND";
  let description = [{
    With `k = indices.shape[-1]`, `updates` has the shape
    `indices.shape[:-1] + data.shape[k:]`. `reduction` is one of `none`,
    `add`, `mul`, `max`, `min`.

    ```mlir
    %y = kiln.scatter_nd %x, %i, %u {reduction = "none"}
        : (tensor<8xf32>, tensor<4x1xi64>, tensor<4xf32>) -> tensor<8xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_I64Tensor:$indices,
                   Kiln_Tensor:$updates,
                   DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs Kiln_Tensor:$output);
}

def Kiln_TensorScatterOp : Kiln_OnnxOp<"tensor_scatter"> {
  let summary = "ONNX TensorScatter: a KV cache's in-place update";
  let description = [{
    The cache `present` is `past_cache` with `update` written along `axis`
    (the sequence dim, not 0) starting at `write_indices[b]` for each
    batch entry `b` (0 when absent); `update` differs from `past_cache`
    only in the size of that dim. `mode` is `linear` (positions past the
    end are the model's error: the lowering writes nothing for a batch
    entry whose rows would not fit) or `circular` (positions modulo the
    dim). The result has the type of `past_cache`; the CPU lowering writes
    into its buffer, so a decoder's `present` can share `past`'s
    (docs/generation.md, "The static cache").

    ```mlir
    %y = kiln.tensor_scatter %past, %new, %pos {axis = 2 : i64, mode = "linear"}
        : (tensor<?x2x128x32xf32>, tensor<?x2x?x32xf32>, tensor<?xi64>)
          -> tensor<?x2x128x32xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$past_cache, Kiln_Tensor:$update,
                   Kiln_OptI64Tensor:$write_indices,
                   DefaultValuedAttr<I64Attr, "-2">:$axis,
                   DefaultValuedStrAttr<StrAttr, "linear">:$mode);
  let results = (outs Kiln_Tensor:$present_cache);
}

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

def Kiln_ConstantOfShapeOp : Kiln_OnnxOp<"constant_of_shape"> {
  let summary = "ONNX ConstantOfShape";
  let description = [{
    A tensor of the shape given by the 1-D i64 `input`, filled with the
    one-element `value` (default: f32 zero), whose element type it has.

    ```mlir
    %y = kiln.constant_of_shape %s {value = dense<1> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<2x3xi64>
    ```
  }];
  let arguments = (ins Kiln_I64Tensor:$input, OptionalAttr<ElementsAttr>:$value);
  let results = (outs Kiln_Tensor:$output);
}

def Kiln_RangeOp : Kiln_OnnxOp<"range"> {
  let summary = "ONNX Range";
  let description = [{
    `start, start + delta, ...` up to, not including, `limit`: a 1-D tensor
    of `max(ceil((limit - start) / delta), 0)` elements, a static length
    when the three scalars are known at compile time.

    ```mlir
    %y = kiln.range %start, %limit, %delta : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$start, Kiln_NumericTensor:$limit,
                   Kiln_NumericTensor:$delta);
  let results = (outs Kiln_NumericTensor:$output);
}

def Kiln_EyeLikeOp : Kiln_OnnxOp<"eye_like"> {
  let summary = "ONNX EyeLike";
  let description = [{
    A 2-D tensor of the shape of `input` with ones on the `k`-th diagonal,
    of element type `dtype` (default: that of `input`).

    ```mlir
    %y = kiln.eye_like %x {k = 0 : i64, dtype = f32} : (tensor<3x4xi64>) -> tensor<3x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, OptionalAttr<TypeAttr>:$dtype,
                   DefaultValuedAttr<I64Attr, "0">:$k);
  let results = (outs Kiln_Tensor:$output);
}

def Kiln_OneHotOp : Kiln_OnnxOp<"one_hot"> {
  let summary = "ONNX OneHot";
  let description = [{
    Inserts a dim of size `depth` (a scalar or one-element tensor) at `axis`
    of the result (in `[-(rank+1), rank]`); `values` is `[off, on]` and gives
    the element type.

    ```mlir
    %y = kiln.one_hot %i, %depth, %values {axis = -1 : i64}
        : (tensor<4xi64>, tensor<i64>, tensor<2xf32>) -> tensor<4x10xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$indices, Kiln_NumericTensor:$depth,
                   Kiln_Tensor:$values, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Kiln_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Same-shape data movement and scans
//===----------------------------------------------------------------------===//

def Kiln_TriluOp : Kiln_OnnxOp<"trilu"> {
  let summary = "ONNX Trilu: upper or lower triangle of the last two dims";
  let description = [{
    ```mlir
    %y = kiln.trilu %x, %none {upper = 1 : i64} : (tensor<4x4xf32>, none) -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_OptI64Tensor:$k,
                   DefaultValuedAttr<I64Attr, "1">:$upper);
  let results = (outs Kiln_Tensor:$output);
}

def Kiln_CumSumOp : Kiln_OnnxOp<"cum_sum"> {
  let summary = "ONNX CumSum";
  let description = [{
    Cumulative sum along the axis given by the scalar (or one-element)
    `axis` operand.

    ```mlir
    %y = kiln.cum_sum %x, %axis {exclusive = 0 : i64, reverse = 0 : i64}
        : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$x, Kiln_IndexTensor:$axis,
                   DefaultValuedAttr<I64Attr, "0">:$exclusive,
                   DefaultValuedAttr<I64Attr, "0">:$reverse);
  let results = (outs Kiln_NumericTensor:$y);
}

def Kiln_ReverseSequenceOp : Kiln_OnnxOp<"reverse_sequence"> {
  let summary = "ONNX ReverseSequence";
  let description = [{
    `batch_axis` and `time_axis` are 0 and 1 in either order.

    ```mlir
    %y = kiln.reverse_sequence %x, %lens {batch_axis = 1 : i64, time_axis = 0 : i64}
        : (tensor<4x2x3xf32>, tensor<2xi64>) -> tensor<4x2x3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_I64Tensor:$sequence_lens,
                   DefaultValuedAttr<I64Attr, "1">:$batch_axis,
                   DefaultValuedAttr<I64Attr, "0">:$time_axis);
  let results = (outs Kiln_Tensor:$Y);
}

def Kiln_DepthToSpaceOp : Kiln_OnnxOp<"depth_to_space"> {
  let summary = "ONNX DepthToSpace";
  let description = [{
    `[N, C, H, W]` to `[N, C / b², H * b, W * b]`; `mode` is `DCR` or `CRD`.

    ```mlir
    %y = kiln.depth_to_space %x {blocksize = 2 : i64, mode = "DCR"}
        : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$blocksize,
                   DefaultValuedStrAttr<StrAttr, "DCR">:$mode);
  let results = (outs Kiln_Tensor:$output);
}

def Kiln_SpaceToDepthOp : Kiln_OnnxOp<"space_to_depth"> {
  let summary = "ONNX SpaceToDepth";
  let description = [{
    `[N, C, H, W]` to `[N, C * b², H / b, W / b]`.

    ```mlir
    %y = kiln.space_to_depth %x {blocksize = 2 : i64} : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$blocksize);
  let results = (outs Kiln_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Data-dependent results
//===----------------------------------------------------------------------===//

def Kiln_TopKOp : Kiln_OnnxOp<"top_k"> {
  let summary = "ONNX TopK: the K largest (or smallest) entries along an axis";
  let description = [{
    `K` is a one-element i64 tensor; the `axis` dim of both results is its
    value when known, else `?`. `Indices` are i64.

    ```mlir
    %v, %i = kiln.top_k %x, %k {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64}
        : (tensor<2x10xf32>, tensor<1xi64>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$X, Kiln_I64Tensor:$K,
                   DefaultValuedAttr<I64Attr, "-1">:$axis,
                   DefaultValuedAttr<I64Attr, "1">:$largest,
                   DefaultValuedAttr<I64Attr, "1">:$sorted);
  let results = (outs Kiln_NumericTensor:$Values, Kiln_I64Tensor:$Indices);
}

def Kiln_NonZeroOp : Kiln_OnnxOp<"non_zero"> {
  let summary = "ONNX NonZero: the indices of the non-zero elements";
  let description = [{
    A `rank x ?` i64 tensor: the count is only known at run time.

    ```mlir
    %y = kiln.non_zero %x : (tensor<3x4xf32>) -> tensor<2x?xi64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$X);
  let results = (outs Kiln_I64Tensor:$Y);
}

#endif // KILN_SHAPE_OPS_TD
