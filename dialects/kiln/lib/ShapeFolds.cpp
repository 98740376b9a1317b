//===- ShapeFolds.cpp - Folders of the shape and data-movement ops --------===//
//
// Local folds only: an op whose result is its input, or a small integer
// result that kiln::getKnownIntValues knows completely (the shape of a
// static tensor, a Gather/Concat/Slice of constants and of known dims). The
// general constant folding of data movement is a pass, not these folders.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace kiln;

/// Results of at most this many elements fold to constants: shape-sized.
static constexpr int64_t kMaxFoldedElements = 64;

/// `result` as a constant when it is a small static integer tensor whose
/// every element getKnownIntValues knows.
static OpFoldResult foldKnownInts(Value result) {
  auto type = dyn_cast<RankedTensorType>(result.getType());
  if (!type || !type.hasStaticShape() ||
      type.getNumElements() > kMaxFoldedElements)
    return {};
  auto elementType = dyn_cast<IntegerType>(type.getElementType());
  if (!elementType)
    return {};
  std::optional<SmallVector<int64_t>> values = getKnownIntValues(result);
  if (!values || llvm::any_of(*values, ShapedType::isDynamic))
    return {};
  SmallVector<APInt> elements;
  for (int64_t v : *values)
    elements.push_back(APInt(elementType.getWidth(), static_cast<uint64_t>(v),
                             /*isSigned=*/!elementType.isUnsigned(),
                             /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, elements);
}

/// `input` when the op's result has its type (a no-op reshape), else the
/// result as a known constant.
static OpFoldResult foldIdentityOrKnown(Value input, Value result) {
  if (input.getType() == result.getType())
    return input;
  return foldKnownInts(result);
}

OpFoldResult ShapeOp::fold(FoldAdaptor) { return foldKnownInts(getResult()); }

OpFoldResult SizeOp::fold(FoldAdaptor) { return foldKnownInts(getResult()); }

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  return foldIdentityOrKnown(getData(), getResult());
}

OpFoldResult FlattenOp::fold(FoldAdaptor) {
  return foldIdentityOrKnown(getInput(), getResult());
}

OpFoldResult SqueezeOp::fold(FoldAdaptor) {
  return foldIdentityOrKnown(getData(), getResult());
}

OpFoldResult UnsqueezeOp::fold(FoldAdaptor) {
  return foldIdentityOrKnown(getData(), getResult());
}

OpFoldResult ExpandOp::fold(FoldAdaptor) {
  return foldIdentityOrKnown(getInput(), getResult());
}

OpFoldResult TileOp::fold(FoldAdaptor) {
  std::optional<SmallVector<int64_t>> repeats = getKnownIntValues(getRepeats());
  if (repeats && llvm::all_of(*repeats, [](int64_t r) { return r == 1; }) &&
      getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  int64_t rank = cast<RankedTensorType>(getData().getType()).getRank();
  bool identity = rank <= 1;
  if (std::optional<ArrayRef<int64_t>> perm = getPerm())
    identity = llvm::equal(*perm, llvm::seq<int64_t>(0, rank));
  if (identity && getData().getType() == getResult().getType())
    return getData();
  return {};
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1)
    return foldIdentityOrKnown(getInputs().front(), getResult());
  return foldKnownInts(getResult());
}

OpFoldResult GatherOp::fold(FoldAdaptor) { return foldKnownInts(getResult()); }

/// True when `op` keeps every element of its input in order: each sliced
/// axis is a static dim, every step is known and positive.
static bool isFullSlice(SliceOp op) {
  auto type = cast<RankedTensorType>(op.getData().getType());
  auto resultType = cast<RankedTensorType>(op.getResult().getType());
  std::optional<SmallVector<int64_t>> starts = getKnownIntValues(op.getStarts());
  if (!starts)
    return false;
  SmallVector<int64_t> axes;
  if (isNone(op.getAxes())) {
    for (int64_t i = 0, e = starts->size(); i < e; ++i)
      axes.push_back(i);
  } else {
    std::optional<SmallVector<int64_t>> known = getKnownIntValues(op.getAxes());
    if (!known)
      return false;
    axes = *known;
  }
  if (!isNone(op.getSteps())) {
    std::optional<SmallVector<int64_t>> steps = getKnownIntValues(op.getSteps());
    if (!steps || llvm::any_of(*steps, [](int64_t s) {
          return ShapedType::isDynamic(s) || s <= 0;
        }))
      return false;
  }
  int64_t rank = type.getRank();
  return llvm::all_of(axes, [&](int64_t axis) {
    if (ShapedType::isDynamic(axis) || axis < -rank || axis >= rank)
      return false;
    int64_t d = axis < 0 ? axis + rank : axis;
    return !type.isDynamicDim(d) && type.getDimSize(d) == resultType.getDimSize(d);
  });
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  // A slice keeping every element is its input only when the sliced dims
  // are static (a `?` sliced from 1 is still `?`) and no step is negative
  // (x[::-1] has x's type but reverses it).
  if (getData().getType() == getResult().getType() && isFullSlice(*this))
    return getData();
  return foldKnownInts(getResult());
}
