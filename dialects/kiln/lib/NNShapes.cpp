//===- NNShapes.cpp - Matmul, convolution and pooling shape rules ---------===//

#include "kiln/Dialect/NNShapes.h"
#include "kiln/Dialect/ShapeInference.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace kiln {

static bool isDyn(int64_t d) { return ShapedType::isDynamic(d); }

FailureOr<SmallVector<int64_t>> inferMatMulShape(std::optional<Location> loc,
                                                 ArrayRef<int64_t> a,
                                                 ArrayRef<int64_t> b) {
  if (a.empty() || b.empty())
    return emitOptionalError(loc, "matmul operands must have rank >= 1, got ",
                             a.empty() ? "A" : "B", " of rank 0");
  SmallVector<int64_t> lhs(a), rhs(b);
  if (a.size() == 1)
    lhs.insert(lhs.begin(), 1);
  if (b.size() == 1)
    rhs.push_back(1);
  int64_t k1 = lhs.back(), k2 = rhs[rhs.size() - 2];
  if (!isDyn(k1) && !isDyn(k2) && k1 != k2)
    return emitOptionalError(loc, "matmul contracting dims differ: A has ", k1,
                             " columns but B has ", k2, " rows");
  ArrayRef<int64_t> batchA = ArrayRef(lhs).drop_back(2);
  ArrayRef<int64_t> batchB = ArrayRef(rhs).drop_back(2);
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(loc, {batchA, batchB});
  if (failed(shape))
    return failure();
  if (a.size() > 1)
    shape->push_back(lhs[lhs.size() - 2]);
  if (b.size() > 1)
    shape->push_back(rhs.back());
  return shape;
}

/// Reads the optional list attribute `name` of `size` entries, each at least
/// `min`, defaulting to `size` copies of `fallback`.
static FailureOr<SmallVector<int64_t>>
getWindowList(std::optional<Location> loc, StringRef name,
              std::optional<ArrayRef<int64_t>> list, size_t size, int64_t min,
              int64_t fallback, StringRef what) {
  if (!list)
    return SmallVector<int64_t>(size, fallback);
  if (list->size() != size)
    return emitOptionalError(loc, name, " has ", list->size(),
                             " entries but ", size, " are needed (", what, ")");
  for (auto [i, v] : llvm::enumerate(*list))
    if (v < min)
      return emitOptionalError(loc, name, "[", i, "] is ", v,
                               " but must be at least ", min);
  return SmallVector<int64_t>(*list);
}

namespace {
/// A window's geometry with every default applied.
struct Geometry {
  SmallVector<int64_t> kernel, strides, dilations, pads;
  bool same = false, valid = false;

  int64_t rank() const { return kernel.size(); }
  int64_t padBegin(int64_t i) const { return pads[i]; }
  int64_t padEnd(int64_t i) const { return pads[rank() + i]; }
  /// The dilated kernel extent along `i`, kDynamic when the kernel is.
  int64_t extent(int64_t i) const {
    return isDyn(kernel[i]) ? ShapedType::kDynamic
                            : dilations[i] * (kernel[i] - 1) + 1;
  }
};
} // namespace

static FailureOr<Geometry> getGeometry(std::optional<Location> loc,
                                       size_t rank, ArrayRef<int64_t> weightKernel,
                                       const WindowAttrs &attrs) {
  Geometry g;
  StringRef autoPad = attrs.autoPad;
  if (!llvm::is_contained({"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"},
                          autoPad))
    return emitOptionalError(loc, "auto_pad '", autoPad,
                             "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, "
                             "VALID");
  g.same = autoPad.starts_with("SAME");
  g.valid = autoPad == "VALID";
  std::string spatial = std::to_string(rank) + " spatial dims";
  if (attrs.kernelShape) {
    if (attrs.kernelShape->size() != rank)
      return emitOptionalError(loc, "kernel_shape has ",
                               attrs.kernelShape->size(),
                               " entries but the input has ", spatial);
    for (auto [i, k] : llvm::enumerate(*attrs.kernelShape)) {
      if (k < 1)
        return emitOptionalError(loc, "kernel_shape[", i, "] is ", k,
                                 " but must be at least 1");
      if (!weightKernel.empty() && !isDyn(weightKernel[i]) &&
          weightKernel[i] != k)
        return emitOptionalError(loc, "kernel_shape[", i, "] is ", k,
                                 " but W's spatial dim ", i, " is ",
                                 weightKernel[i]);
    }
    g.kernel.assign(attrs.kernelShape->begin(), attrs.kernelShape->end());
  } else {
    g.kernel.assign(weightKernel.begin(), weightKernel.end());
  }
  auto strides = getWindowList(loc, "strides", attrs.strides, rank, 1, 1, spatial);
  auto dilations =
      getWindowList(loc, "dilations", attrs.dilations, rank, 1, 1, spatial);
  auto pads = getWindowList(loc, "pads", attrs.pads, 2 * rank, 0, 0,
                            "a begin and an end for each of " + spatial);
  if (failed(strides) || failed(dilations) || failed(pads))
    return failure();
  g.strides = std::move(*strides);
  g.dilations = std::move(*dilations);
  g.pads = std::move(*pads);
  if (autoPad != "NOTSET" && llvm::any_of(g.pads, [](int64_t p) { return p; }))
    return emitOptionalError(loc, "pads must be 0 with auto_pad ", autoPad);
  return g;
}

FailureOr<SmallVector<int64_t>>
inferWindowOutputDims(std::optional<Location> loc, ArrayRef<int64_t> input,
                      ArrayRef<int64_t> weightKernel, const WindowAttrs &attrs) {
  FailureOr<Geometry> g = getGeometry(loc, input.size(), weightKernel, attrs);
  if (failed(g))
    return failure();
  SmallVector<int64_t> out;
  for (auto [i, in] : llvm::enumerate(input)) {
    int64_t stride = g->strides[i], extent = g->extent(i);
    if (isDyn(in) || (!g->same && isDyn(extent))) {
      out.push_back(ShapedType::kDynamic);
      continue;
    }
    if (g->same) {
      out.push_back(llvm::divideCeil(in, stride));
      continue;
    }
    int64_t padBegin = g->valid ? 0 : g->padBegin(i);
    int64_t padded = in + padBegin + (g->valid ? 0 : g->padEnd(i));
    if (padded < extent)
      return emitOptionalError(loc, "spatial dim ", i, " of size ", in,
                               " (", padded, " padded) is smaller than the ",
                               "dilated kernel extent ", extent);
    int64_t steps = attrs.ceilMode ? llvm::divideCeil(padded - extent, stride)
                                   : (padded - extent) / stride;
    // With ceil_mode, a last window starting in the end padding is dropped.
    if (attrs.ceilMode && steps * stride >= in + padBegin)
      --steps;
    out.push_back(steps + 1);
  }
  return out;
}

/// Splits a conv-like operand into its batch, channel and spatial dims,
/// checking rank >= 3.
static FailureOr<RankedTensorType> getWindowedOperand(std::optional<Location> loc,
                                                      Type t, StringRef name) {
  auto ranked = cast<RankedTensorType>(t);
  if (ranked.getRank() < 3)
    return emitOptionalError(loc, name, " must have rank >= 3 (N, C and a ",
                             "spatial dim), got ", t);
  return ranked;
}

/// The checks shared by Conv and ConvTranspose: W's rank, group, W.dim0
/// (`wChannels`) divisible by group and X's channel count equal to
/// `expectedC` (described by `rule`).
static LogicalResult verifyConvOperands(std::optional<Location> loc,
                                        RankedTensorType x, RankedTensorType w,
                                        int64_t group, int64_t wChannels,
                                        int64_t expectedC, StringRef rule) {
  if (w.getRank() != x.getRank())
    return emitOptionalError(loc, "W has rank ", w.getRank(),
                             " but X has rank ", x.getRank());
  if (group < 1)
    return emitOptionalError(loc, "group is ", group, " but must be >= 1");
  int64_t c = x.getDimSize(1);
  if (!isDyn(c) && !isDyn(expectedC) && c != expectedC)
    return emitOptionalError(loc, "X has ", c, " channels but ", rule, " is ",
                             expectedC);
  if (!isDyn(wChannels) && wChannels % group != 0)
    return emitOptionalError(loc, "W.dim0 is ", wChannels,
                             ", not divisible by group ", group);
  return success();
}

FailureOr<SmallVector<int64_t>> inferConvShape(std::optional<Location> loc,
                                               Type xType, Type wType,
                                               int64_t group,
                                               const WindowAttrs &attrs) {
  auto x = getWindowedOperand(loc, xType, "X");
  if (failed(x))
    return failure();
  auto w = cast<RankedTensorType>(wType);
  int64_t m = w.getRank() > 0 ? w.getDimSize(0) : ShapedType::kDynamic;
  int64_t wc = w.getRank() > 1 ? w.getDimSize(1) : ShapedType::kDynamic;
  if (failed(verifyConvOperands(loc, *x, w, group, m,
                                isDyn(wc) ? wc : wc * group,
                                "W.dim1 * group = " + std::to_string(wc) +
                                    " * " + std::to_string(group))))
    return failure();
  auto spatial = inferWindowOutputDims(loc, x->getShape().drop_front(2),
                                       w.getShape().drop_front(2), attrs);
  if (failed(spatial))
    return failure();
  SmallVector<int64_t> shape{x->getDimSize(0), m};
  shape.append(*spatial);
  return shape;
}

FailureOr<SmallVector<int64_t>>
inferConvNhwcShape(std::optional<Location> loc, Type xType, Type wType,
                   int64_t group, const WindowAttrs &attrs) {
  auto x = cast<RankedTensorType>(xType);
  if (x.getRank() < 3)
    return emitOptionalError(loc, "X must have rank >= 3 (N, a spatial dim ",
                             "and C), got ", xType);
  // Channels last to channels first: an OHWI filter is OIHW with its
  // input-channel dim last, the same move as NHWC to NCHW.
  auto channelsFirst = [](RankedTensorType t) {
    SmallVector<int64_t> shape(t.getShape());
    if (shape.size() >= 2) {
      int64_t c = shape.back();
      shape.pop_back();
      shape.insert(shape.begin() + 1, c);
    }
    return t.clone(shape);
  };
  auto shape = inferConvShape(loc, channelsFirst(x),
                              channelsFirst(cast<RankedTensorType>(wType)),
                              group, attrs);
  if (failed(shape))
    return failure();
  // N x M x out... to N x out... x M.
  int64_t m = (*shape)[1];
  shape->erase(shape->begin() + 1);
  shape->push_back(m);
  return shape;
}

FailureOr<SmallVector<int64_t>>
inferConvTransposeShape(std::optional<Location> loc, Type xType, Type wType,
                        int64_t group, const WindowAttrs &attrs,
                        std::optional<ArrayRef<int64_t>> outputPadding,
                        std::optional<ArrayRef<int64_t>> outputShape) {
  auto x = getWindowedOperand(loc, xType, "X");
  if (failed(x))
    return failure();
  auto w = cast<RankedTensorType>(wType);
  int64_t wc = w.getRank() > 0 ? w.getDimSize(0) : ShapedType::kDynamic;
  int64_t wm = w.getRank() > 1 ? w.getDimSize(1) : ShapedType::kDynamic;
  if (failed(verifyConvOperands(loc, *x, w, group, wc, wc, "W.dim0")))
    return failure();
  ArrayRef<int64_t> input = x->getShape().drop_front(2);
  size_t rank = input.size();
  FailureOr<Geometry> g =
      getGeometry(loc, rank, w.getShape().drop_front(2), attrs);
  if (failed(g))
    return failure();
  auto padding = getWindowList(loc, "output_padding", outputPadding, rank, 0, 0,
                               std::to_string(rank) + " spatial dims");
  if (failed(padding))
    return failure();
  for (size_t i = 0; i < rank; ++i)
    if ((*padding)[i] >= std::max(g->strides[i], g->dilations[i]))
      return emitOptionalError(loc, "output_padding[", i, "] is ",
                               (*padding)[i],
                               " but must be smaller than the stride ",
                               g->strides[i], " or the dilation ",
                               g->dilations[i]);
  SmallVector<int64_t> shape{x->getDimSize(0),
                             isDyn(wm) ? wm : wm * group};
  if (outputShape) {
    // Some exporters write the full N x C x ... shape; use its spatial part.
    ArrayRef<int64_t> spatial = *outputShape;
    if (spatial.size() == rank + 2)
      spatial = spatial.drop_front(2);
    if (spatial.size() != rank)
      return emitOptionalError(loc, "output_shape has ", outputShape->size(),
                               " entries but the input has ", rank,
                               " spatial dims");
    shape.append(spatial.begin(), spatial.end());
    return shape;
  }
  for (size_t i = 0; i < rank; ++i) {
    int64_t in = input[i], stride = g->strides[i], extent = g->extent(i);
    if (isDyn(in) || (!g->same && isDyn(extent))) {
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    if (g->same) {
      shape.push_back(in * stride);
      continue;
    }
    int64_t pads = g->valid ? 0 : g->padBegin(i) + g->padEnd(i);
    int64_t out = stride * (in - 1) + (*padding)[i] + extent - pads;
    if (out < 1)
      return emitOptionalError(loc, "spatial dim ", i, " of the output would ",
                               "be ", out, " (input ", in, ", pads ", pads, ")");
    shape.push_back(out);
  }
  return shape;
}

FailureOr<SmallVector<int64_t>> inferPoolShape(std::optional<Location> loc,
                                               Type xType,
                                               const WindowAttrs &attrs) {
  auto x = getWindowedOperand(loc, xType, "X");
  if (failed(x))
    return failure();
  auto spatial =
      inferWindowOutputDims(loc, x->getShape().drop_front(2), {}, attrs);
  if (failed(spatial))
    return failure();
  SmallVector<int64_t> shape(x->getShape().take_front(2));
  shape.append(*spatial);
  return shape;
}

LogicalResult inferGlobalPoolType(std::optional<Location> loc, Value x,
                                  SmallVectorImpl<Type> &results) {
  auto type = getWindowedOperand(loc, x.getType(), "X");
  if (failed(type))
    return failure();
  SmallVector<int64_t> shape(type->getShape());
  std::fill(shape.begin() + 2, shape.end(), 1);
  results.push_back(type->clone(shape));
  return success();
}

LogicalResult verifySameElementType(std::optional<Location> loc, Value a,
                                    StringRef aName, Value b, StringRef bName) {
  Type ta = getElementTypeOrSelf(a), tb = getElementTypeOrSelf(b);
  if (ta == tb)
    return success();
  return emitOptionalError(loc, aName, " has element type ", ta, " but ", bName,
                           " has ", tb);
}

LogicalResult verifyChannelVector(std::optional<Location> loc, Value v,
                                  int64_t channels, StringRef name) {
  if (!v || isNone(v))
    return success();
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() != 1)
    return emitOptionalError(loc, name, " must be 1-D, got ", type);
  int64_t size = type.getDimSize(0);
  if (!isDyn(size) && !isDyn(channels) && size != channels)
    return emitOptionalError(loc, name, " has ", size, " elements but ",
                             channels, " channels are needed");
  return success();
}

} // namespace kiln
