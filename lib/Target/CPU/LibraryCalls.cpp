//===- LibraryCalls.cpp - --kernels=library: GEMM/conv through OpenBLAS ---===//
//
// On bufferized IR, replaces float32 linalg.matmul, linalg.batch_matmul and
// linalg.conv_2d_nchw_fchw by calls into runtime/abi/kiln_abi_blas.c, which
// run OpenBLAS's SGEMM (convolution through im2col). Each memref is passed
// as (aligned pointer, offset, strides) in index-typed scalars, so strided
// views need no copy; the C side falls back to loops for strides BLAS cannot
// express.
//
// A convolution also takes in what bufferization left around it, when the
// buffers show it is safe: the zero padding of its input (a zero-filled
// buffer the unpadded input is copied into: the call reads the unpadded
// input and im2col writes the zeros), the initialization of its output (the
// bias broadcast, or zeros) and the elementwise epilogue right after it
// (Relu, a residual Add, Add then Relu), which the C side applies to each
// block of output rows while it is in cache. Each of these was a parallel
// loop over the whole tensor of its own. Matmul epilogues stay generated
// code.
//
//===----------------------------------------------------------------------===//

#include "KernelCalls.h"
#include "kiln/Target/CPU/CpuBackend.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kiln::cpu {
namespace {

bool isF32Memref(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && type.getElementType().isF32();
}

/// A dense float32 buffer (its sizes may be run-time ones: a dynamic batch).
bool isIdentityF32(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && type.getElementType().isF32() &&
         type.getLayout().isIdentity();
}

bool isZeroF32(Value value) {
  auto constant = value.getDefiningOp<arith::ConstantOp>();
  auto attr = constant ? dyn_cast<FloatAttr>(constant.getValue()) : nullptr;
  return attr && attr.getValue().isZero();
}

/// Whether `op` (or an op nested in it) has `value` as an operand.
bool touches(Operation *op, Value value) {
  bool found = false;
  op->walk([&](Operation *nested) {
    if (llvm::is_contained(nested->getOperands(), value))
      found = true;
  });
  return found;
}

/// Whether an op strictly between `from` and `to` (same block, `from`
/// first) touches `value`.
bool touchedBetween(Operation *from, Operation *to, Value value) {
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (touches(op, value))
      return true;
  return false;
}

/// The body of a one-output linalg op is exactly `yield <block arg 0>` (a
/// broadcast or copy of its only input) or `yield <zero constant>`.
bool yieldsInput(linalg::LinalgOp op) {
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  return op.getBlock()->getOperations().size() == 1 &&
         yield.getNumOperands() == 1 &&
         yield.getOperand(0) == op.getBlock()->getArgument(0);
}

/// A convolution input that is the zero padding of another buffer:
///   %pad = memref.alloc
///   linalg.map/fill outs(%pad) { yield 0 }
///   %view = memref.subview %pad[0, 0, top, left] [n, c, h, w] [1, 1, 1, 1]
///   memref.copy %source, %view
///   ... conv reading %pad
/// with nothing else using %pad (but deallocations), and nothing touching
/// %source or %pad between the copy and the convolution.
struct FoldedPad {
  Value source;
  int64_t top = 0, left = 0;
  SmallVector<Operation *> erase; // fill, copy, subview, deallocs, alloc
};

std::optional<FoldedPad> matchZeroPad(Operation *conv, Value input,
                                      Value output) {
  auto alloc = input.getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != conv->getBlock())
    return std::nullopt;
  Operation *fill = nullptr;
  memref::SubViewOp view;
  memref::CopyOp copy;
  SmallVector<Operation *> deallocs;
  for (Operation *user : alloc->getUsers()) {
    if (user == conv)
      continue;
    if (isa<memref::DeallocOp>(user)) {
      deallocs.push_back(user);
    } else if (auto subview = dyn_cast<memref::SubViewOp>(user)) {
      if (view || !subview->hasOneUse())
        return std::nullopt;
      view = subview;
      copy = dyn_cast<memref::CopyOp>(*subview->getUsers().begin());
      if (!copy || copy.getTarget() != subview.getResult())
        return std::nullopt;
    } else if (auto fillOp = dyn_cast<linalg::FillOp>(user)) {
      if (fill || !isZeroF32(fillOp.getInputs()[0]))
        return std::nullopt;
      fill = user;
    } else if (auto map = dyn_cast<linalg::MapOp>(user)) {
      auto yield = cast<linalg::YieldOp>(map.getBlock()->getTerminator());
      if (fill || map.getNumDpsInputs() != 0 || yield.getNumOperands() != 1 ||
          !isZeroF32(yield.getOperand(0)))
        return std::nullopt;
      fill = user;
    } else {
      return std::nullopt;
    }
  }
  if (!fill || !view || fill->getBlock() != conv->getBlock() ||
      copy->getBlock() != conv->getBlock() || !fill->isBeforeInBlock(copy) ||
      !copy->isBeforeInBlock(conv))
    return std::nullopt;
  Value source = copy.getSource();
  if (!isIdentityF32(source) || source == output ||
      touchedBetween(copy, conv, source) || touchedBetween(fill, copy, view))
    return std::nullopt;
  ArrayRef<int64_t> offsets = view.getStaticOffsets();
  if (!view.hasUnitStride() || ShapedType::isDynamicShape(offsets) ||
      offsets.size() != 4 || offsets[0] != 0 || offsets[1] != 0 ||
      view.getStaticSizes() !=
          cast<MemRefType>(source.getType()).getShape())
    return std::nullopt;
  // The padded buffer must be the source with its borders only: the bottom
  // and right borders are what the convolution's output size implies.
  FoldedPad pad;
  pad.source = source;
  pad.top = offsets[2];
  pad.left = offsets[3];
  pad.erase = {fill, copy, view};
  llvm::append_range(pad.erase, deallocs);
  pad.erase.push_back(alloc);
  return pad;
}

/// The op before `conv` that initializes its output, when it is the last op
/// to touch the output before it: a zero fill (mode 1) or the broadcast of
/// a [F] bias along the channels (mode 2, `bias` set).
struct FoldedInit {
  int64_t mode = 0;
  Value bias;
  Operation *op = nullptr;
};

FoldedInit matchInit(Operation *conv, Value output) {
  FoldedInit init;
  Operation *op = conv->getPrevNode();
  while (op && !touches(op, output))
    op = op->getPrevNode();
  if (!op)
    return init;
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    if (fill.getOutputs()[0] == output && isZeroF32(fill.getInputs()[0])) {
      init.mode = 1;
      init.op = op;
    }
    return init;
  }
  if (auto map = dyn_cast<linalg::MapOp>(op)) {
    auto yield = cast<linalg::YieldOp>(map.getBlock()->getTerminator());
    if (map.getNumDpsInputs() == 0 && map.getInit() == output &&
        yield.getNumOperands() == 1 && isZeroF32(yield.getOperand(0))) {
      init.mode = 1;
      init.op = op;
    }
    return init;
  }
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 ||
      generic.getDpsInitOperand(0)->get() != output ||
      generic.getNumParallelLoops() != 4 || generic.getNumLoops() != 4 ||
      !yieldsInput(generic))
    return init;
  Value bias = generic.getDpsInputOperand(0)->get();
  auto biasType = dyn_cast<MemRefType>(bias.getType());
  MLIRContext *context = conv->getContext();
  if (!biasType || !isIdentityF32(bias) || biasType.getRank() != 1 ||
      biasType.getDimSize(0) != cast<MemRefType>(output.getType()).getDimSize(1))
    return init;
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (maps[0] != AffineMap::get(4, 0, getAffineDimExpr(1, context)) ||
      !maps[1].isIdentity())
    return init;
  init.mode = 2;
  init.bias = bias;
  init.op = op;
  return init;
}

/// The elementwise op right after `conv` (allocations aside) that reads its
/// output: result = [relu]( output [+ residual] ), every operand with the
/// output's shape and an identity layout. flags: 1 add the residual, 2 relu.
struct FoldedEpilogue {
  int64_t flags = 0;
  Value residual, result;
  Operation *op = nullptr;
  SmallVector<Operation *> allocsBetween;
};

FoldedEpilogue matchEpilogue(Operation *conv, Value output) {
  FoldedEpilogue epilogue;
  Operation *op = conv->getNextNode();
  SmallVector<Operation *> allocs;
  while (op && isa<memref::AllocOp>(op)) {
    allocs.push_back(op);
    op = op->getNextNode();
  }
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInits() != 1 ||
      generic.getNumDpsInputs() < 1 || generic.getNumDpsInputs() > 2 ||
      generic.getNumLoops() != generic.getNumParallelLoops() ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return epilogue;
  Type outputType = output.getType();
  for (Value operand : generic->getOperands())
    if (operand.getType() != outputType)
      return epilogue;
  // Which input is the convolution's output; the other is the residual.
  Block *body = generic.getBlock();
  int convArg = -1;
  for (OpOperand *input : generic.getDpsInputOperands())
    if (input->get() == output)
      convArg = input->getOperandNumber();
  if (convArg < 0)
    return epilogue;
  Value result = generic.getDpsInitOperand(0)->get();
  Value residual;
  if (generic.getNumDpsInputs() == 2) {
    residual = generic.getDpsInputOperand(1 - convArg)->get();
    if (residual == output)
      return epilogue;
  }
  // Body: [%s = addf %conv, %res] [%r = maximumf %s, 0] yield.
  Value current = body->getArgument(convArg);
  int64_t flags = 0;
  auto it = body->begin();
  if (residual) {
    auto add = dyn_cast<arith::AddFOp>(&*it);
    Value other = body->getArgument(1 - convArg);
    if (!add || !((add.getLhs() == current && add.getRhs() == other) ||
                  (add.getRhs() == current && add.getLhs() == other)))
      return epilogue;
    current = add.getResult();
    flags |= 1;
    ++it;
  }
  if (auto max = dyn_cast<arith::MaximumFOp>(&*it)) {
    if (!((max.getLhs() == current && isZeroF32(max.getRhs())) ||
          (max.getRhs() == current && isZeroF32(max.getLhs()))))
      return epilogue;
    current = max.getResult();
    flags |= 2;
    ++it;
  }
  auto yield = dyn_cast<linalg::YieldOp>(&*it);
  if (!yield || yield.getNumOperands() != 1 || yield.getOperand(0) != current ||
      flags == 0)
    return epilogue;
  epilogue.flags = flags;
  epilogue.residual = residual;
  epilogue.result = result;
  epilogue.op = generic;
  epilogue.allocsBetween = allocs;
  return epilogue;
}

struct LibraryCallsPass
    : PassWrapper<LibraryCallsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LibraryCallsPass)
  StringRef getArgument() const override { return "kiln-cpu-library-calls"; }
  StringRef getDescription() const override {
    return "Call OpenBLAS for float32 matmul, batch_matmul and NCHW conv "
           "(bufferized IR)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<func::FuncDialect, memref::MemRefDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::LinalgOp> candidates;
    module.walk([&](linalg::LinalgOp op) {
      if (!op.hasPureBufferSemantics() ||
          !llvm::all_of(op->getOperands(), isF32Memref))
        return;
      if (auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation())) {
        if (matmul.getIndexingMapsArray() ==
            linalg::MatmulOp::getDefaultIndexingMaps(&getContext()))
          candidates.push_back(op);
      } else if (auto batch =
                     dyn_cast<linalg::BatchMatmulOp>(op.getOperation())) {
        if (batch.getIndexingMapsArray() ==
            linalg::BatchMatmulOp::getDefaultIndexingMaps(&getContext()))
          candidates.push_back(op);
      } else if (auto conv = dyn_cast<linalg::Conv2DNchwFchwOp>(
                     op.getOperation())) {
        // The C kernel walks input, filter and output as dense arrays.
        if (llvm::all_of(op->getOperands(), [](Value v) {
              return cast<MemRefType>(v.getType()).getLayout().isIdentity();
            }))
          candidates.push_back(op);
      }
    });

    for (linalg::LinalgOp op : candidates) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      // A convolution's surroundings are matched before any op is added
      // next to it (the matchers want the buffers' users as bufferization
      // left them).
      std::optional<FoldedPad> pad;
      FoldedInit init;
      FoldedEpilogue epilogue;
      if (isa<linalg::Conv2DNchwFchwOp>(op.getOperation())) {
        Value output = op->getOperand(2);
        pad = matchZeroPad(op, op->getOperand(0), output);
        init = matchInit(op, output);
        epilogue = matchEpilogue(op, output);
        // Other threads still read the input (and the filter) while one
        // writes its block's results.
        Value result = epilogue.result;
        if (result && (result == op->getOperand(0) ||
                       result == op->getOperand(1) ||
                       (pad && result == pad->source) ||
                       (init.bias && result == init.bias)))
          epilogue = FoldedEpilogue();
        for (Operation *alloc : epilogue.allocsBetween)
          alloc->moveBefore(op);
      }
      SmallVector<StridedOperand> operands;
      for (Value v : op->getOperands())
        operands.push_back(decompose(b, loc, pad && v == op->getOperand(0)
                                                  ? pad->source
                                                  : v));
      SmallVector<Value> args;
      StringRef callee;
      if (isa<linalg::MatmulOp>(op.getOperation())) {
        callee = "kiln_abi_sgemm";
        for (StridedOperand &o : operands)
          args.append({o.pointer, o.offset, o.strides[0], o.strides[1]});
        args.append({operands[2].sizes[0], operands[2].sizes[1],
                     operands[0].sizes[1]});
      } else if (isa<linalg::BatchMatmulOp>(op.getOperation())) {
        callee = "kiln_abi_sgemm_batched";
        args.push_back(operands[2].sizes[0]);
        for (StridedOperand &o : operands)
          args.append({o.pointer, o.offset, o.strides[0], o.strides[1],
                       o.strides[2]});
        args.append({operands[2].sizes[1], operands[2].sizes[2],
                     operands[0].sizes[2]});
      } else {
        auto conv = cast<linalg::Conv2DNchwFchwOp>(op.getOperation());
        callee = "kiln_abi_conv2d_nchw_f32";
        StridedOperand &in = operands[0], &filter = operands[1],
                       &out = operands[2];
        auto index = [&](int64_t v) -> Value {
          return arith::ConstantIndexOp::create(b, loc, v);
        };
        auto pointerAndOffset = [&](Value v) {
          if (!v) {
            args.append({index(0), index(0)});
            return;
          }
          StridedOperand o = decompose(b, loc, v);
          args.append({o.pointer, o.offset});
        };
        // The input's own sizes: unpadded when the padding is folded.
        args.append({in.pointer, in.offset, in.sizes[0], in.sizes[1],
                     in.sizes[2], in.sizes[3]});
        args.append({filter.pointer, filter.offset, filter.sizes[0],
                     filter.sizes[2], filter.sizes[3]});
        args.append({out.pointer, out.offset, out.sizes[2], out.sizes[3]});
        for (int64_t s : conv.getStrides().getValues<int64_t>())
          args.push_back(index(s));
        for (int64_t d : conv.getDilations().getValues<int64_t>())
          args.push_back(index(d));
        args.append({index(pad ? pad->top : 0), index(pad ? pad->left : 0)});
        // Output initialization: 0 accumulate into it, 1 zeros, 2 the bias.
        args.push_back(index(init.mode));
        pointerAndOffset(init.bias);
        // Epilogue: flags (1 add the residual, 2 relu), residual, result.
        args.push_back(index(epilogue.flags));
        pointerAndOffset(epilogue.residual);
        pointerAndOffset(epilogue.result);
      }
      func::FuncOp fn = declareKernel(module, callee, args.size());
      func::CallOp::create(b, loc, fn, args);
      op->erase();
      if (init.op)
        init.op->erase();
      if (epilogue.op)
        epilogue.op->erase();
      if (pad)
        for (Operation *dead : pad->erase)
          dead->erase();
    }
  }
};

} // namespace

std::unique_ptr<Pass> createLibraryCallsPass() {
  return std::make_unique<LibraryCallsPass>();
}

} // namespace kiln::cpu
