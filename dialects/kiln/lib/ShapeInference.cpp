//===- ShapeInference.cpp - Helpers for kiln result-type inference --------===//

#include "kiln/Dialect/ShapeInference.h"
#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln {

bool areCompatibleReturnTypes(TypeRange inferred, TypeRange actual) {
  if (inferred.size() != actual.size())
    return false;
  for (auto [want, have] : llvm::zip(inferred, actual)) {
    if (want == have)
      continue;
    auto wantT = dyn_cast<RankedTensorType>(want);
    auto haveT = dyn_cast<RankedTensorType>(have);
    if (!wantT || !haveT || wantT.getElementType() != haveT.getElementType() ||
        wantT.getRank() != haveT.getRank())
      return false;
    for (auto [w, h] : llvm::zip(wantT.getShape(), haveT.getShape()))
      if (!ShapedType::isDynamic(w) && !ShapedType::isDynamic(h) && w != h)
        return false;
  }
  return true;
}

FailureOr<RankedTensorType> joinTensorTypes(RankedTensorType a,
                                            RankedTensorType b) {
  if (a == b)
    return a;
  if (a.getElementType() != b.getElementType() || a.getRank() != b.getRank())
    return failure();
  SmallVector<int64_t> shape;
  for (auto [x, y] : llvm::zip(a.getShape(), b.getShape()))
    shape.push_back(x == y ? x : ShapedType::kDynamic);
  return RankedTensorType::get(shape, a.getElementType());
}

bool isNone(Value v) { return v && isa<NoneType>(v.getType()); }

FailureOr<SmallVector<int64_t>>
broadcastShapes(std::optional<Location> loc, ArrayRef<ArrayRef<int64_t>> shapes) {
  size_t rank = 0;
  for (ArrayRef<int64_t> s : shapes)
    rank = std::max(rank, s.size());
  SmallVector<int64_t> result(rank, 1);
  for (ArrayRef<int64_t> s : shapes) {
    size_t offset = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &r = result[offset + i];
      int64_t d = s[i];
      if (d == 1)
        continue;
      if (r == 1) {
        r = d;
        continue;
      }
      if (ShapedType::isDynamic(d))
        continue; // A dynamic dim broadcasts with a known one to that size.
      if (ShapedType::isDynamic(r)) {
        r = d;
        continue;
      }
      if (r != d)
        return emitOptionalError(loc, "operands are not broadcastable: dimension ",
                                 offset + i, " of the result is ", r,
                                 " in one operand and ", d, " in another");
    }
  }
  return result;
}

FailureOr<int64_t> normalizeAxis(std::optional<Location> loc, int64_t axis,
                                 int64_t rank, StringRef what) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return emitOptionalError(loc, what, " ", axis, " is out of range for rank ",
                             rank);
  return axis < 0 ? axis + rank : axis;
}

// getKnownIntValues, getKnownDims and getKnownFloatValues: KnownValues.cpp.

} // namespace kiln
