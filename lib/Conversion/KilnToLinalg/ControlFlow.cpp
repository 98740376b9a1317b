//===- ControlFlow.cpp - If, Loop and Scan to scf on tensors --------------===//
//
// kiln.if becomes scf.if, kiln.loop an scf.while, kiln.scan an scf.for, all
// on tensors (one-shot bufferization handles them). A region moves into
// the scf op as it is: its kiln ops are converted after it (the conversion
// visits an op before the ops nested in it), and its kiln.yield becomes an
// scf.yield. The bodies of loops are wrapped in an scf.execute_region, so
// that their kiln.yield, too, is a plain scf.yield of the body's outputs;
// what the loop does with them (the next iteration's values, scan outputs
// written into their tensors) follows the execute_region. Canonicalization
// inlines the execute_region.
//
// Scan outputs of a Loop have as many rows as there are iterations, known
// only at the end: they are written into a tensor that doubles when full,
// and sliced to the count after the loop (to the declared length when the
// result type has one).
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "kiln/Conversion/KilnToLinalg.h"
#include "kiln/Dialect/KilnOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace kiln::lowering;

namespace {

/// `value` cast to `type` (tensor.cast) when its type differs.
Value castTo(OpBuilder &b, Location loc, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return tensor::CastOp::create(b, loc, type, value);
}

/// Converted types of `types`; failure when one does not convert.
FailureOr<SmallVector<Type>> convertTypes(const TypeConverter &converter,
                                          TypeRange types) {
  SmallVector<Type> result;
  if (failed(converter.convertTypes(types, result)))
    return failure();
  return result;
}

/// Gives the symbolic shapes' loop symbols of a kiln body (its iteration
/// number, the dims of carried values that change size) their values for
/// the code built inside the loop (DynamicDims::sizesFor may materialize
/// them there): `valueOf(argument, dim)` (dim -1: the iteration number).
void bindLoopSymbols(Block &body,
                     llvm::function_ref<Value(unsigned, int64_t)> valueOf) {
  DynamicDims *dims = activeDynamicDims();
  if (!dims)
    return;
  ArrayRef<kiln::LoopSymbol> loopSymbols = dims->shapes.loopSymbols();
  unsigned first = dims->shapes.symbols().size();
  for (auto [k, symbol] : llvm::enumerate(loopSymbols)) {
    auto arg = dyn_cast<BlockArgument>(symbol.value);
    if (!arg || arg.getOwner() != &body)
      continue;
    if (dims->symbolValues.size() < first + loopSymbols.size())
      dims->symbolValues.resize(first + loopSymbols.size());
    dims->symbolValues[first + k] = valueOf(arg.getArgNumber(), symbol.dim);
  }
}

/// Moves the single block of a kiln region into a new scf.execute_region
/// of result types `resultTypes` at the rewriter's insertion point, its
/// arguments replaced by `arguments` (converted values); the region's
/// kiln.yield becomes the execute_region's scf.yield (YieldLowering).
FailureOr<scf::ExecuteRegionOp>
inlineBody(ConversionPatternRewriter &rewriter, const TypeConverter &converter,
           Location loc, Region &body, TypeRange resultTypes,
           ValueRange arguments) {
  FailureOr<Block *> entry = rewriter.convertRegionTypes(&body, converter);
  if (failed(entry))
    return failure();
  auto execute = scf::ExecuteRegionOp::create(rewriter, loc, resultTypes);
  Block *block = rewriter.createBlock(&execute.getRegion());
  rewriter.mergeBlocks(*entry, block, arguments);
  rewriter.setInsertionPointAfter(execute);
  return execute;
}

/// kiln.if -> scf.if on the condition's element; the branches move as they
/// are.
struct IfLowering : OpConversionPattern<kiln::IfOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::IfOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<SmallVector<Type>> types =
        convertTypes(*getTypeConverter(), op.getResultTypes());
    if (failed(types))
      return unsupported(op, "result types");
    Value cond = extractFirst(rewriter, op.getLoc(), adaptor.getCond());
    auto ifOp = scf::IfOp::create(rewriter, op.getLoc(), *types, cond,
                                  /*addThenBlock=*/false,
                                  /*addElseBlock=*/false);
    rewriter.inlineRegionBefore(op.getThenBranch(), ifOp.getThenRegion(),
                                ifOp.getThenRegion().end());
    rewriter.inlineRegionBefore(op.getElseBranch(), ifOp.getElseRegion(),
                                ifOp.getElseRegion().end());
    rewriter.replaceOp(op, ifOp.getResults());
    return success();
  }
};

/// kiln.yield in an scf.if (a branch) or an scf.execute_region (a loop
/// body) -> scf.yield, each value cast to the type its parent returns.
struct YieldLowering : OpConversionPattern<kiln::YieldOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::YieldOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Operation *parent = op->getParentOp();
    if (!isa<scf::IfOp, scf::ExecuteRegionOp>(parent) ||
        parent->getNumResults() != adaptor.getValues().size())
      return failure();
    SmallVector<Value> values;
    for (auto [value, type] :
         llvm::zip(adaptor.getValues(), parent->getResultTypes()))
      values.push_back(castTo(rewriter, op.getLoc(), value, type));
    rewriter.replaceOpWithNewOp<scf::YieldOp>(op, values);
    return success();
  }
};

/// A scan output of a loop: the tensor its rows are written into.
struct ScanBuffer {
  RankedTensorType elementType; // one iteration's value (static)
  RankedTensorType bufferType;  // [?] + element shape
  RankedTensorType resultType;  // the op's result (dim 0 may be static)
};

/// `buffer` with room for row `row`: itself, or (when full) a copy into a
/// tensor twice as long.
Value ensureRoom(OpBuilder &b, Location loc, Value buffer, Value row,
                 const ScanBuffer &scan) {
  Value capacity = tensor::DimOp::create(b, loc, buffer, 0);
  Value full = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, row,
                                     capacity);
  auto ifOp = scf::IfOp::create(b, loc, scan.bufferType, full,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value twice = arith::MulIOp::create(
        b, loc, capacity, arith::ConstantIndexOp::create(b, loc, 2));
    Value grown = arith::MaxUIOp::create(b, loc, twice, one);
    Value empty = tensor::EmptyOp::create(b, loc, scan.bufferType, grown);
    int64_t rank = scan.bufferType.getRank();
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = {capacity};
    for (int64_t d : scan.elementType.getShape())
      sizes.push_back(b.getIndexAttr(d));
    SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
    Value copied = tensor::InsertSliceOp::create(b, loc, buffer, empty,
                                                 offsets, sizes, strides);
    scf::YieldOp::create(b, loc, copied);
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, loc, buffer);
  }
  return ifOp.getResult(0);
}

/// `element` written as row `row` (dim `axis` of `buffer`, the other dims
/// whole).
Value insertRow(OpBuilder &b, Location loc, Value element, Value buffer,
                Value row, int64_t axis) {
  auto bufferType = cast<RankedTensorType>(buffer.getType());
  int64_t rank = bufferType.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0, e = 0; d < rank; ++d) {
    if (d == axis) {
      offsets[d] = row;
      sizes.push_back(b.getIndexAttr(1));
      continue;
    }
    auto elementType = cast<RankedTensorType>(element.getType());
    sizes.push_back(elementType.isDynamicDim(e)
                        ? OpFoldResult(tensor::DimOp::create(b, loc, element, e)
                                           .getResult())
                        : OpFoldResult(b.getIndexAttr(elementType.getDimSize(e))));
    ++e;
  }
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, loc, element, buffer, offsets, sizes,
                                       strides);
}

/// kiln.loop -> scf.while over (iteration, condition, carried values, scan
/// buffers).
struct LoopLowering : OpConversionPattern<kiln::LoopOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::LoopOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    const TypeConverter &converter = *getTypeConverter();
    unsigned numCarried = op.getNumCarried();
    Block &body = op.getBody().front();
    auto yield = op.bodyYield();
    FailureOr<SmallVector<Type>> carriedTypes = convertTypes(
        converter, TypeRange(body.getArgumentTypes()).drop_front(2));
    FailureOr<SmallVector<Type>> yieldTypes =
        convertTypes(converter, yield.getValues().getTypes());
    FailureOr<SmallVector<Type>> resultTypes =
        convertTypes(converter, op.getResultTypes());
    if (failed(carriedTypes) || failed(yieldTypes) || failed(resultTypes))
      return unsupported(op, "types");

    Type indexType = rewriter.getIndexType();
    Type i1 = rewriter.getI1Type();
    // The condition is read only when the loop can stop on it.
    bool hasCond = !kiln::isNone(op.getCond()) && !op.cannotStopEarly();
    bool hasMax = !kiln::isNone(op.getMaxTripCount());
    Value maxTrips;
    if (hasMax)
      maxTrips = arith::IndexCastOp::create(
          rewriter, loc, indexType,
          extractFirst(rewriter, loc, adaptor.getMaxTripCount()));
    Value initialCond =
        !kiln::isNone(op.getCond())
            ? extractFirst(rewriter, loc, adaptor.getCond())
            : arith::ConstantIntOp::create(rewriter, loc, i1, 1).getResult();

    // The scan outputs' tensors, with room for the iterations the loop is
    // known or likely to run.
    std::optional<int64_t> constantTrips = op.getConstantTripCount();
    SmallVector<ScanBuffer> scans;
    SmallVector<Value> buffers;
    for (unsigned k = 0; k < op.getNumScanOutputs(); ++k) {
      auto elementType =
          cast<RankedTensorType>((*yieldTypes)[1 + numCarried + k]);
      auto resultType = cast<RankedTensorType>((*resultTypes)[numCarried + k]);
      if (!elementType.hasStaticShape())
        return unsupported(op, "scan output " + Twine(k) + " (result " +
                                   Twine(numCarried + k) +
                                   ") may change shape from one iteration "
                                   "to the next: not supported yet");
      SmallVector<int64_t> shape = {ShapedType::kDynamic};
      llvm::append_range(shape, elementType.getShape());
      auto bufferType =
          RankedTensorType::get(shape, elementType.getElementType());
      scans.push_back({elementType, bufferType, resultType});
      Value capacity;
      if (!resultType.isDynamicDim(0))
        capacity = arith::ConstantIndexOp::create(rewriter, loc,
                                                  resultType.getDimSize(0));
      else if (constantTrips)
        capacity = arith::ConstantIndexOp::create(rewriter, loc,
                                                  std::max<int64_t>(
                                                      *constantTrips, 1));
      else if (hasMax) {
        // At most 1024 rows up front (an exporter's unbounded loop has
        // M = INT64_MAX); more double the tensor.
        Value upTo1024 = arith::MinSIOp::create(
            rewriter, loc, maxTrips,
            arith::ConstantIndexOp::create(rewriter, loc, 1024));
        capacity = arith::MaxSIOp::create(
            rewriter, loc, upTo1024,
            arith::ConstantIndexOp::create(rewriter, loc, 1));
      } else {
        capacity = arith::ConstantIndexOp::create(rewriter, loc, 16);
      }
      Value buffer = tensor::EmptyOp::create(rewriter, loc, bufferType,
                                             ValueRange{capacity});
      // A declared length the loop may not reach: rows it does not write
      // read as zeros.
      if (!resultType.isDynamicDim(0) &&
          constantTrips != resultType.getDimSize(0))
        buffer = linalg::FillOp::create(
                     rewriter, loc,
                     scalarConstant(rewriter, loc,
                                    elementType.getElementType(), 0.0),
                     buffer)
                     .getResult(0);
      buffers.push_back(buffer);
    }

    // scf.while (i, cond, carried..., buffers...).
    SmallVector<Value> inits = {arith::ConstantIndexOp::create(rewriter, loc, 0),
                                initialCond};
    llvm::append_range(inits, adaptor.getVInitial());
    for (auto [value, type] :
         llvm::zip(MutableArrayRef<Value>(inits).drop_front(2), *carriedTypes))
      value = castTo(rewriter, loc, value, type);
    llvm::append_range(inits, buffers);
    SmallVector<Type> loopTypes = {indexType, i1};
    llvm::append_range(loopTypes, *carriedTypes);
    for (const ScanBuffer &scan : scans)
      loopTypes.push_back(scan.bufferType);
    SmallVector<Location> locs(loopTypes.size(), loc);

    auto whileOp = scf::WhileOp::create(rewriter, loc, loopTypes, inits);
    Block *before =
        rewriter.createBlock(&whileOp.getBefore(),
                             whileOp.getBefore().end(), loopTypes, locs);
    {
      Value go = arith::ConstantIntOp::create(rewriter, loc, i1, 1);
      if (hasMax)
        go = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt,
                                   before->getArgument(0), maxTrips);
      if (hasCond)
        go = arith::AndIOp::create(rewriter, loc, go, before->getArgument(1));
      scf::ConditionOp::create(rewriter, loc, go, before->getArguments());
    }
    Block *after =
        rewriter.createBlock(&whileOp.getAfter(),
                             whileOp.getAfter().end(), loopTypes, locs);
    Value iteration = after->getArgument(0);
    bindLoopSymbols(body, [&](unsigned argument, int64_t dim) -> Value {
      if (dim < 0)
        return iteration;
      return tensor::DimOp::create(rewriter, loc, after->getArgument(argument),
                                   dim);
    });
    auto scalarTensor = [&](Value scalar, Type type) -> Value {
      auto tensorType = cast<RankedTensorType>(type);
      SmallVector<Value> elements(
          std::max<int64_t>(tensorType.getNumElements(), 1), scalar);
      return tensor::FromElementsOp::create(rewriter, loc, tensorType,
                                            elements);
    };
    FailureOr<SmallVector<Type>> argTypes =
        convertTypes(converter, body.getArgumentTypes());
    if (failed(argTypes))
      return unsupported(op, "body argument types");
    SmallVector<Value> arguments = {
        scalarTensor(arith::IndexCastOp::create(rewriter, loc,
                                                rewriter.getI64Type(),
                                                iteration),
                     (*argTypes)[0]),
        scalarTensor(after->getArgument(1), (*argTypes)[1])};
    llvm::append_range(arguments,
                       after->getArguments().slice(2, numCarried));
    FailureOr<scf::ExecuteRegionOp> execute = inlineBody(
        rewriter, converter, loc, op.getBody(), *yieldTypes, arguments);
    if (failed(execute))
      return unsupported(op, "body argument types");
    ValueRange outputs = execute->getResults();

    Value next = arith::AddIOp::create(
        rewriter, loc, iteration,
        arith::ConstantIndexOp::create(rewriter, loc, 1));
    Value nextCond = hasCond ? extractFirst(rewriter, loc, outputs[0])
                             : after->getArgument(1);
    SmallVector<Value> yielded = {next, nextCond};
    for (unsigned j = 0; j < numCarried; ++j)
      yielded.push_back(
          castTo(rewriter, loc, outputs[1 + j], (*carriedTypes)[j]));
    for (auto [k, scan] : llvm::enumerate(scans)) {
      Value buffer = after->getArgument(2 + numCarried + k);
      buffer = ensureRoom(rewriter, loc, buffer, iteration, scan);
      yielded.push_back(insertRow(rewriter, loc,
                                  outputs[1 + numCarried + k], buffer,
                                  iteration, 0));
    }
    scf::YieldOp::create(rewriter, loc, yielded);

    // The results: the carried values, the scan buffers' written rows.
    rewriter.setInsertionPointAfter(whileOp);
    SmallVector<Value> results;
    for (unsigned j = 0; j < numCarried; ++j)
      results.push_back(castTo(rewriter, loc, whileOp.getResult(2 + j),
                               (*resultTypes)[j]));
    Value count = whileOp.getResult(0);
    for (auto [k, scan] : llvm::enumerate(scans)) {
      Value buffer = whileOp.getResult(2 + numCarried + k);
      int64_t rank = scan.bufferType.getRank();
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes = {
          scan.resultType.isDynamicDim(0)
              ? OpFoldResult(count)
              : OpFoldResult(
                    rewriter.getIndexAttr(scan.resultType.getDimSize(0)))};
      for (int64_t d : scan.elementType.getShape())
        sizes.push_back(rewriter.getIndexAttr(d));
      SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
      Value rows = tensor::ExtractSliceOp::create(
          rewriter, loc, scan.resultType, buffer, offsets, sizes, strides);
      results.push_back(rows);
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// kiln.scan -> scf.for over the scan length, with the states and the scan
/// outputs' tensors as iteration arguments.
struct ScanLowering : OpConversionPattern<kiln::ScanOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(kiln::ScanOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    const TypeConverter &converter = *getTypeConverter();
    unsigned numStates = op.getNumStates();
    unsigned numScanInputs = op.getNumScanInputs();
    Block &body = op.getBody().front();
    FailureOr<SmallVector<Type>> argTypes =
        convertTypes(converter, body.getArgumentTypes());
    FailureOr<SmallVector<Type>> yieldTypes =
        convertTypes(converter, op.bodyYield().getValues().getTypes());
    FailureOr<SmallVector<Type>> resultTypes =
        convertTypes(converter, op.getResultTypes());
    if (failed(argTypes) || failed(yieldTypes) || failed(resultTypes))
      return unsupported(op, "types");
    ValueRange operands = adaptor.getInitialStateAndScanInputs();
    ValueRange inputs = operands.drop_front(numStates);

    Value length = dimOf(rewriter, loc, inputs[0], op.getScanInputAxis(0));
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value last = arith::SubIOp::create(rewriter, loc, length, one);

    SmallVector<Value> inits;
    for (unsigned j = 0; j < numStates; ++j)
      inits.push_back(castTo(rewriter, loc, operands[j], (*argTypes)[j]));
    for (unsigned k = 0; k < op.getNumScanOutputs(); ++k) {
      auto resultType = cast<RankedTensorType>((*resultTypes)[numStates + k]);
      int64_t axis = op.getScanOutputAxis(k);
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < resultType.getRank(); ++d) {
        if (!resultType.isDynamicDim(d))
          continue;
        if (d != axis)
          return unsupported(op, "scan output " + Twine(k) +
                                     " has a dynamic shape in each "
                                     "iteration: not supported yet");
        sizes.push_back(length);
      }
      inits.push_back(tensor::EmptyOp::create(rewriter, loc, resultType, sizes));
    }

    auto forOp = scf::ForOp::create(rewriter, loc, zero, length, one, inits);
    Block *loopBody = forOp.getBody();
    rewriter.setInsertionPointToStart(loopBody);
    Value t = forOp.getInductionVar();
    bindLoopSymbols(body, [&](unsigned argument, int64_t dim) -> Value {
      return tensor::DimOp::create(
          rewriter, loc, forOp.getRegionIterArgs()[argument], dim);
    });
    Value reversed = arith::SubIOp::create(rewriter, loc, last, t);
    SmallVector<Value> arguments(
        forOp.getRegionIterArgs().take_front(numStates));
    for (unsigned i = 0; i < numScanInputs; ++i) {
      Value input = inputs[i];
      auto inputType = tensorType(input);
      int64_t axis = op.getScanInputAxis(i);
      int64_t rank = inputType.getRank();
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes;
      for (int64_t d = 0; d < rank; ++d)
        sizes.push_back(d == axis || !inputType.isDynamicDim(d)
                            ? OpFoldResult(rewriter.getIndexAttr(
                                  d == axis ? 1 : inputType.getDimSize(d)))
                            : OpFoldResult(dimOf(rewriter, loc, input, d)));
      offsets[axis] = op.isScanInputReversed(i) ? reversed : t;
      SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
      auto sliceType = cast<RankedTensorType>((*argTypes)[numStates + i]);
      arguments.push_back(tensor::ExtractSliceOp::create(
          rewriter, loc, sliceType, input, offsets, sizes, strides));
    }
    FailureOr<scf::ExecuteRegionOp> execute = inlineBody(
        rewriter, converter, loc, op.getBody(), *yieldTypes, arguments);
    if (failed(execute))
      return unsupported(op, "body argument types");
    ValueRange outputs = execute->getResults();
    SmallVector<Value> yielded;
    for (unsigned j = 0; j < numStates; ++j)
      yielded.push_back(castTo(rewriter, loc, outputs[j], (*argTypes)[j]));
    for (unsigned k = 0; k < op.getNumScanOutputs(); ++k) {
      Value row = op.isScanOutputReversed(k) ? reversed : t;
      yielded.push_back(insertRow(rewriter, loc, outputs[numStates + k],
                                  forOp.getRegionIterArgs()[numStates + k],
                                  row, op.getScanOutputAxis(k)));
    }
    scf::YieldOp::create(rewriter, loc, yielded);

    rewriter.setInsertionPointAfter(forOp);
    SmallVector<Value> results;
    for (auto [value, type] : llvm::zip(forOp.getResults(), *resultTypes))
      results.push_back(castTo(rewriter, loc, value, type));
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void kiln::populateControlFlowToSCFPatterns(const TypeConverter &converter,
                                            RewritePatternSet &patterns) {
  patterns.add<IfLowering, YieldLowering, LoopLowering, ScanLowering>(
      converter, patterns.getContext());
}
