//===- ControlFlowOps.cpp - If, Loop and Scan -----------------------------===//
//
// Type inference and verifiers of the region ops. A region's result types
// come from what its kiln.yield yields (and, for loop-carried values and
// states, from the block arguments the importer typed), so inference needs
// the regions: the importer builds them before it creates the op.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnControlFlowOps.cpp.inc"

namespace {

/// The kiln.yield ending `region`, or null (no block, other terminator).
YieldOp getYield(Region &region) {
  if (region.empty() || region.front().empty())
    return nullptr;
  return dyn_cast<YieldOp>(region.front().back());
}

/// True when `a` and `b` are tensors of the same element type and rank
/// whose static dims agree.
bool compatible(Type a, Type b) {
  auto x = dyn_cast<RankedTensorType>(a), y = dyn_cast<RankedTensorType>(b);
  if (!x || !y || x.getElementType() != y.getElementType() ||
      x.getRank() != y.getRank())
    return false;
  for (auto [m, n] : llvm::zip(x.getShape(), y.getShape()))
    if (!ShapedType::isDynamic(m) && !ShapedType::isDynamic(n) && m != n)
      return false;
  return true;
}

/// True for a tensor of one element.
bool isSingleElement(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && llvm::all_of(tensor.getShape(), [](int64_t d) {
           return d == 1 || ShapedType::isDynamic(d);
         });
}

/// True when `value` is known to be a true boolean.
bool isConstantTrue(Value value) {
  std::optional<SmallVector<int64_t>> known = getKnownIntValues(value);
  return known && known->size() == 1 && (*known)[0] == 1;
}

/// Follows kiln.identity to the value it copies.
Value skipIdentities(Value value) {
  while (auto identity = value.getDefiningOp<IdentityOp>())
    value = identity->getOperand(0);
  return value;
}

bool loopCannotStopEarly(Value cond, Region &body) {
  if (isNone(cond))
    return true;
  if (!isConstantTrue(cond))
    return false;
  YieldOp yield = getYield(body);
  if (!yield || yield.getValues().empty() || body.getNumArguments() < 2)
    return false;
  Value yielded = skipIdentities(yield.getValues()[0]);
  return yielded == body.getArgument(1) || isConstantTrue(yielded);
}

std::optional<int64_t> loopConstantTripCount(Value maxTripCount, Value cond,
                                             Region &body) {
  if (isNone(maxTripCount) || !loopCannotStopEarly(cond, body))
    return std::nullopt;
  std::optional<SmallVector<int64_t>> known =
      getKnownIntValues(maxTripCount);
  if (!known || known->size() != 1 || ShapedType::isDynamic((*known)[0]))
    return std::nullopt;
  return std::max<int64_t>((*known)[0], 0);
}

/// `type` (a tensor) with `size` inserted as dim `axis`.
RankedTensorType insertDim(RankedTensorType type, int64_t axis, int64_t size) {
  SmallVector<int64_t> shape(type.getShape());
  shape.insert(shape.begin() + axis, size);
  return RankedTensorType::get(shape, type.getElementType());
}

/// An attribute's entry `i`, or 0 when absent.
int64_t entryOr0(std::optional<ArrayRef<int64_t>> values, unsigned i) {
  if (!values || i >= values->size())
    return 0;
  return (*values)[i];
}

} // namespace

//===----------------------------------------------------------------------===//
// kiln.if
//===----------------------------------------------------------------------===//

YieldOp IfOp::thenYield() { return getYield(getThenBranch()); }
YieldOp IfOp::elseYield() { return getYield(getElseBranch()); }

LogicalResult IfOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &results) {
  YieldOp thenYield = getYield(adaptor.getThenBranch());
  YieldOp elseYield = getYield(adaptor.getElseBranch());
  if (!thenYield || !elseYield)
    return emitOptionalError(loc, "both branches must end in kiln.yield");
  if (thenYield.getValues().size() != elseYield.getValues().size())
    return emitOptionalError(loc, "the then branch yields ",
                             thenYield.getValues().size(),
                             " values, the else branch ",
                             elseYield.getValues().size());
  for (auto [i, pair] : llvm::enumerate(llvm::zip(
           thenYield.getValues().getTypes(), elseYield.getValues().getTypes()))) {
    auto [a, b] = pair;
    FailureOr<RankedTensorType> joined =
        joinTensorTypes(cast<RankedTensorType>(a), cast<RankedTensorType>(b));
    if (failed(joined))
      return emitOptionalError(loc, "output ", i, " is ", a,
                               " in the then branch and ", b,
                               " in the else branch: the branches must agree "
                               "in element type and rank");
    results.push_back(*joined);
  }
  return success();
}

LogicalResult IfOp::verify() {
  if (!isSingleElement(getCond().getType()))
    return emitOpError("the condition must have one element, got ")
           << getCond().getType();
  for (auto [name, yield] :
       {std::pair("then", thenYield()), std::pair("else", elseYield())}) {
    if (!yield)
      return emitOpError("the ") << name << " branch must end in kiln.yield";
    if (yield.getValues().size() != getNumResults())
      return emitOpError("the ")
             << name << " branch yields " << yield.getValues().size()
             << " values for " << getNumResults() << " results";
    for (auto [i, pair] : llvm::enumerate(
             llvm::zip(yield.getValues().getTypes(), getResultTypes())))
      if (!compatible(std::get<0>(pair), std::get<1>(pair)))
        return emitOpError("the ")
               << name << " branch yields " << std::get<0>(pair)
               << " for result " << i << " of type " << std::get<1>(pair);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// kiln.loop
//===----------------------------------------------------------------------===//

YieldOp LoopOp::bodyYield() { return getYield(getBody()); }

bool LoopOp::cannotStopEarly() {
  return loopCannotStopEarly(getCond(), getBody());
}

std::optional<int64_t> LoopOp::getConstantTripCount() {
  return loopConstantTripCount(getMaxTripCount(), getCond(), getBody());
}

LogicalResult LoopOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &results) {
  Region &body = adaptor.getBody();
  YieldOp yield = getYield(body);
  unsigned numCarried = adaptor.getVInitial().size();
  if (!yield)
    return emitOptionalError(loc, "the body must end in kiln.yield");
  if (body.getNumArguments() != 2 + numCarried)
    return emitOptionalError(loc, "the body has ", body.getNumArguments(),
                             " arguments, expected 2 + ", numCarried,
                             " (iteration number, condition, carried values)");
  if (yield.getValues().size() < 1 + numCarried)
    return emitOptionalError(loc, "the body yields ",
                             yield.getValues().size(),
                             " values, expected at least 1 + ", numCarried,
                             " (condition, carried values)");
  for (unsigned j = 0; j < numCarried; ++j)
    results.push_back(body.getArgument(2 + j).getType());
  std::optional<int64_t> trips = loopConstantTripCount(
      adaptor.getMaxTripCount(), adaptor.getCond(), body);
  for (Value element : yield.getValues().drop_front(1 + numCarried))
    results.push_back(insertDim(cast<RankedTensorType>(element.getType()), 0,
                                trips ? *trips : ShapedType::kDynamic));
  return success();
}

LogicalResult LoopOp::verify() {
  Value m = getMaxTripCount();
  if (!isNone(m) && cast<RankedTensorType>(m.getType()).getNumElements() != 1)
    return emitOpError("max_trip_count must have one element, got ")
           << m.getType();
  if (!isNone(getCond()) && !isSingleElement(getCond().getType()))
    return emitOpError("the condition must have one element, got ")
           << getCond().getType();
  Block &block = getBody().front();
  unsigned numCarried = getNumCarried();
  if (block.getNumArguments() != 2 + numCarried)
    return emitOpError("the body has ")
           << block.getNumArguments() << " arguments, expected 2 + "
           << numCarried << " (iteration number, condition, carried values)";
  auto iterType = dyn_cast<RankedTensorType>(block.getArgument(0).getType());
  if (!iterType || !iterType.getElementType().isInteger(64) ||
      !isSingleElement(iterType))
    return emitOpError("the iteration number (body argument 0) must be a "
                       "one-element i64 tensor, got ")
           << block.getArgument(0).getType();
  if (!isSingleElement(block.getArgument(1).getType()) ||
      !getElementTypeOrSelf(block.getArgument(1).getType()).isInteger(1))
    return emitOpError("the condition (body argument 1) must be a "
                       "one-element i1 tensor, got ")
           << block.getArgument(1).getType();
  YieldOp yield = bodyYield();
  if (!yield)
    return emitOpError("the body must end in kiln.yield");
  if (yield.getValues().size() != 1 + getNumResults())
    return emitOpError("the body yields ")
           << yield.getValues().size() << " values, expected 1 + "
           << getNumResults() << " (condition, carried values, scan outputs)";
  Type condOut = yield.getValues()[0].getType();
  if (!isSingleElement(condOut) ||
      !getElementTypeOrSelf(condOut).isInteger(1))
    return emitOpError("the body must yield a one-element i1 condition "
                       "first, got ")
           << condOut;
  for (unsigned j = 0; j < numCarried; ++j) {
    Type carried = block.getArgument(2 + j).getType();
    Type initial = getVInitial()[j].getType();
    Type yielded = yield.getValues()[1 + j].getType();
    Type result = getResult(j).getType();
    if (!compatible(initial, carried) || !compatible(yielded, carried) ||
        !compatible(carried, result))
      return emitOpError("loop-carried value ")
             << j << ": the initial value " << initial << ", the body's "
             << carried << ", the yielded " << yielded << " and the result "
             << result << " must agree in element type, rank and static dims";
  }
  for (unsigned k = 0; k < getNumScanOutputs(); ++k) {
    auto element =
        cast<RankedTensorType>(yield.getValues()[1 + numCarried + k].getType());
    auto result = cast<RankedTensorType>(getResult(numCarried + k).getType());
    if (!compatible(insertDim(element, 0, ShapedType::kDynamic), result))
      return emitOpError("scan output ")
             << k << " of type " << result << " does not stack the yielded "
             << element << " along a new first dim";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// kiln.scan
//===----------------------------------------------------------------------===//

YieldOp ScanOp::bodyYield() { return getYield(getBody()); }

int64_t ScanOp::getScanInputAxis(unsigned i) {
  int64_t rank = cast<RankedTensorType>(
                     getInitialStateAndScanInputs()[getNumStates() + i].getType())
                     .getRank();
  int64_t axis = entryOr0(getScanInputAxes(), i);
  return axis < 0 ? axis + rank : axis;
}

bool ScanOp::isScanInputReversed(unsigned i) {
  return entryOr0(getScanInputDirections(), i) != 0;
}

int64_t ScanOp::getScanOutputAxis(unsigned j) {
  int64_t rank =
      cast<RankedTensorType>(getResult(getNumStates() + j).getType()).getRank();
  int64_t axis = entryOr0(getScanOutputAxes(), j);
  return axis < 0 ? axis + rank : axis;
}

bool ScanOp::isScanOutputReversed(unsigned j) {
  return entryOr0(getScanOutputDirections(), j) != 0;
}

LogicalResult ScanOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &results) {
  ValueRange operands = adaptor.getInitialStateAndScanInputs();
  int64_t numScanInputs = adaptor.getNumScanInputs();
  if (numScanInputs < 1 || numScanInputs > int64_t(operands.size()))
    return emitOptionalError(loc, "num_scan_inputs = ", numScanInputs,
                             " must be in [1, ", operands.size(), "]");
  unsigned numStates = operands.size() - numScanInputs;
  Region &body = adaptor.getBody();
  YieldOp yield = getYield(body);
  if (!yield)
    return emitOptionalError(loc, "the body must end in kiln.yield");
  if (body.getNumArguments() != operands.size())
    return emitOptionalError(loc, "the body has ", body.getNumArguments(),
                             " arguments for ", operands.size(), " operands");
  if (yield.getValues().size() < numStates)
    return emitOptionalError(loc, "the body yields ",
                             yield.getValues().size(), " values for ",
                             numStates, " states");
  // The number of iterations: the scan inputs' length along their axes.
  int64_t length = ShapedType::kDynamic;
  std::optional<ArrayRef<int64_t>> inputAxes = adaptor.getScanInputAxes();
  for (int64_t i = 0; i < numScanInputs; ++i) {
    auto type = cast<RankedTensorType>(operands[numStates + i].getType());
    int64_t axis = entryOr0(inputAxes, i);
    if (axis < -type.getRank() || axis >= type.getRank())
      return emitOptionalError(loc, "scan_input_axes[", i, "] = ", axis,
                               " is out of range for ", type);
    int64_t size = type.getDimSize(axis < 0 ? axis + type.getRank() : axis);
    if (ShapedType::isDynamic(size))
      continue;
    if (!ShapedType::isDynamic(length) && length != size)
      return emitOptionalError(loc, "the scan inputs have lengths ", length,
                               " and ", size, " along their scan axes");
    length = size;
  }
  for (unsigned j = 0; j < numStates; ++j)
    results.push_back(body.getArgument(j).getType());
  std::optional<ArrayRef<int64_t>> outputAxes = adaptor.getScanOutputAxes();
  for (auto [k, element] :
       llvm::enumerate(yield.getValues().drop_front(numStates))) {
    auto type = cast<RankedTensorType>(element.getType());
    int64_t axis = entryOr0(outputAxes, k);
    if (axis < -(type.getRank() + 1) || axis > type.getRank())
      return emitOptionalError(loc, "scan_output_axes[", k, "] = ", axis,
                               " is out of range for a result of rank ",
                               type.getRank() + 1);
    results.push_back(insertDim(
        type, axis < 0 ? axis + type.getRank() + 1 : axis, length));
  }
  return success();
}

LogicalResult ScanOp::verify() {
  unsigned numStates = getNumStates();
  int64_t numScanInputs = getNumScanInputs();
  unsigned numScanOutputs = getNumScanOutputs();
  auto checkLength = [&](std::optional<ArrayRef<int64_t>> values,
                         StringRef name, int64_t expected) -> LogicalResult {
    if (values && int64_t(values->size()) != expected)
      return emitOpError() << name << " has " << values->size()
                           << " entries for " << expected << " values";
    return success();
  };
  if (failed(checkLength(getScanInputAxes(), "scan_input_axes",
                         numScanInputs)) ||
      failed(checkLength(getScanInputDirections(), "scan_input_directions",
                         numScanInputs)) ||
      failed(checkLength(getScanOutputAxes(), "scan_output_axes",
                         numScanOutputs)) ||
      failed(checkLength(getScanOutputDirections(), "scan_output_directions",
                         numScanOutputs)))
    return failure();
  Block &block = getBody().front();
  if (block.getNumArguments() != getNumOperands())
    return emitOpError("the body has ")
           << block.getNumArguments() << " arguments for " << getNumOperands()
           << " operands";
  YieldOp yield = bodyYield();
  if (!yield)
    return emitOpError("the body must end in kiln.yield");
  if (yield.getValues().size() != getNumResults())
    return emitOpError("the body yields ")
           << yield.getValues().size() << " values for " << getNumResults()
           << " results";
  ValueRange operands = getInitialStateAndScanInputs();
  for (unsigned j = 0; j < numStates; ++j) {
    Type state = block.getArgument(j).getType();
    if (!compatible(operands[j].getType(), state) ||
        !compatible(yield.getValues()[j].getType(), state) ||
        !compatible(state, getResult(j).getType()))
      return emitOpError("state ")
             << j << ": the initial value " << operands[j].getType()
             << ", the body's " << state << ", the yielded "
             << yield.getValues()[j].getType() << " and the result "
             << getResult(j).getType()
             << " must agree in element type, rank and static dims";
  }
  for (int64_t i = 0; i < numScanInputs; ++i) {
    auto input = cast<RankedTensorType>(operands[numStates + i].getType());
    int64_t axis = entryOr0(getScanInputAxes(), i);
    if (axis < -input.getRank() || axis >= input.getRank())
      return emitOpError("scan_input_axes[")
             << i << "] = " << axis << " is out of range for " << input;
    SmallVector<int64_t> slice(input.getShape());
    slice.erase(slice.begin() + getScanInputAxis(i));
    Type expected = RankedTensorType::get(slice, input.getElementType());
    Type arg = block.getArgument(numStates + i).getType();
    if (!compatible(expected, arg))
      return emitOpError("scan input ")
             << i << " of type " << input << " has slices of type "
             << expected << ", the body takes " << arg;
  }
  for (unsigned k = 0; k < numScanOutputs; ++k) {
    auto element =
        cast<RankedTensorType>(yield.getValues()[numStates + k].getType());
    auto result = cast<RankedTensorType>(getResult(numStates + k).getType());
    if (result.getRank() != element.getRank() + 1)
      return emitOpError("scan output ")
             << k << " of type " << result << " does not stack the yielded "
             << element;
    if (!compatible(insertDim(element, getScanOutputAxis(k),
                              ShapedType::kDynamic),
                    result))
      return emitOpError("scan output ")
             << k << " of type " << result << " does not stack the yielded "
             << element << " along axis " << getScanOutputAxis(k);
  }
  return success();
}
