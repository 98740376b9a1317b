//===- AttentionOps.cpp - kiln.attention and kiln.linear_attention --------===//
//
// Shape errors are reported by inferReturnTypes (at the op's location, so
// builders see them too); checks of attributes that do not affect the result
// type are in the verifiers.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnAttentionOps.cpp.inc"

static bool isDyn(int64_t d) { return ShapedType::isDynamic(d); }

/// Fails unless the static ones among `dims` (named by `names`) agree; returns
/// the common size, or kDynamic when every one is dynamic.
static FailureOr<int64_t>
commonDim(std::optional<Location> loc, StringRef what,
          ArrayRef<std::pair<int64_t, StringRef>> dims) {
  int64_t known = ShapedType::kDynamic;
  StringRef knownName;
  for (auto [d, name] : dims) {
    if (isDyn(d))
      continue;
    if (!isDyn(known) && d != known)
      return emitOptionalError(loc, what, " is ", known, " in ", knownName,
                               " but ", d, " in ", name);
    known = d;
    knownName = name;
  }
  return known;
}

/// The result type of kiln.attention / kiln.linear_attention: Q, K, V of
/// rank 4 with one element type, the head counts consistent with the
/// attributes, `[B, num_heads, Sq, Dv]` (or `[B, Sq, num_heads, Dv]` when
/// `bshd`, where every operand has its head and sequence dims swapped).
/// `mask` may be null; it broadcasts against the scores [B, H, Sq, Skv] in
/// either layout.
static LogicalResult inferAttentionType(std::optional<Location> loc, Value q,
                                        Value k, Value v, Value mask,
                                        IntegerAttr numHeadsAttr,
                                        IntegerAttr numKvHeadsAttr, bool bshd,
                                        SmallVectorImpl<Type> &results) {
  if (!numHeadsAttr || !numKvHeadsAttr)
    return emitOptionalError(loc, "num_heads and num_kv_heads are required");
  auto qt = cast<RankedTensorType>(q.getType());
  auto kt = cast<RankedTensorType>(k.getType());
  auto vt = cast<RankedTensorType>(v.getType());
  for (auto [t, name] :
       {std::pair(qt, "Q"), std::pair(kt, "K"), std::pair(vt, "V")})
    if (t.getRank() != 4)
      return emitOptionalError(loc, name, " must have rank 4 (",
                               bshd ? "[B, seq, heads, head_dim]"
                                    : "[B, heads, seq, head_dim]",
                               "), got ", t);
  Type element = qt.getElementType();
  if (kt.getElementType() != element || vt.getElementType() != element)
    return emitOptionalError(loc, "Q, K and V must have one element type, got ",
                             qt, ", ", kt, " and ", vt);

  // Positions of the head and sequence dims in Q, K, V and the result.
  const unsigned headDimPos = bshd ? 2 : 1, seqDimPos = bshd ? 1 : 2;
  int64_t heads = numHeadsAttr.getInt(), kvHeads = numKvHeadsAttr.getInt();
  if (heads < 1 || kvHeads < 1)
    return emitOptionalError(loc, "num_heads (", heads, ") and num_kv_heads (",
                             kvHeads, ") must be >= 1");
  if (heads % kvHeads != 0)
    return emitOptionalError(loc, "num_heads ", heads,
                             " is not a multiple of num_kv_heads ", kvHeads);
  if (!isDyn(qt.getDimSize(headDimPos)) && qt.getDimSize(headDimPos) != heads)
    return emitOptionalError(loc, "Q has ", qt.getDimSize(headDimPos),
                             " heads but num_heads is ", heads);
  for (auto [t, name] : {std::pair(kt, "K"), std::pair(vt, "V")})
    if (!isDyn(t.getDimSize(headDimPos)) &&
        t.getDimSize(headDimPos) != kvHeads)
      return emitOptionalError(loc, name, " has ", t.getDimSize(headDimPos),
                               " heads but num_kv_heads is ", kvHeads);

  FailureOr<int64_t> batch = commonDim(loc, "the batch dim",
                                       {{qt.getDimSize(0), "Q"},
                                        {kt.getDimSize(0), "K"},
                                        {vt.getDimSize(0), "V"}});
  FailureOr<int64_t> headDim = commonDim(
      loc, "the head dim", {{qt.getDimSize(3), "Q"}, {kt.getDimSize(3), "K"}});
  FailureOr<int64_t> kvLen = commonDim(
      loc, "the key length",
      {{kt.getDimSize(seqDimPos), "K"}, {vt.getDimSize(seqDimPos), "V"}});
  if (failed(batch) || failed(headDim) || failed(kvLen))
    return failure();

  if (mask && !isNone(mask)) {
    auto mt = cast<RankedTensorType>(mask.getType());
    if (!mt.getElementType().isInteger(1) && mt.getElementType() != element)
      return emitOptionalError(loc, "mask must be i1 or have Q's element type ",
                               element, ", got ", mt);
    if (mt.getRank() > 4)
      return emitOptionalError(loc, "mask must have rank <= 4, got ", mt);
    int64_t qLen = qt.getDimSize(seqDimPos);
    int64_t scores[4] = {*batch, heads, qLen, *kvLen};
    for (int64_t i = 0; i < mt.getRank(); ++i) {
      int64_t m = mt.getDimSize(i), s = scores[4 - mt.getRank() + i];
      if (isDyn(m) || m == 1 || isDyn(s) || m == s)
        continue;
      return emitOptionalError(loc, "mask ", mt,
                               " does not broadcast to the scores' shape [",
                               *batch, ", ", heads, ", ", qLen, ", ",
                               *kvLen, "] (? = dynamic)");
    }
  }

  int64_t qLen = qt.getDimSize(seqDimPos);
  if (bshd)
    results.push_back(tensorOf({*batch, qLen, heads, vt.getDimSize(3)}, element));
  else
    results.push_back(tensorOf({*batch, heads, qLen, vt.getDimSize(3)}, element));
  return success();
}

//===----------------------------------------------------------------------===//
// kiln.attention
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  StringRef layout = adaptor.getLayout();
  if (layout != "bhsd" && layout != "bshd")
    return emitOptionalError(loc, "layout '", layout,
                             "' is not one of bhsd, bshd");
  return inferAttentionType(loc, adaptor.getQ(), adaptor.getK(), adaptor.getV(),
                            adaptor.getMask(), adaptor.getNumHeadsAttr(),
                            adaptor.getNumKvHeadsAttr(), layout == "bshd",
                            results);
}

LogicalResult AttentionOp::verify() {
  if (!std::isfinite(getScale().convertToDouble()))
    return emitOpError("scale must be finite, got ")
           << getScale().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// kiln.linear_attention
//===----------------------------------------------------------------------===//

LogicalResult
LinearAttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &results) {
  return inferAttentionType(loc, adaptor.getQ(), adaptor.getK(), adaptor.getV(),
                            Value(), adaptor.getNumHeadsAttr(),
                            adaptor.getNumKvHeadsAttr(), /*bshd=*/false,
                            results);
}

LogicalResult LinearAttentionOp::verify() {
  StringRef map = getFeatureMap();
  if (map != "elu1" && map != "relu" && map != "exp")
    return emitOpError("feature_map '")
           << map << "' is not one of elu1, relu, exp";
  double eps = getEps().convertToDouble();
  if (!std::isfinite(eps) || eps < 0)
    return emitOpError("eps must be finite and >= 0, got ") << eps;
  return success();
}
