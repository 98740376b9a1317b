//===- Attention.cpp - Attention and rotary embedding ---------------------===//
//
// Lowering of kiln.attention (the scores, a softmax along the keys, then
// P·V, as linalg.generic ops) and kiln.rotary_embedding (one generic) to
// linalg. Half-precision inputs compute in f32.
//
//===----------------------------------------------------------------------===//

#include "NN.h"

#include "kiln/Dialect/KilnOps.h"

using namespace mlir;
using namespace kiln::lowering;

namespace {

/// kiln.attention: the scores Q·Kᵀ (a generic over [B, Hkv, rep, Sq, Skv,
/// D], query head h = g * rep + r reading KV head g, so grouped KV heads
/// are never copied), scaled and masked (float mask added, i1 mask and the
/// bottom-right causal mask replacing scores by the lowest finite value),
/// a max-shifted softmax along the keys, then P·V. Both layouts are read in
/// place through the maps. Half-precision inputs compute in f32.
struct AttentionLowering : OpConversionPattern<kiln::AttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    Value q = adaptor.getQ(), k = adaptor.getK(), v = adaptor.getV();
    Value mask = adaptor.getMask();
    bool bshd = op.isBSHD();
    auto qType = tensorType(q), kType = tensorType(k), vType = tensorType(v);
    if (qType.getRank() != 4 || kType.getRank() != 4 || vType.getRank() != 4)
      return unsupported(op, "Q, K and V must be 4-D");
    int64_t heads = op.getNumHeads(), kvHeads = op.getNumKvHeads();
    if (kvHeads < 1 || heads % kvHeads != 0)
      return unsupported(op, "num_heads not a multiple of num_kv_heads");
    int64_t rep = heads / kvHeads;
    int64_t seqDim = bshd ? 1 : 2;
    int64_t batch = qType.getDimSize(0), sq = qType.getDimSize(seqDim);
    int64_t skv = kType.getDimSize(seqDim), depth = qType.getDimSize(3);
    int64_t dv = vType.getDimSize(3);
    Type elementType = resultType.getElementType();
    Type ct = computeType(elementType);
    auto d = [&](unsigned i) { return getAffineDimExpr(i, context); };

    // Q as [B, Hkv, rep, Sq, D] (bshd: [B, Sq, Hkv, rep, D]).
    SmallVector<int64_t> qShape =
        bshd ? SmallVector<int64_t>{batch, sq, kvHeads, rep, depth}
             : SmallVector<int64_t>{batch, kvHeads, rep, sq, depth};
    Value qv = reshapeTo(rewriter, loc, q, qShape);
    // Scores: loops (b, g, r, i, j, d).
    auto map6 = [&](ArrayRef<AffineExpr> exprs) {
      return AffineMap::get(6, 0, exprs, context);
    };
    AffineMap qMap = bshd ? map6({d(0), d(3), d(1), d(2), d(5)})
                          : map6({d(0), d(1), d(2), d(3), d(5)});
    AffineMap kMap = bshd ? map6({d(0), d(4), d(1), d(5)})
                          : map6({d(0), d(1), d(4), d(5)});
    auto scoreType =
        RankedTensorType::get({batch, kvHeads, rep, sq, skv}, ct);
    Value scores = buildGeneric(
        rewriter, loc, {qv, k},
        filledTensor(rewriter, loc, scoreType,
                     scalarConstant(rewriter, loc, ct, 0)),
        {qMap, kMap, map6({d(0), d(1), d(2), d(3), d(4)})},
        {IteratorType::parallel, IteratorType::parallel,
         IteratorType::parallel, IteratorType::parallel,
         IteratorType::parallel, IteratorType::reduction},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value product =
              arith::MulFOp::create(b, l, extendScalar(b, l, args[0], ct),
                                    extendScalar(b, l, args[1], ct));
          return arith::AddFOp::create(b, l, args[2], product);
        });

    // Scale and masks over (b, g, r, i, j).
    auto map5 = [&](ArrayRef<AffineExpr> exprs) {
      return AffineMap::get(5, 0, exprs, context);
    };
    AffineMap id5 = AffineMap::getMultiDimIdentityMap(5, context);
    SmallVector<Value> inputs{scores};
    SmallVector<AffineMap> maps{id5};
    bool boolMask = false;
    if (!isNone(mask)) {
      auto maskType = tensorType(mask);
      // The mask broadcasts right-aligned against [B, H, Sq, Skv].
      SmallVector<int64_t> full{batch, heads, sq, skv};
      SmallVector<AffineExpr> fullExprs{d(0), d(1) * rep + d(2), d(3), d(4)};
      SmallVector<AffineExpr> exprs;
      int64_t offset = 4 - maskType.getRank();
      if (offset < 0)
        return unsupported(op, "mask of rank > 4");
      for (int64_t i = 0; i < maskType.getRank(); ++i) {
        bool broadcast =
            maskType.getDimSize(i) == 1 && full[offset + i] != 1;
        exprs.push_back(broadcast ? getAffineConstantExpr(0, context)
                                  : fullExprs[offset + i]);
      }
      inputs.push_back(mask);
      maps.push_back(map5(exprs));
      boolMask = maskType.getElementType().isInteger(1);
    }
    maps.push_back(id5);
    double scale = op.getScale().convertToDouble();
    bool causal = op.getCausal();
    const llvm::fltSemantics &semantics =
        cast<FloatType>(elementType).getFloatSemantics();
    double lowest = APFloat::getLargest(semantics, /*Negative=*/true)
                        .convertToDouble();
    Value masked = buildGeneric(
        rewriter, loc, inputs, emptyTensor(rewriter, loc, scoreType), maps,
        SmallVector<IteratorType>(5, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value s = arith::MulFOp::create(b, l, args[0],
                                          scalarConstant(b, l, ct, scale));
          Value low = scalarConstant(b, l, ct, lowest);
          if (inputs.size() > 1) {
            if (boolMask)
              s = arith::SelectOp::create(b, l, args[1], s, low);
            else
              s = arith::AddFOp::create(b, l, s,
                                        extendScalar(b, l, args[1], ct));
          }
          if (causal) {
            Value i = linalg::IndexOp::create(b, l, 3);
            Value j = linalg::IndexOp::create(b, l, 4);
            Value limit = arith::AddIOp::create(
                b, l, i, arith::ConstantIndexOp::create(b, l, skv - sq));
            Value keep = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::sle, j, limit);
            s = arith::SelectOp::create(b, l, keep, s, low);
          }
          return s;
        });

    // Softmax along j.
    AxisMaps axis(5, {4}, context);
    Value max = reduceDims(
        rewriter, loc, masked, {id5}, scoreType.getShape(), axis.reducedDims,
        ct, lowestValue(rewriter, loc, ct),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::MaximumFOp::create(b, l, args[0], args[1]);
        });
    Value sum = reduceDims(
        rewriter, loc, {masked, max}, {id5, axis.reduced},
        scoreType.getShape(), axis.reducedDims, ct,
        scalarConstant(rewriter, loc, ct, 0),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value e = math::ExpOp::create(
              b, l, arith::SubFOp::create(b, l, args[0], args[1]));
          return arith::AddFOp::create(b, l, e, args[2]);
        });
    Value probs = buildGeneric(
        rewriter, loc, {masked, max, sum},
        emptyTensor(rewriter, loc, scoreType),
        {id5, axis.reduced, axis.reduced, id5},
        SmallVector<IteratorType>(5, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value e = math::ExpOp::create(
              b, l, arith::SubFOp::create(b, l, args[0], args[1]));
          return arith::DivFOp::create(b, l, e, args[2]);
        });

    // Y = P·V: loops (b, g, r, i, e, j).
    AffineMap pMap = map6({d(0), d(1), d(2), d(3), d(5)});
    AffineMap vMap = bshd ? map6({d(0), d(5), d(1), d(4)})
                          : map6({d(0), d(1), d(5), d(4)});
    AffineMap yMap = bshd ? map6({d(0), d(3), d(1), d(2), d(4)})
                          : map6({d(0), d(1), d(2), d(3), d(4)});
    SmallVector<int64_t> yShape =
        bshd ? SmallVector<int64_t>{batch, sq, kvHeads, rep, dv}
             : SmallVector<int64_t>{batch, kvHeads, rep, sq, dv};
    Value y = buildGeneric(
        rewriter, loc, {probs, v},
        filledTensor(rewriter, loc, RankedTensorType::get(yShape, ct),
                     scalarConstant(rewriter, loc, ct, 0)),
        {pMap, vMap, yMap},
        {IteratorType::parallel, IteratorType::parallel,
         IteratorType::parallel, IteratorType::parallel,
         IteratorType::parallel, IteratorType::reduction},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value product = arith::MulFOp::create(
              b, l, args[0], extendScalar(b, l, args[1], ct));
          return arith::AddFOp::create(b, l, args[2], product);
        });
    y = truncateTensor(rewriter, loc, y, elementType);
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, y, resultType.getShape()));
    return success();
  }
};

/// kiln.rotary_embedding (rotate-half): one generic over X reading the
/// partner feature (i +- D/2) with tensor.extract:
/// Y = X * cos + rotate_half(X) * sin.
struct RotaryEmbeddingLowering : OpConversionPattern<kiln::RotaryEmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::RotaryEmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value x = adaptor.getX();
    auto type = tensorType(x);
    int64_t rank = type.getRank();
    if (rank < 1)
      return unsupported(op, "rank-0 X");
    int64_t depth = type.getDimSize(rank - 1);
    if (depth % 2 != 0)
      return unsupported(op, "odd last dim");
    int64_t half = depth / 2;
    Type elementType = type.getElementType(), ct = computeType(elementType);
    Value cos = adaptor.getCos(), sin = adaptor.getSin();
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, context);
    Value result = buildGeneric(
        rewriter, loc, {x, cos, sin}, emptyTensor(rewriter, loc, type),
        {id, broadcastMap(tensorType(cos).getShape(), type.getShape(), context),
         broadcastMap(tensorType(sin).getShape(), type.getShape(), context),
         id},
        SmallVector<IteratorType>(rank, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          SmallVector<Value> indices;
          for (int64_t i = 0; i < rank; ++i)
            indices.push_back(linalg::IndexOp::create(b, l, i));
          Value last = indices.back();
          Value firstHalf = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::slt, last,
              arith::ConstantIndexOp::create(b, l, half));
          Value up = arith::AddIOp::create(
              b, l, last, arith::ConstantIndexOp::create(b, l, half));
          Value down = arith::SubIOp::create(
              b, l, last, arith::ConstantIndexOp::create(b, l, half));
          indices.back() = arith::SelectOp::create(b, l, firstHalf, up, down);
          Value partner = extendScalar(
              b, l, tensor::ExtractOp::create(b, l, x, indices), ct);
          Value rotated = arith::SelectOp::create(
              b, l, firstHalf, arith::NegFOp::create(b, l, partner), partner);
          // (One op per statement: argument order is the host
          // compiler's choice.)
          Value xv = extendScalar(b, l, args[0], ct);
          Value cosv = extendScalar(b, l, args[1], ct);
          Value sinv = extendScalar(b, l, args[2], ct);
          Value direct = arith::MulFOp::create(b, l, xv, cosv);
          Value turned = arith::MulFOp::create(b, l, rotated, sinv);
          Value y = arith::AddFOp::create(b, l, direct, turned);
          return truncateScalar(b, l, y, elementType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void kiln::lowering::populateAttentionPatterns(const TypeConverter &converter,
                                               RewritePatternSet &patterns) {
  patterns.add<AttentionLowering, RotaryEmbeddingLowering>(
      converter, patterns.getContext());
}
