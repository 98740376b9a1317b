//===- MatMul.cpp - Lowering of MatMul, Gemm and Einsum to linalg ---------===//
//
// MatMul and Gemm become linalg.matmul / linalg.batch_matmul (batch dims
// broadcast and collapsed into one), Einsum one linalg.generic, and
// kiln.fused_matmul the numpy matmul followed by one elementwise epilogue.
// float16/bfloat16 inputs accumulate in f32, truncated once at the end.
//
//===----------------------------------------------------------------------===//

#include "NN.h"

#include "kiln/Dialect/KilnOps.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"

#include <map>

using namespace mlir;
using namespace kiln::lowering;

namespace {

//===----------------------------------------------------------------------===//
// MatMul, Gemm
//===----------------------------------------------------------------------===//

/// `acc` = lhs x rhs for 2-D lhs/rhs with linalg.matmul, accumulating into a
/// zero-filled tensor of `accType` elements (named ops extend their inputs).
Value buildMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                  Type accType) {
  auto type = RankedTensorType::get(
      {tensorType(lhs).getDimSize(0), tensorType(rhs).getDimSize(1)}, accType);
  SmallVector<Value> sizes;
  if (type.isDynamicDim(0))
    sizes.push_back(dimOf(b, loc, lhs, 0));
  if (type.isDynamicDim(1))
    sizes.push_back(dimOf(b, loc, rhs, 1));
  Value init =
      filledTensor(b, loc, type, scalarConstant(b, loc, accType, 0), sizes);
  return linalg::MatmulOp::create(b, loc, TypeRange{init.getType()},
                                  ValueRange{lhs, rhs}, ValueRange{init})
      .getResult(0);
}

/// The value of `b` when it is a splat float constant: a weight that an
/// exporter wrote as ConstantOfShape, or an Expand of one value.
std::optional<double> splatWeight(Value b) {
  DenseElementsAttr attr = constantElements(b);
  if (!attr || !attr.isSplat() || !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

/// Whether `lhs` times the 2-D kiln value `b` takes buildSplatRhsMatmul: `b`
/// a float splat constant, static shapes, `lhs` of rank 2 or more.
bool isSplatRhsMatmul(Value lhs, Value b, RankedTensorType resultType) {
  auto lhsType = tensorType(lhs);
  return splatWeight(b) && tensorType(b).getRank() == 2 &&
         lhsType.getRank() >= 2 && lhsType.hasStaticShape() &&
         resultType.hasStaticShape() &&
         isa<FloatType>(resultType.getElementType());
}

/// `lhs` [..., M, K] times a K x N matrix whose every element is `value`:
/// each row of the product is value * sum_k lhs[..., m, k] in all N
/// columns. A reduction over K and a broadcast over N, in `accType`,
/// instead of a GEMM that reads a K x N splat filled in every run (66% of
/// an AlexNet-style model's time went to transposing such a weight, whose
/// Gemm had transB).
Value buildSplatRhsMatmul(OpBuilder &b, Location loc, Value lhs, double value,
                          int64_t n, Type accType) {
  auto lhsType = tensorType(lhs);
  int64_t rank = lhsType.getRank();
  MLIRContext *context = b.getContext();
  SmallVector<bool> reduced(rank, false);
  reduced.back() = true;
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, context);
  Value sums =
      reduceDims(b, loc, lhs, {identity}, lhsType.getShape(), reduced, accType,
                 scalarConstant(b, loc, accType, 0),
                 [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
                   return arith::AddFOp::create(
                       nb, nl, extendScalar(nb, nl, args[0], accType), args[1]);
                 });
  SmallVector<int64_t> shape(lhsType.getShape());
  shape.back() = n;
  return buildParallel(
      b, loc, sums, {identity.getMajorSubMap(rank - 1)},
      RankedTensorType::get(shape, accType),
      [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
        return arith::MulFOp::create(nb, nl, args[0],
                                     scalarConstant(nb, nl, accType, value));
      });
}

/// numpy matmul (ONNX MatMul) of `lhs` and `rhs` into a tensor of
/// `resultShape` with element type `accType` (the inputs are extended by the
/// named ops). 2-D x 2-D is one linalg.matmul; an N-D lhs against a 2-D rhs
/// folds its batch dims into the rows; otherwise both operands are broadcast
/// to the common batch dims, collapsed to one batch dim, and multiplied with
/// linalg.batch_matmul.
Value buildNumpyMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                       ArrayRef<int64_t> resultShape, Type accType) {
  // numpy promotion of 1-D operands.
  if (tensorType(lhs).getRank() == 1)
    lhs = reshapeTo(b, loc, lhs, {1, tensorType(lhs).getDimSize(0)});
  if (tensorType(rhs).getRank() == 1)
    rhs = reshapeTo(b, loc, rhs, {tensorType(rhs).getDimSize(0), 1});
  auto lhsType = tensorType(lhs), rhsType = tensorType(rhs);
  int64_t m = lhsType.getDimSize(lhsType.getRank() - 2);
  int64_t k = lhsType.getDimSize(lhsType.getRank() - 1);
  int64_t n = rhsType.getDimSize(rhsType.getRank() - 1);
  ArrayRef<int64_t> lhsBatch = lhsType.getShape().drop_back(2);
  ArrayRef<int64_t> rhsBatch = rhsType.getShape().drop_back(2);

  Value product;
  SmallVector<int64_t> productShape;
  if (rhsBatch.empty()) {
    // [batch..., M, K] x [K, N]: the batch dims are more rows.
    int64_t rows = m;
    for (int64_t d : lhsBatch)
      rows = ShapedType::isDynamic(rows) || ShapedType::isDynamic(d)
                 ? ShapedType::kDynamic
                 : rows * d;
    Value flat = reshapeTo(b, loc, lhs, {rows, k});
    product = buildMatmul(b, loc, flat, rhs, accType);
    productShape.assign(lhsBatch.begin(), lhsBatch.end());
  } else {
    // Broadcast the batch dims (right-aligned, 1 stretches).
    size_t batchRank = std::max(lhsBatch.size(), rhsBatch.size());
    SmallVector<int64_t> batch(batchRank, 1);
    for (size_t i = 0; i < batchRank; ++i) {
      int64_t l = i + lhsBatch.size() >= batchRank
                      ? lhsBatch[i + lhsBatch.size() - batchRank]
                      : 1;
      int64_t r = i + rhsBatch.size() >= batchRank
                      ? rhsBatch[i + rhsBatch.size() - batchRank]
                      : 1;
      // A dynamic dim meets 1 or itself (dynamic dims never broadcast).
      if (ShapedType::isDynamic(l))
        batch[i] = ShapedType::isDynamic(r) || r == 1 ? l : r;
      else if (ShapedType::isDynamic(r))
        batch[i] = l == 1 ? r : l;
      else
        batch[i] = std::max(l, r);
    }
    int64_t batchSize = 1;
    for (int64_t d : batch)
      batchSize = ShapedType::isDynamic(batchSize) || ShapedType::isDynamic(d)
                      ? ShapedType::kDynamic
                      : batchSize * d;
    auto toBatched = [&](Value operand, int64_t rows, int64_t cols) {
      SmallVector<int64_t> full(batch);
      full.append({rows, cols});
      auto type = tensorType(operand);
      if (type.getShape() != ArrayRef<int64_t>(full))
        operand = buildElementwise(
            b, loc, operand, type.clone(full),
            [](OpBuilder &, Location, ValueRange args) { return args[0]; });
      if (batchRank == 1)
        return operand;
      if (ShapedType::isDynamic(batchSize) || ShapedType::isDynamic(rows)) {
        // The batch dims collapse into one (an explicit grouping: with
        // dynamic dims the grouping cannot be inferred from the shapes).
        SmallVector<ReassociationIndices> groups(1);
        for (size_t i = 0; i < batchRank; ++i)
          groups[0].push_back(i);
        groups.push_back({int64_t(batchRank)});
        groups.push_back({int64_t(batchRank) + 1});
        return (Value)tensor::CollapseShapeOp::create(b, loc, operand, groups);
      }
      return reshapeTo(b, loc, operand, {batchSize, rows, cols});
    };
    Value lhs3 = toBatched(lhs, m, k), rhs3 = toBatched(rhs, k, n);
    auto initType = RankedTensorType::get({batchSize, m, n}, accType);
    SmallVector<Value> sizes;
    if (initType.isDynamicDim(0))
      sizes.push_back(dimOf(b, loc, lhs3, 0));
    if (initType.isDynamicDim(1))
      sizes.push_back(dimOf(b, loc, lhs3, 1));
    if (initType.isDynamicDim(2))
      sizes.push_back(dimOf(b, loc, rhs3, 2));
    Value init = filledTensor(b, loc, initType,
                              scalarConstant(b, loc, accType, 0), sizes);
    product = linalg::BatchMatmulOp::create(b, loc,
                                            TypeRange{init.getType()},
                                            ValueRange{lhs3, rhs3},
                                            ValueRange{init})
                  .getResult(0);
    productShape = batch;
    if (batchRank > 1 && !tensorType(product).hasStaticShape()) {
      // Back to the batch dims, their sizes from the (broadcast) operands.
      SmallVector<ReassociationIndices> groups(1);
      SmallVector<OpFoldResult> sizes;
      for (size_t i = 0; i < batchRank; ++i) {
        groups[0].push_back(i);
        if (!ShapedType::isDynamic(batch[i])) {
          sizes.push_back(b.getIndexAttr(batch[i]));
          continue;
        }
        // The operand whose dim i is this dynamic batch dim.
        int64_t li = int64_t(i) - int64_t(batchRank - lhsBatch.size());
        bool fromLhs = li >= 0 && ShapedType::isDynamic(lhsBatch[li]);
        Value source = fromLhs ? lhs : rhs;
        int64_t at = fromLhs ? li
                             : int64_t(i) - int64_t(batchRank - rhsBatch.size());
        sizes.push_back(dimOf(b, loc, source, at));
      }
      groups.push_back({int64_t(batchRank)});
      groups.push_back({int64_t(batchRank) + 1});
      sizes.push_back(getAsOpFoldResult(dimOf(b, loc, product, 1)));
      sizes.push_back(getAsOpFoldResult(dimOf(b, loc, product, 2)));
      SmallVector<int64_t> shape(batch);
      shape.append({m, n});
      product = expandToSizes(b, loc, RankedTensorType::get(shape, accType),
                              product, groups, sizes);
      return reshapeTo(b, loc, product, resultShape);
    }
  }
  productShape.append({m, n});
  product = reshapeTo(b, loc, product, productShape);
  // Drop the promoted dims of 1-D operands.
  return reshapeTo(b, loc, product, resultShape);
}

/// ONNX MatMul: buildNumpyMatmul, then the truncation of a half-precision
/// accumulator.
struct MatMulLowering : OpConversionPattern<kiln::MatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    Type elementType = resultType.getElementType();
    if (isa<IntegerType>(elementType) && elementType.getIntOrFloatBitWidth() < 32)
      return unsupported(op, "matmul of " + std::to_string(
                                 elementType.getIntOrFloatBitWidth()) +
                                 "-bit integers (ONNX MatMul takes 32/64-bit)");
    Value product;
    if (isSplatRhsMatmul(adaptor.getA(), op.getB(), resultType))
      product = buildSplatRhsMatmul(
          rewriter, loc, adaptor.getA(), *splatWeight(op.getB()),
          resultType.getShape().back(), computeType(elementType));
    else
      product =
          buildNumpyMatmul(rewriter, loc, adaptor.getA(), adaptor.getB(),
                           resultType.getShape(), computeType(elementType));
    rewriter.replaceOp(op, truncateTensor(rewriter, loc, product, elementType));
    return success();
  }
};

/// ONNX Gemm: transposes by linalg.transpose, the product by linalg.matmul,
/// then one elementwise epilogue alpha * AB + beta * C (and the truncation
/// of a half-precision accumulator).
struct GemmLowering : OpConversionPattern<kiln::GemmOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::GemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    Type elementType = resultType.getElementType();
    Type accType = computeType(elementType);
    double alpha = op.getAlpha().convertToDouble();
    double beta = op.getBeta().convertToDouble();
    Value c = adaptor.getC();
    bool hasC = !isNone(c) && beta != 0.0;
    bool isInt = isa<IntegerType>(elementType);
    if (isInt && (alpha != 1.0 || (hasC && beta != 1.0)))
      return unsupported(op, "integer Gemm with alpha or beta other than 1");
    if (isInt && elementType.getIntOrFloatBitWidth() < 32)
      return unsupported(op, "Gemm of integers narrower than 32 bits");

    auto transpose = [&](Value value) {
      auto type = tensorType(value);
      Value init = emptyTensor(
          rewriter, loc,
          type.clone({type.getDimSize(1), type.getDimSize(0)}));
      return linalg::TransposeOp::create(rewriter, loc, value, init,
                                         ArrayRef<int64_t>{1, 0})
          .getResult()[0];
    };
    Value a = adaptor.getA(), b = adaptor.getB();
    if (op.getTransA())
      a = transpose(a);
    Value product;
    if (isSplatRhsMatmul(a, op.getB(), resultType)) {
      // Transposed or not, the same splat.
      product = buildSplatRhsMatmul(rewriter, loc, a, *splatWeight(op.getB()),
                                    resultType.getDimSize(1), accType);
    } else {
      if (op.getTransB())
        b = transpose(b);
      product = buildMatmul(rewriter, loc, a, b, accType);
    }
    if (!hasC && alpha == 1.0) {
      rewriter.replaceOp(op,
                         truncateTensor(rewriter, loc, product, elementType));
      return success();
    }
    SmallVector<Value> inputs{product};
    if (hasC)
      inputs.push_back(c);
    Value result = buildElementwise(
        rewriter, loc, inputs, resultType,
        [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
          Value y = args[0];
          if (isInt)
            return hasC ? (Value)arith::AddIOp::create(nb, nl, y, args[1]) : y;
          if (alpha != 1.0)
            y = arith::MulFOp::create(nb, nl, y,
                                      scalarConstant(nb, nl, accType, alpha));
          if (hasC) {
            Value cv = extendScalar(nb, nl, args[1], accType);
            if (beta != 1.0)
              cv = arith::MulFOp::create(nb, nl, cv,
                                         scalarConstant(nb, nl, accType, beta));
            y = arith::AddFOp::create(nb, nl, y, cv);
          }
          return truncateScalar(nb, nl, y, elementType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

/// Einsum: one linalg.generic with a loop per label, the output's labels
/// parallel and the others reductions; each input reads its labels' loops
/// (a label repeated in one input is a diagonal; a size-1 dim against a
/// larger loop broadcasts), and the body accumulates the product.
/// `...` stands for the same right-aligned broadcast dims in every term;
/// without `->` the output is the ellipsis dims then the labels that occur
/// once, in ASCII order (numpy's rule).
struct EinsumLowering : OpConversionPattern<kiln::EinsumOp> {
  using OpConversionPattern::OpConversionPattern;

  /// A term's labels: letters as their char, ellipsis dims as 256 + the
  /// global ellipsis dim. Fails on malformed terms.
  static FailureOr<SmallVector<int>> parseTerm(StringRef term, int64_t rank,
                                               int64_t ellipsisRank) {
    SmallVector<int> labels;
    size_t dots = term.find("...");
    StringRef before = dots == StringRef::npos ? term : term.take_front(dots);
    StringRef after =
        dots == StringRef::npos ? StringRef() : term.drop_front(dots + 3);
    if (after.contains('.') || before.contains('.'))
      return failure();
    for (char c : before) {
      if (!llvm::isAlpha(c))
        return failure();
      labels.push_back(c);
    }
    if (dots != StringRef::npos) {
      int64_t count = rank < 0 ? ellipsisRank
                               : rank - (int64_t)before.size() -
                                     (int64_t)after.size();
      if (count < 0 || count > ellipsisRank)
        return failure();
      for (int64_t j = ellipsisRank - count; j < ellipsisRank; ++j)
        labels.push_back(256 + j);
    }
    for (char c : after) {
      if (!llvm::isAlpha(c))
        return failure();
      labels.push_back(c);
    }
    if (rank >= 0 && (int64_t)labels.size() != rank)
      return failure();
    return labels;
  }

  LogicalResult
  matchAndRewrite(kiln::EinsumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    std::string equation;
    for (char c : op.getEquation())
      if (!llvm::isSpace(c))
        equation.push_back(c);
    StringRef eq(equation);
    auto [lhs, rhs] = eq.split("->");
    bool explicitOutput = eq.contains("->");
    SmallVector<StringRef> terms;
    lhs.split(terms, ',');
    ValueRange inputs = adaptor.getInputs();
    if (terms.size() != inputs.size())
      return unsupported(op, "equation has " + std::to_string(terms.size()) +
                                 " terms for " +
                                 std::to_string(inputs.size()) + " inputs");
    // The ellipsis rank: the most dims any `...` covers.
    int64_t ellipsisRank = 0;
    for (auto [term, input] : llvm::zip(terms, inputs)) {
      if (!term.contains("..."))
        continue;
      int64_t letters = llvm::count_if(term, llvm::isAlpha);
      ellipsisRank = std::max(ellipsisRank,
                              tensorType(input).getRank() - letters);
    }
    SmallVector<SmallVector<int>> inputLabels;
    llvm::MapVector<int, int64_t> sizes; // label -> loop size, in order
    std::map<int, int> occurrences;
    for (auto [term, input] : llvm::zip(terms, inputs)) {
      auto type = tensorType(input);
      FailureOr<SmallVector<int>> labels =
          parseTerm(term, type.getRank(), ellipsisRank);
      if (failed(labels))
        return unsupported(op, "equation term '" + term +
                                   "' does not match an input of rank " +
                                   std::to_string(type.getRank()));
      for (auto [d, label] : llvm::enumerate(*labels)) {
        int64_t size = type.getDimSize(d);
        auto [it, inserted] = sizes.insert({label, size});
        if (!inserted && it->second != size) {
          if (it->second != 1 && size != 1)
            return unsupported(op, "label sizes " +
                                       std::to_string(it->second) + " and " +
                                       std::to_string(size) + " disagree");
          it->second = std::max(it->second, size);
        }
      }
      SmallVector<int> distinct(*labels);
      llvm::sort(distinct);
      distinct.erase(llvm::unique(distinct), distinct.end());
      for (int label : *labels)
        ++occurrences[label];
      inputLabels.push_back(std::move(*labels));
    }
    SmallVector<int> outputLabels;
    if (explicitOutput) {
      FailureOr<SmallVector<int>> labels =
          parseTerm(rhs, -1, ellipsisRank);
      if (failed(labels))
        return unsupported(op, "output term '" + rhs + "'");
      outputLabels = std::move(*labels);
    } else {
      for (int64_t j = 0; j < ellipsisRank; ++j)
        outputLabels.push_back(256 + j);
      SmallVector<int> once;
      for (auto [label, count] : occurrences)
        if (label < 256 && count == 1)
          once.push_back(label);
      llvm::sort(once);
      outputLabels.append(once);
    }
    if ((int64_t)outputLabels.size() != resultType.getRank())
      return unsupported(op, "output term of rank " +
                                 std::to_string(outputLabels.size()) +
                                 " for a result of rank " +
                                 std::to_string(resultType.getRank()));
    // Loops: output labels, then the others in order of appearance.
    llvm::DenseMap<int, unsigned> loopOf;
    SmallVector<IteratorType> iterators;
    for (auto [i, label] : llvm::enumerate(outputLabels)) {
      if (!sizes.count(label) || loopOf.count(label))
        return unsupported(op, "output label not in an input, or repeated");
      if (sizes[label] != resultType.getDimSize(i))
        return unsupported(op, "output dim size mismatch");
      loopOf[label] = loopOf.size();
      iterators.push_back(IteratorType::parallel);
    }
    for (auto &[label, size] : sizes)
      if (!loopOf.count(label)) {
        loopOf[label] = loopOf.size();
        iterators.push_back(IteratorType::reduction);
      }
    unsigned numLoops = loopOf.size();
    SmallVector<AffineMap> maps;
    for (auto [labels, input] : llvm::zip(inputLabels, inputs)) {
      auto type = tensorType(input);
      SmallVector<AffineExpr> exprs;
      for (auto [d, label] : llvm::enumerate(labels)) {
        if (type.getDimSize(d) == 1 && sizes[label] != 1)
          exprs.push_back(getAffineConstantExpr(0, context));
        else
          exprs.push_back(getAffineDimExpr(loopOf[label], context));
      }
      maps.push_back(AffineMap::get(numLoops, 0, exprs, context));
    }
    SmallVector<AffineExpr> outExprs;
    for (int label : outputLabels)
      outExprs.push_back(getAffineDimExpr(loopOf[label], context));
    maps.push_back(AffineMap::get(numLoops, 0, outExprs, context));

    Type elementType = resultType.getElementType();
    Type ct = computeType(elementType);
    bool isFloat = isa<FloatType>(ct);
    Value init = filledTensor(rewriter, loc, resultType.clone(ct),
                              scalarConstant(rewriter, loc, ct, 0));
    Value acc = buildGeneric(
        rewriter, loc, inputs, init, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value product;
          for (Value v : args.drop_back()) {
            v = extendScalar(b, l, v, ct);
            product = !product ? v
                      : isFloat
                          ? (Value)arith::MulFOp::create(b, l, product, v)
                          : (Value)arith::MulIOp::create(b, l, product, v);
          }
          if (isFloat)
            return arith::AddFOp::create(b, l, args.back(), product);
          return arith::AddIOp::create(b, l, args.back(), product);
        });
    rewriter.replaceOp(op, truncateTensor(rewriter, loc, acc, elementType));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Kiln's fused ops
//===----------------------------------------------------------------------===//

/// kiln.fused_matmul: the numpy matmul (B's last two dims swapped first
/// with trans_b) into an f32 (or f64) accumulator, then one epilogue.
struct FusedMatMulLowering : OpConversionPattern<kiln::FusedMatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::FusedMatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    Value b = adaptor.getB();
    Type ct = computeType(resultType.getElementType());
    Value product;
    if (isSplatRhsMatmul(adaptor.getA(), op.getB(), resultType)) {
      // Transposed or not, the same splat.
      product = buildSplatRhsMatmul(rewriter, loc, adaptor.getA(),
                                    *splatWeight(op.getB()),
                                    resultType.getShape().back(), ct);
    } else if (op.getTransB()) {
      auto type = tensorType(b);
      int64_t rank = type.getRank();
      if (rank < 2)
        return unsupported(op, "trans_b with a 1-D B");
      SmallVector<int64_t> perm, shape;
      for (int64_t i = 0; i < rank; ++i)
        perm.push_back(i);
      std::swap(perm[rank - 1], perm[rank - 2]);
      for (int64_t i : perm)
        shape.push_back(type.getDimSize(i));
      b = linalg::TransposeOp::create(rewriter, loc, b,
                                      emptyTensor(rewriter, loc,
                                                  type.clone(shape)),
                                      perm)
              .getResult()[0];
    }
    if (!product)
      product = buildNumpyMatmul(rewriter, loc, adaptor.getA(), b,
                                 resultType.getShape(), ct);
    Value bias = isNone(adaptor.getBias()) ? Value() : adaptor.getBias();
    Value residual =
        isNone(adaptor.getResidual()) ? Value() : adaptor.getResidual();
    rewriter.replaceOp(
        op, buildEpilogue(rewriter, loc, product, bias, residual,
                          op.getActivation(), op.getResidualBeforeActivation(),
                          op.getAlpha().convertToDouble(), resultType));
    return success();
  }
};

} // namespace

void kiln::lowering::populateMatMulPatterns(const TypeConverter &converter,
                                            RewritePatternSet &patterns) {
  patterns
      .add<MatMulLowering, GemmLowering, EinsumLowering, FusedMatMulLowering>(
          converter, patterns.getContext());
}
