//===- AttentionMatchers.h - Shared matchers of the attention fusions -*- C++
//-*-===//
//
// Helpers shared by kiln-fuse-attention and kiln-fuse-linear-attention (and
// the decompositions): reading small constants (dense or dense_resource, and
// the unfolded ConstantOfShape/Trilu/Cast mask arithmetic), proving two dims
// equal, and recognising the grouped-query repetition of K and V. Header-only
// so that the passes stay self-contained.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_TRANSFORMS_ATTENTIONMATCHERS_H
#define KILN_LIB_TRANSFORMS_ATTENTIONMATCHERS_H

#include "kiln/Analysis/SymbolicShapes.h"
#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/ADT/APFloat.h"

#include <cmath>
#include <cstring>
#include <optional>

namespace kiln::attention {

/// A constant tensor read into doubles (booleans as 0/1), row-major.
struct ConstTensor {
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<double> values;
};

/// The largest constant evaluateConstant reads (a 2048x2048 mask).
constexpr int64_t kMaxConstElements = int64_t(1) << 22;

/// The elements of an ElementsAttr as doubles: dense (splat included) or
/// dense_resource (raw little-endian bytes, one byte per i1); std::nullopt
/// for other element types, an elided blob, or too many elements.
inline std::optional<llvm::SmallVector<double>>
readElements(mlir::ElementsAttr attr) {
  using namespace mlir;
  auto type = dyn_cast<RankedTensorType>(attr.getType());
  if (!type || !type.hasStaticShape() ||
      type.getNumElements() > kMaxConstElements)
    return std::nullopt;
  Type element = type.getElementType();
  int64_t count = type.getNumElements();
  llvm::SmallVector<double> out;
  out.reserve(count);
  auto intType = dyn_cast<IntegerType>(element);
  auto floatType = dyn_cast<FloatType>(element);
  if (!intType && !floatType)
    return std::nullopt;
  auto fromInt = [&](const llvm::APInt &i) {
    if (intType.getWidth() == 1 || intType.isUnsigned())
      return double(i.getZExtValue());
    return double(i.getSExtValue());
  };
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    if (floatType)
      for (const llvm::APFloat &f : dense.getValues<llvm::APFloat>())
        out.push_back(f.convertToDouble());
    else
      for (const llvm::APInt &i : dense.getValues<llvm::APInt>())
        out.push_back(fromInt(i));
    return out;
  }
  auto resource = dyn_cast<DenseResourceElementsAttr>(attr);
  if (!resource)
    return std::nullopt;
  AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  if (!blob)
    return std::nullopt;
  unsigned width = element.getIntOrFloatBitWidth();
  size_t bytes = width == 1 ? 1 : width / 8;
  if (width != 1 && (width % 8 != 0 || width > 64))
    return std::nullopt;
  llvm::ArrayRef<char> data = blob->getData();
  if (data.size() != size_t(count) * bytes)
    return std::nullopt;
  for (int64_t i = 0; i < count; ++i) {
    uint64_t raw = 0;
    std::memcpy(&raw, data.data() + i * bytes, bytes); // little-endian host
    unsigned w = width == 1 ? 8 : width;
    llvm::APInt bits(w, raw);
    if (floatType)
      out.push_back(
          llvm::APFloat(floatType.getFloatSemantics(), bits).convertToDouble());
    else if (width == 1)
      out.push_back(raw != 0);
    else
      out.push_back(fromInt(bits));
  }
  return out;
}

/// Evaluates `v` when it is a constant, or a ConstantOfShape / Trilu / Cast
/// of constants (the mask arithmetic that PyTorch exports before constant
/// folding), of static shape. Never creates IR.
inline std::optional<ConstTensor> evaluateConstant(mlir::Value v,
                                                   int depth = 0) {
  using namespace mlir;
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape() ||
      type.getNumElements() > kMaxConstElements || depth > 8)
    return std::nullopt;
  ConstTensor result;
  result.shape.assign(type.getShape().begin(), type.getShape().end());
  int64_t count = type.getNumElements();

  ElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr))) {
    auto values = readElements(attr);
    if (!values)
      return std::nullopt;
    result.values = std::move(*values);
    return result;
  }
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;

  if (auto cos = dyn_cast<ConstantOfShapeOp>(op)) {
    double fill = 0.0;
    if (auto value = cos.getValueAttr()) {
      auto values = readElements(value);
      if (!values || values->size() != 1)
        return std::nullopt;
      fill = (*values)[0];
    }
    result.values.assign(count, fill);
    return result;
  }

  if (auto trilu = dyn_cast<TriluOp>(op)) {
    auto input = evaluateConstant(trilu.getInput(), depth + 1);
    if (!input || result.shape.size() < 2)
      return std::nullopt;
    int64_t k = 0;
    if (!isNone(trilu.getK())) {
      auto kv = evaluateConstant(trilu.getK(), depth + 1);
      if (!kv || kv->values.size() != 1)
        return std::nullopt;
      k = int64_t(kv->values[0]);
    }
    int64_t rows = result.shape[result.shape.size() - 2];
    int64_t cols = result.shape.back();
    result.values = std::move(input->values);
    for (int64_t n = 0; n < count; ++n) {
      int64_t i = (n / cols) % rows, j = n % cols;
      bool keep = trilu.getUpper() ? j >= i + k : j <= i + k;
      if (!keep)
        result.values[n] = 0.0;
    }
    return result;
  }

  if (auto cast = dyn_cast<CastOp>(op)) {
    auto input = evaluateConstant(cast.getInput(), depth + 1);
    if (!input)
      return std::nullopt;
    Type to = cast.getTo();
    result.values = std::move(input->values);
    for (double &x : result.values) {
      if (to.isInteger(1)) {
        x = x != 0.0; // NaN != 0 is true, as ONNX casts it.
      } else if (auto f = dyn_cast<FloatType>(to)) {
        llvm::APFloat a(x);
        bool lost;
        a.convert(f.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven,
                  &lost);
        x = a.convertToDouble();
      } else if (isa<IntegerType>(to) && std::isfinite(x)) {
        x = std::trunc(x); // within range in any mask worth matching
      } else {
        return std::nullopt;
      }
    }
    return result;
  }
  return std::nullopt;
}

/// The value of a one-element constant (a scale, a fill value, eps).
inline std::optional<double> getScalarConstant(mlir::Value v) {
  auto c = evaluateConstant(v);
  if (!c || c->values.size() != 1)
    return std::nullopt;
  return c->values[0];
}

/// Proves dims equal: equal static sizes, the same dynamic dim
/// (kiln::canonicalDim: through transposes, same-type ops and reshapes that
/// copy it), or, for dims the graph relates by arithmetic and broadcasting
/// (a matmul's batch dim, an elementwise op's result, a Reshape's -1), the
/// same expression of the graph's symbols (kiln::SymbolicShapes). The
/// analysis runs on the enclosing function the first time it is needed,
/// so a matcher makes one DimEquality per match attempt: it sees the IR as
/// it is then.
class DimEquality {
public:
  explicit DimEquality(mlir::Operation *anchor) : anchor(anchor) {}

  /// Dim `da` of `a` and dim `db` of `b` are equal.
  bool same(mlir::Value a, int64_t da, mlir::Value b, int64_t db) {
    auto at = mlir::cast<mlir::RankedTensorType>(a.getType());
    auto bt = mlir::cast<mlir::RankedTensorType>(b.getType());
    int64_t x = at.getDimSize(da), y = bt.getDimSize(db);
    if (!mlir::ShapedType::isDynamic(x) && !mlir::ShapedType::isDynamic(y))
      return x == y;
    if (mlir::ShapedType::isDynamic(x) && mlir::ShapedType::isDynamic(y) &&
        canonicalDim(a, da) == canonicalDim(b, db))
      return true;
    const SymbolicShapes *s = analysis();
    if (!s)
      return false;
    std::optional<SymbolicDims> sa = s->shapeOf(a), sb = s->shapeOf(b);
    return sa && sb &&
           ((*sa)[da] == (*sb)[db] ||
            (*sa)[da].replace(defined) == (*sb)[db].replace(defined));
  }

private:
  const SymbolicShapes *analysis() {
    if (!computed) {
      computed = true;
      if (auto fn = anchor->getParentOfType<mlir::func::FuncOp>()) {
        shapes.emplace(fn);
        // A symbol that an equality the runtime checks defines (optimum's
        // attention_mask length `past_sequence_length + sequence_length`,
        // its own symbol, == the cache length plus the sequence length):
        // replaced by its definition when dims are compared.
        for (const ShapeConstraint &c : shapes->constraints()) {
          if (!c.equal)
            continue;
          if (mlir::isa<mlir::AffineSymbolExpr>(c.rhs))
            defined.try_emplace(c.rhs, c.lhs);
          else if (mlir::isa<mlir::AffineSymbolExpr>(c.lhs))
            defined.try_emplace(c.lhs, c.rhs);
        }
      }
    }
    return shapes ? &*shapes : nullptr;
  }

  mlir::Operation *anchor;
  bool computed = false;
  std::optional<SymbolicShapes> shapes;
  llvm::DenseMap<mlir::AffineExpr, mlir::AffineExpr> defined;
};

/// True when `small` broadcasts (numpy rules) to `big` without enlarging it:
/// rank <= big's, each dim 1 or known equal to big's.
inline bool broadcastsInto(DimEquality &dims, mlir::Value small,
                           mlir::Value big) {
  auto st = mlir::cast<mlir::RankedTensorType>(small.getType());
  auto bt = mlir::cast<mlir::RankedTensorType>(big.getType());
  if (st.getRank() > bt.getRank())
    return false;
  int64_t offset = bt.getRank() - st.getRank();
  for (int64_t i = 0; i < st.getRank(); ++i)
    if (st.getDimSize(i) != 1 && !dims.same(small, i, big, i + offset))
      return false;
  return true;
}

/// The value of element `index` of a shape-like operand, if known.
inline std::optional<KnownDim> knownEntry(mlir::Value shape, size_t index) {
  auto known = getKnownDims(shape);
  if (!known || index >= known->size())
    return std::nullopt;
  return (*known)[index];
}

/// True when dim `rd` of the Reshape `reshape`'s result is known to equal
/// dim `xd` of `x`: equal static sizes, or a target entry that copies it
/// (0 at the same index without allowzero, or the same dynamic dim).
inline bool reshapeKeepsDim(DimEquality &dims, ReshapeOp reshape, int64_t rd,
                            mlir::Value x, int64_t xd) {
  auto rt = reshape.getType();
  auto xt = mlir::cast<mlir::RankedTensorType>(x.getType());
  if (!mlir::ShapedType::isDynamic(rt.getDimSize(rd)) ||
      !mlir::ShapedType::isDynamic(xt.getDimSize(xd)))
    return rt.getDimSize(rd) == xt.getDimSize(xd);
  if (dims.same(reshape.getResult(), rd, x, xd))
    return true;
  auto entry = knownEntry(reshape.getShape(), rd);
  if (!entry)
    return false;
  if (entry->isKnown())
    return entry->value == 0 && reshape.getAllowzero() == 0 &&
           dims.same(reshape.getData(), rd, x, xd);
  auto [dimOf, dim] = canonicalDim(x, xd);
  return entry->isDimOf(dimOf, dim);
}

/// True when dim `ed` of the Expand `expand`'s result is known to equal dim
/// `xd` of `x`, where `x` (after an Unsqueeze) is its input.
inline bool expandKeepsDim(DimEquality &dims, ExpandOp expand, int64_t ed,
                           mlir::Value x, int64_t xd) {
  auto et = expand.getType();
  auto xt = mlir::cast<mlir::RankedTensorType>(x.getType());
  if (!mlir::ShapedType::isDynamic(et.getDimSize(ed)) ||
      !mlir::ShapedType::isDynamic(xt.getDimSize(xd)))
    return et.getDimSize(ed) == xt.getDimSize(xd);
  if (dims.same(expand.getResult(), ed, x, xd))
    return true;
  auto entry = knownEntry(expand.getShape(), ed);
  if (!entry)
    return false;
  if (entry->isKnown())
    return entry->value == 1; // a 1 keeps the input dim
  auto [dimOf, dim] = canonicalDim(x, xd);
  return entry->isDimOf(dimOf, dim);
}

/// The constant axes of an Unsqueeze (operand or attribute form).
inline std::optional<llvm::SmallVector<int64_t>> unsqueezeAxes(UnsqueezeOp op) {
  if (auto attr = op.getAxesAttr())
    return llvm::SmallVector<int64_t>(attr.asArrayRef());
  if (isNone(op.getAxesInput()))
    return std::nullopt;
  auto known = getKnownIntValues(op.getAxesInput());
  if (!known || llvm::any_of(*known, [](int64_t a) {
        return mlir::ShapedType::isDynamic(a);
      }))
    return std::nullopt;
  return known;
}

/// Known values of a Tile's repeats, all of them known.
inline std::optional<llvm::SmallVector<int64_t>> tileRepeats(TileOp op) {
  auto known = getKnownIntValues(op.getRepeats());
  if (!known || llvm::any_of(*known, [](int64_t a) {
        return mlir::ShapedType::isDynamic(a);
      }))
    return std::nullopt;
  return known;
}

/// K or V before their grouped-query repetition.
struct RepeatedKV {
  mlir::Value source; ///< [B, KV, S, D]
  int64_t repeats;    ///< the result has KV * repeats heads
};

/// Recognises `repeated` ([B, KV*rep, S, D]) as the head repetition that
/// gives query head h the KV head h / rep (PyTorch's repeat_kv and
/// repeat_interleave(x, rep, dim=1)), in the forms exporters emit:
///   Reshape(Expand(Unsqueeze(x, axes=[2]), [B, KV, rep, S, D]), [B, KV*rep, S,
///   D]) Reshape(Tile(Unsqueeze(x, axes=[2]), [1, 1, rep, 1, 1]), [B, KV*rep,
///   S, D]) Reshape(Tile(x, [1, 1, rep, 1]), [B, KV*rep, S, D])
/// Tile(x, [1, rep, 1, 1]) repeats the other way round (head h reads h % KV)
/// and is not matched. KV and rep must be static.
inline std::optional<RepeatedKV> matchRepeatedKV(DimEquality &dims,
                                                 mlir::Value repeated) {
  using namespace mlir;
  auto reshape = repeated.getDefiningOp<ReshapeOp>();
  if (!reshape || reshape.getType().getRank() != 4)
    return std::nullopt;
  auto out = reshape.getType();
  Value in = reshape.getData();
  auto inType = cast<RankedTensorType>(in.getType());

  Value x;
  int64_t rep = 0;
  bool unsqueezed = inType.getRank() == 5;
  if (unsqueezed) {
    Operation *repeatOp = in.getDefiningOp();
    Value u;
    if (auto expand = dyn_cast_or_null<ExpandOp>(repeatOp))
      u = expand.getInput();
    else if (auto tile = dyn_cast_or_null<TileOp>(repeatOp))
      u = tile.getInput();
    else
      return std::nullopt;
    auto unsqueeze = u.getDefiningOp<UnsqueezeOp>();
    if (!unsqueeze)
      return std::nullopt;
    auto axes = unsqueezeAxes(unsqueeze);
    if (!axes || axes->size() != 1 || ((*axes)[0] != 2 && (*axes)[0] != -3))
      return std::nullopt;
    x = unsqueeze.getData();
    if (cast<RankedTensorType>(x.getType()).getRank() != 4)
      return std::nullopt;
    rep = inType.getDimSize(2);
    if (ShapedType::isDynamic(rep) ||
        ShapedType::isDynamic(inType.getDimSize(1)))
      return std::nullopt;
    if (auto expand = dyn_cast<ExpandOp>(repeatOp)) {
      if (!expandKeepsDim(dims, expand, 0, x, 0) ||
          !expandKeepsDim(dims, expand, 1, x, 1) ||
          !expandKeepsDim(dims, expand, 3, x, 2) ||
          !expandKeepsDim(dims, expand, 4, x, 3))
        return std::nullopt;
    } else {
      auto repeats = tileRepeats(cast<TileOp>(repeatOp));
      if (!repeats || *repeats != llvm::ArrayRef<int64_t>({1, 1, rep, 1, 1}))
        return std::nullopt;
    }
  } else if (inType.getRank() == 4) {
    auto tile = in.getDefiningOp<TileOp>();
    if (!tile)
      return std::nullopt;
    auto repeats = tileRepeats(tile);
    if (!repeats || repeats->size() != 4 || (*repeats)[0] != 1 ||
        (*repeats)[1] != 1 || (*repeats)[3] != 1)
      return std::nullopt;
    rep = (*repeats)[2];
    x = tile.getInput();
  } else {
    return std::nullopt;
  }

  auto xt = cast<RankedTensorType>(x.getType());
  int64_t kv = xt.getDimSize(1);
  if (ShapedType::isDynamic(kv) || rep < 1 || out.getDimSize(1) != kv * rep)
    return std::nullopt;
  // Head dim: static and equal, or copied.
  bool headDimOk = !ShapedType::isDynamic(out.getDimSize(3)) &&
                   out.getDimSize(3) == xt.getDimSize(3);
  // Batch and sequence: when the head dims match, the element count fixes
  // one of them once the other is known.
  bool batchOk = reshapeKeepsDim(dims, reshape, 0, x, 0);
  bool seqOk = reshapeKeepsDim(dims, reshape, 2, x, 2);
  if (!headDimOk) {
    if (!reshapeKeepsDim(dims, reshape, 3, x, 3))
      return std::nullopt;
    if (!(batchOk && seqOk))
      return std::nullopt;
  } else if (!batchOk && !seqOk) {
    return std::nullopt;
  }
  return RepeatedKV{x, rep};
}

} // namespace kiln::attention

#endif // KILN_LIB_TRANSFORMS_ATTENTIONMATCHERS_H
