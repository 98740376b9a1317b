//===- FoldDataMovement.cpp - Evaluating shape and data-movement ops ------===//
//
// kiln-constant-fold's evaluator of the ops that move elements without
// computing: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Expand, Tile,
// Slice, Gather, Concat; and the generators ConstantOfShape, Range, Trilu.
// Each works on any element type. A splat input gives a splat result, so
// broadcasting a scalar to a large shape costs nothing (and is exempt from
// the size limit, a splat being stored as one element).
//
//===----------------------------------------------------------------------===//

#include "FoldUtils.h"

#include "kiln/Dialect/KilnOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace kiln::fold {
namespace {

/// Row-major strides of `shape`.
SmallVector<int64_t> getStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// The result of `type` whose element at coordinates `c` is element
/// `source(c)` of `input` (or undefined when `source` returns -1: no fold).
/// A splat input gives a splat result.
std::optional<ConstTensor>
remap(const ConstTensor &input, RankedTensorType type, EvalContext &ctx,
      llvm::function_ref<int64_t(ArrayRef<int64_t>)> source) {
  if (input.isSplat()) {
    ConstTensor result = ConstTensor::getSplat(type);
    result.copyElement(0, input, 0);
    return result;
  }
  std::optional<ConstTensor> result = ctx.allocate(type);
  if (!result)
    return std::nullopt;
  ArrayRef<int64_t> shape = type.getShape();
  SmallVector<int64_t> coords(shape.size(), 0);
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
    int64_t from = source(coords);
    if (from < 0)
      return std::nullopt;
    result->copyElement(i, input, from);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++coords[d] < shape[d])
        break;
      coords[d] = 0;
    }
  }
  return result;
}

/// The same elements with another shape; fails (no fold) above the limit.
std::optional<ConstTensor> reshaped(const ConstTensor &input,
                                    RankedTensorType type, EvalContext &ctx) {
  if (!input.isSplat() &&
      type.getNumElements() * getElementBytes(type.getElementType()) >
          ctx.sizeLimit) {
    ctx.tooLarge = true;
    return std::nullopt;
  }
  return input.withType(type);
}

std::optional<ConstTensor> evalTranspose(TransposeOp op, const ConstTensor &x,
                                         RankedTensorType type,
                                         EvalContext &ctx) {
  int64_t rank = x.getType().getRank();
  SmallVector<int64_t> perm;
  if (std::optional<ArrayRef<int64_t>> p = op.getPerm())
    perm.assign(p->begin(), p->end());
  else
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  if (static_cast<int64_t>(perm.size()) != rank)
    return std::nullopt;
  SmallVector<int64_t> in = getStrides(x.getType().getShape());
  return remap(x, type, ctx, [&](ArrayRef<int64_t> c) {
    int64_t index = 0;
    for (int64_t k = 0; k < rank; ++k)
      index += c[k] * in[perm[k]];
    return index;
  });
}

/// Expand (numpy broadcasting of the input to the result).
std::optional<ConstTensor> evalBroadcast(const ConstTensor &x,
                                         RankedTensorType type,
                                         EvalContext &ctx) {
  ArrayRef<int64_t> shape = x.getType().getShape();
  SmallVector<int64_t> in = getStrides(shape);
  size_t offset = type.getRank() - shape.size();
  return remap(x, type, ctx, [&](ArrayRef<int64_t> c) {
    int64_t index = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      index += (shape[d] == 1 ? 0 : c[d + offset]) * in[d];
    return index;
  });
}

std::optional<ConstTensor> evalTile(const ConstTensor &x, RankedTensorType type,
                                    EvalContext &ctx) {
  ArrayRef<int64_t> shape = x.getType().getShape();
  if (shape.size() != static_cast<size_t>(type.getRank()) ||
      llvm::is_contained(shape, 0))
    return std::nullopt;
  SmallVector<int64_t> in = getStrides(shape);
  return remap(x, type, ctx, [&](ArrayRef<int64_t> c) {
    int64_t index = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      index += (c[d] % shape[d]) * in[d];
    return index;
  });
}

std::optional<ConstTensor> evalSlice(const ConstTensor &x, ConstOperands operands,
                                     RankedTensorType type, EvalContext &ctx) {
  ArrayRef<int64_t> shape = x.getType().getShape();
  int64_t rank = shape.size();
  auto starts = getInts(operands[1]), ends = getInts(operands[2]);
  if (!starts || !ends || starts->size() != ends->size())
    return std::nullopt;
  SmallVector<int64_t> axes, steps(starts->size(), 1);
  if (operands[3]) {
    auto a = getInts(operands[3]);
    if (!a || a->size() != starts->size())
      return std::nullopt;
    axes = *a;
  } else {
    for (int64_t i = 0, e = starts->size(); i < e; ++i)
      axes.push_back(i);
  }
  if (operands[4]) {
    auto s = getInts(operands[4]);
    if (!s || s->size() != starts->size())
      return std::nullopt;
    steps = *s;
  }
  // Per dim: first index and step; dims not sliced take everything.
  SmallVector<int64_t> first(rank, 0), step(rank, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (axis < 0 || axis >= rank || steps[i] == 0)
      return std::nullopt;
    SliceAxis s = clampSliceAxis(shape[axis], (*starts)[i], (*ends)[i], steps[i]);
    if (s.count != type.getDimSize(axis))
      return std::nullopt;
    first[axis] = s.start;
    step[axis] = s.step;
  }
  SmallVector<int64_t> in = getStrides(shape);
  return remap(x, type, ctx, [&](ArrayRef<int64_t> c) {
    int64_t index = 0;
    for (int64_t d = 0; d < rank; ++d)
      index += (first[d] + c[d] * step[d]) * in[d];
    return index;
  });
}

std::optional<ConstTensor> evalGather(GatherOp op, const ConstTensor &data,
                                      const ConstTensor &indices,
                                      RankedTensorType type, EvalContext &ctx) {
  ArrayRef<int64_t> shape = data.getType().getShape();
  int64_t rank = shape.size();
  int64_t axis = static_cast<int64_t>(op.getAxis());
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return std::nullopt;
  int64_t q = indices.getType().getRank();
  SmallVector<int64_t> in = getStrides(shape);
  SmallVector<int64_t> indexStrides = getStrides(indices.getType().getShape());
  return remap(data, type, ctx, [&](ArrayRef<int64_t> c) -> int64_t {
    int64_t flat = 0;
    for (int64_t k = 0; k < q; ++k)
      flat += c[axis + k] * indexStrides[k];
    int64_t i = indices.getInt(flat);
    if (i < 0)
      i += shape[axis];
    if (i < 0 || i >= shape[axis])
      return -1; // Out of range: an error at run time; leave it there.
    int64_t index = i * in[axis];
    for (int64_t d = 0; d < axis; ++d)
      index += c[d] * in[d];
    for (int64_t d = axis + 1; d < rank; ++d)
      index += c[d + q - 1] * in[d];
    return index;
  });
}

std::optional<ConstTensor> evalConcat(ConcatOp op, ConstOperands inputs,
                                      RankedTensorType type, EvalContext &ctx) {
  int64_t rank = type.getRank();
  int64_t axis = static_cast<int64_t>(op.getAxis());
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return std::nullopt;
  std::optional<ConstTensor> result = ctx.allocate(type);
  if (!result)
    return std::nullopt;
  // Copy each input's rows: the result is `outer` blocks, each the
  // concatenation of every input's block of dims [axis, rank).
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= type.getDimSize(d);
  int64_t out = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (const ConstTensor *input : inputs) {
      int64_t block = 1;
      for (int64_t d = axis; d < rank; ++d)
        block *= input->getType().getDimSize(d);
      for (int64_t i = 0; i < block; ++i)
        result->copyElement(out++, *input, o * block + i);
    }
  }
  return result;
}

std::optional<ConstTensor> evalTrilu(TriluOp op, const ConstTensor &x,
                                     const ConstTensor *kOperand,
                                     RankedTensorType type, EvalContext &ctx) {
  int64_t rank = type.getRank();
  if (rank < 2)
    return std::nullopt;
  int64_t k = 0;
  if (kOperand) {
    if (kOperand->getNumElements() != 1)
      return std::nullopt;
    k = kOperand->getInt(0);
  }
  bool upper = op.getUpper() != 0;
  std::optional<ConstTensor> result = ctx.allocate(type);
  if (!result)
    return std::nullopt;
  int64_t rows = type.getDimSize(rank - 2), cols = type.getDimSize(rank - 1);
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
    int64_t col = i % cols, row = (i / cols) % rows;
    // Upper keeps j - i >= k, lower keeps j - i <= k; the rest is zero.
    bool keep = upper ? col - row >= k : col - row <= k;
    if (keep)
      result->copyElement(i, x, i);
  }
  return result;
}

std::optional<ConstTensor> evalRange(const ConstTensor &start,
                                     const ConstTensor &delta,
                                     RankedTensorType type, EvalContext &ctx) {
  if (start.getNumElements() != 1 || delta.getNumElements() != 1 ||
      type.getRank() != 1)
    return std::nullopt;
  std::optional<ConstTensor> result = ctx.allocate(type);
  if (!result)
    return std::nullopt;
  // ONNX Runtime accumulates: value += delta, in the element type.
  Type elementType = type.getElementType();
  double f = start.isFloat() ? start.getFloat(0) : 0;
  int64_t v = start.isFloat() ? 0 : start.getInt(0);
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
    if (start.isFloat()) {
      result->setFloat(i, f);
      if (elementType.isF64()) {
        f += delta.getFloat(0);
      } else {
        float next = static_cast<float>(f) + static_cast<float>(delta.getFloat(0));
        f = roundToType(elementType, next);
      }
    } else {
      result->setInt(i, v);
      v = wrapToType(elementType, static_cast<uint64_t>(v) +
                                      static_cast<uint64_t>(delta.getInt(0)));
    }
  }
  return result;
}

std::optional<ConstTensor> evalConstantOfShape(ConstantOfShapeOp op,
                                               RankedTensorType type) {
  ConstTensor result = ConstTensor::getSplat(type);
  std::optional<ElementsAttr> value = op.getValue();
  if (!value)
    return result.isFloat() ? std::optional(result) : std::nullopt; // f32 zero
  std::optional<ConstTensor> fill = ConstTensor::read(*value);
  if (!fill || fill->getNumElements() != 1 ||
      fill->getElementType() != type.getElementType())
    return std::nullopt;
  result.copyElement(0, *fill, 0);
  return result;
}

} // namespace

std::optional<ConstTensor> evaluateDataMovement(Operation *op,
                                                ConstOperands operands,
                                                EvalContext &ctx) {
  if (op->getNumResults() != 1)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  if (auto fill = dyn_cast<ConstantOfShapeOp>(op))
    return evalConstantOfShape(fill, type);
  if (operands.empty() || !operands[0])
    return std::nullopt;
  const ConstTensor &x = *operands[0];
  auto present = [&](unsigned i) { return i < operands.size() && operands[i]; };
  return llvm::TypeSwitch<Operation *, std::optional<ConstTensor>>(op)
      .Case<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, IdentityOp>(
          [&](Operation *) { return reshaped(x, type, ctx); })
      .Case([&](TransposeOp t) { return evalTranspose(t, x, type, ctx); })
      .Case([&](ExpandOp) { return evalBroadcast(x, type, ctx); })
      .Case([&](TileOp) { return evalTile(x, type, ctx); })
      .Case([&](SliceOp) -> std::optional<ConstTensor> {
        if (!present(1) || !present(2))
          return std::nullopt;
        return evalSlice(x, operands, type, ctx);
      })
      .Case([&](GatherOp g) -> std::optional<ConstTensor> {
        if (!present(1))
          return std::nullopt;
        return evalGather(g, x, *operands[1], type, ctx);
      })
      .Case([&](ConcatOp c) -> std::optional<ConstTensor> {
        if (!llvm::all_of(operands, [](const ConstTensor *t) { return t; }))
          return std::nullopt;
        return evalConcat(c, operands, type, ctx);
      })
      .Case([&](TriluOp t) {
        return evalTrilu(t, x, operands.size() > 1 ? operands[1] : nullptr,
                         type, ctx);
      })
      .Case([&](RangeOp) -> std::optional<ConstTensor> {
        if (!present(2))
          return std::nullopt;
        return evalRange(x, *operands[2], type, ctx);
      })
      .Default([](Operation *) { return std::nullopt; });
}

std::optional<SmallVector<ConstTensor>>
evaluateSplit(Operation *op, const ConstTensor &input, EvalContext &ctx) {
  auto split = dyn_cast<SplitOp>(op);
  if (!split)
    return std::nullopt;
  ArrayRef<int64_t> shape = input.getType().getShape();
  int64_t rank = shape.size();
  int64_t axis = static_cast<int64_t>(split.getAxis());
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return std::nullopt;
  SmallVector<int64_t> in = getStrides(shape);
  SmallVector<ConstTensor> results;
  int64_t offset = 0;
  for (Value result : split.getOutputs()) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type || !type.hasStaticShape() || type.getRank() != rank)
      return std::nullopt;
    std::optional<ConstTensor> part =
        remap(input, type, ctx, [&](ArrayRef<int64_t> c) {
          int64_t index = 0;
          for (int64_t d = 0; d < rank; ++d)
            index += (c[d] + (d == axis ? offset : 0)) * in[d];
          return index;
        });
    if (!part)
      return std::nullopt;
    results.push_back(std::move(*part));
    offset += type.getDimSize(axis);
  }
  // The parts must cover the input exactly, as ONNX requires.
  if (offset != shape[axis])
    return std::nullopt;
  return results;
}

} // namespace kiln::fold
