//===- CudnnCalls.cpp - --kernels=library: convolutions as cuDNN calls ----===//
//
// On bufferized IR, replaces each static 2-D NCHW convolution
// (linalg.conv_2d_nchw_fchw, and linalg.depthwise_conv_2d_nchw_chw as a
// grouped one: its [C, R, S] filter is cuDNN's [C, 1, R, S]) of f32, f16 or
// bf16 by a host call to kiln_rt_cuda_conv2d (runtime/include/kiln/
// cuda_abi.h), which the runtime runs with cuDNN:
//
//   kiln_rt_cuda_conv2d(stream, dtype, epilogue, n, c, h, w, k, r, s, p, q,
//                       pad_top, pad_left, pad_bottom, pad_right, stride_h,
//                       stride_w, dilation_h, dilation_w, groups, x,
//                       weight, bias, y)
//
// What the call absorbs, as convert-kiln-to-linalg lays a Conv out:
//   - the accumulator's start: a zero fill (or a copy of a zero-filled
//     buffer: CSE shares zero tensors) or the bias broadcast along the
//     channels (a generic reading a [K] vector), which becomes the bias;
//   - the input's zero padding (an alloc filled with zeros and the input
//     copied into its interior): symmetric pads become the call's pads and
//     the copy goes; asymmetric ones (cuDNN pads symmetrically) keep the
//     padded buffer, its copy kernel, and the call gets pads 0 and a remark;
//   - the elementwise consumer when it is exactly relu or a cast of the
//     accumulator to the data type (f16/bf16 convolutions accumulate in
//     f32 and are truncated after), so the call writes its output (the
//     accumulator itself when the consumer works in place, as a fused
//     conv's activation does after bufferization).
// An f16/bf16 convolution whose f32 accumulator no consumer truncates has
// no call (the call writes the data type), nor has a convolution starting
// from anything else; those keep their generated kernel, with a remark.
// Grouped convolutions other than depthwise (linalg.generic) are not
// matched.
//
// Operands that are small constants of the host module (memref.get_global)
// are copied to a device buffer first (a copy kernel).
//
// The stream and pointers are as LibraryCalls.cpp's GEMM calls: the call is
// bracketed by mgpuStreamCreate and mgpuStreamSynchronize/Destroy (which
// the runtime turns into its session stream and no-ops), the buffers are
// passed as aligned pointers (identity layouts: offset 0). The call is
// tagged `kiln.cuda.library = "cudnn_conv[_bias][_relu]"`;
// kiln-cuda-name-kernels numbers it (k<N>_cudnn_conv_bias_relu) and lists it
// in the kernel table with "library": true, category gemm.
//
//===----------------------------------------------------------------------===//

#include "GemmMatch.h"
#include "RuntimeCalls.h"
#include "kiln/Transforms/Origin.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kiln::cuda {
namespace {

/// A static memref with the identity layout (its aligned pointer is its
/// first element).
bool isDense(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.hasStaticShape() && type.getLayout().isIdentity();
}

bool usesValue(Operation *op, Value v) {
  bool used = false;
  op->walk([&](Operation *inner) {
    if (llvm::is_contained(inner->getOperands(), v))
      used = true;
  });
  return used;
}

/// Whether `op` may write `buffer`: a copy into it, a linalg op with it as
/// an output, any other op using it (or a view of it: conservatively, any
/// op using a value derived from it) except reads by linalg ops.
bool mayWrite(Operation *op, Value buffer) {
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    return copy.getTarget() == buffer;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    if (linalgOp.hasPureBufferSemantics())
      return llvm::is_contained(linalgOp.getDpsInits(), buffer);
  if (isa<memref::DeallocOp>(op))
    return false;
  return usesValue(op, buffer);
}

/// Whether an op strictly between `from` and `to` (same block) may write
/// `buffer`.
bool writtenBetween(Value buffer, Operation *from, Operation *to) {
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (mayWrite(op, buffer))
      return true;
  return false;
}

/// A zero writer of all of `buffer`: linalg.fill with 0, or a generic/map
/// without inputs yielding 0.
bool isZeroFill(Operation *op, Value buffer) {
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.hasPureBufferSemantics() && fill.getOutputs()[0] == buffer &&
           isZeroConstant(fill.getInputs()[0]);
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !isa<linalg::GenericOp, linalg::MapOp>(op) ||
      !linalgOp.hasPureBufferSemantics() || linalgOp.getNumDpsInputs() != 0 ||
      linalgOp.getNumDpsInits() != 1 || linalgOp.getDpsInits()[0] != buffer ||
      linalgOp.getNumReductionLoops() != 0)
    return false;
  auto yield = dyn_cast<linalg::YieldOp>(linalgOp.getBlock()->getTerminator());
  return yield && yield.getNumOperands() == 1 &&
         isZeroConstant(yield.getOperand(0));
}

/// The last op before `op` writing `buffer`, or null.
Operation *lastWriter(Operation *op, Value buffer) {
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode())
    if (mayWrite(prev, buffer))
      return prev;
  return nullptr;
}

/// Everything the call replaces and what it is called with.
struct ConvMatch {
  linalg::LinalgOp conv;
  Type type;
  int64_t n, c, h, w, k, r, s, p, q, groups;
  int64_t strides[2], dilations[2];
  int64_t pads[4] = {0, 0, 0, 0}; // top, left, bottom, right
  Value input, weight, acc, bias, out;
  Operation *init = nullptr; // the zero fill or bias broadcast
  bool eraseInit = false;
  SmallVector<Operation *> padOps; // erased when the pad is absorbed
  bool asymmetricPad = false;
  linalg::GenericOp epilogue; // folded consumer, or null
  int32_t epilogueCode = kNone;
};

/// The bias of a bias broadcast `op` writing `acc` ([K] along dim 1), or
/// null.
Value biasOf(Operation *op, Value acc) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureBufferSemantics() ||
      generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getDpsInits()[0] != acc || generic.getNumReductionLoops() != 0 ||
      generic.getNumLoops() != 4)
    return nullptr;
  MLIRContext *ctx = op->getContext();
  AffineMap in = generic.getIndexingMapsArray()[0];
  AffineMap outMap = generic.getIndexingMapsArray()[1];
  if (!outMap.isIdentity() || in.getNumResults() != 1 ||
      in.getResult(0) != getAffineDimExpr(1, ctx))
    return nullptr;
  Block *body = generic.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  if (skipCasts(yield.getOperand(0)) != body->getArgument(0))
    return nullptr;
  for (Operation &inner : body->without_terminator())
    if (!isa<arith::ExtFOp, arith::TruncFOp>(inner))
      return nullptr;
  Value bias = generic.getDpsInputs()[0];
  return isDense(bias) ? bias : nullptr;
}

/// Matches `conv`; "" or why it has no call.
std::string matchConv(linalg::LinalgOp conv, ConvMatch &m) {
  m.conv = conv;
  bool depthwise = isa<linalg::DepthwiseConv2DNchwChwOp>(conv);
  Value x = conv.getDpsInputs()[0], wt = conv.getDpsInputs()[1];
  m.acc = conv.getDpsInits()[0];
  if (!isDense(x) || !isDense(wt) || !isDense(m.acc))
    return "its buffers are not static and dense";
  auto xType = cast<MemRefType>(x.getType());
  auto wType = cast<MemRefType>(wt.getType());
  auto accType = cast<MemRefType>(m.acc.getType());
  m.type = xType.getElementType();
  if (!(m.type.isF32() || m.type.isF16() || m.type.isBF16()))
    return "inputs are not f32, f16 or bf16";
  if (wType.getElementType() != m.type)
    return "the input and the weight differ in type";
  if (!accType.getElementType().isF32() && accType.getElementType() != m.type)
    return "the accumulator is neither f32 nor the input type";
  auto ints = [](DenseIntElementsAttr attr, int64_t out[2]) {
    int i = 0;
    for (int64_t v : attr.getValues<int64_t>())
      if (i < 2)
        out[i++] = v;
  };
  if (auto c = dyn_cast<linalg::Conv2DNchwFchwOp>(conv.getOperation())) {
    ints(c.getStrides(), m.strides);
    ints(c.getDilations(), m.dilations);
  } else {
    auto d = cast<linalg::DepthwiseConv2DNchwChwOp>(conv.getOperation());
    ints(d.getStrides(), m.strides);
    ints(d.getDilations(), m.dilations);
  }
  m.n = xType.getDimSize(0), m.c = xType.getDimSize(1);
  m.h = xType.getDimSize(2), m.w = xType.getDimSize(3);
  m.k = accType.getDimSize(1);
  m.p = accType.getDimSize(2), m.q = accType.getDimSize(3);
  m.r = wType.getDimSize(depthwise ? 1 : 2);
  m.s = wType.getDimSize(depthwise ? 2 : 3);
  m.groups = depthwise ? m.c : 1;
  m.weight = wt;
  m.input = x;

  // The accumulator's start.
  Operation *init = lastWriter(conv, m.acc);
  if (!init)
    return "the accumulator is not initialized before it";
  if (isZeroFill(init, m.acc)) {
    m.init = init;
  } else if (auto copy = dyn_cast<memref::CopyOp>(init)) {
    Operation *src = copy.getSource() == m.acc
                         ? nullptr
                         : lastWriter(copy, copy.getSource());
    if (!src || !isDense(copy.getSource()) ||
        cast<MemRefType>(copy.getSource().getType()).getNumElements() !=
            accType.getNumElements() ||
        !isZeroFill(src, copy.getSource()))
      return "the accumulator starts from neither zeros nor a bias";
    m.init = init;
  } else if (Value bias = biasOf(init, m.acc)) {
    if (getElementTypeOrSelf(bias.getType()) != m.type)
      return "the bias is not of the input type";
    m.init = init;
    m.bias = bias;
  } else {
    return "the accumulator starts from neither zeros nor a bias";
  }
  // Readers of the accumulator between its start and the convolution keep
  // the start.
  m.eraseInit = true;
  for (Operation *op = init->getNextNode(); op && op != conv.getOperation();
       op = op->getNextNode())
    if (usesValue(op, m.acc))
      m.eraseInit = false;

  // The zero padding: x an alloc zero-filled, the input copied into its
  // interior.
  if (auto alloc = x.getDefiningOp<memref::AllocOp>()) {
    Operation *fill = nullptr;
    memref::SubViewOp view;
    memref::CopyOp copy;
    bool other = false;
    for (Operation *user : x.getUsers()) {
      if (user == conv.getOperation())
        continue;
      if (isZeroFill(user, x) && !fill) {
        fill = user;
      } else if (auto sv = dyn_cast<memref::SubViewOp>(user);
                 sv && !view && sv->hasOneUse()) {
        view = sv;
        copy = dyn_cast<memref::CopyOp>(*sv->getUsers().begin());
        if (!copy || copy.getTarget() != sv.getResult())
          other = true;
      } else {
        other = true;
      }
    }
    if (fill && view && copy && !other &&
        fill->getBlock() == conv->getBlock() &&
        copy->getBlock() == conv->getBlock() && fill->isBeforeInBlock(copy) &&
        copy->isBeforeInBlock(conv.getOperation()) &&
        isDense(copy.getSource()) && view.hasUnitStride() &&
        llvm::all_of(view.getStaticOffsets(),
                     [](int64_t o) { return o != ShapedType::kDynamic; })) {
      ArrayRef<int64_t> off = view.getStaticOffsets();
      auto src = cast<MemRefType>(copy.getSource().getType());
      if (off.size() == 4 && off[0] == 0 && off[1] == 0 &&
          src.getDimSize(0) == m.n && src.getDimSize(1) == m.c &&
          !writtenBetween(copy.getSource(), copy, conv.getOperation())) {
        int64_t top = off[2], left = off[3];
        int64_t bottom = m.h - src.getDimSize(2) - top;
        int64_t right = m.w - src.getDimSize(3) - left;
        if (top == bottom && left == right) {
          m.pads[0] = top, m.pads[1] = left, m.pads[2] = bottom;
          m.pads[3] = right;
          m.h = src.getDimSize(2), m.w = src.getDimSize(3);
          m.input = copy.getSource();
          m.padOps = {copy, view, fill, alloc};
        } else {
          m.asymmetricPad = true;
        }
      }
    }
  }
  return "";
}

/// The consumer of the accumulator the call can write instead: the next op
/// (allocations aside) reading only it, writing the data type, computing
/// [relu of] it up to casts. Sets m.epilogue/epilogueCode/out.
void matchEpilogue(ConvMatch &m) {
  Operation *next = m.conv->getNextNode();
  while (next && isa<memref::AllocOp>(next))
    next = next->getNextNode();
  auto generic = dyn_cast_or_null<linalg::GenericOp>(next);
  if (!generic || !generic.hasPureBufferSemantics() ||
      generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getDpsInputs()[0] != m.acc ||
      generic.getNumReductionLoops() != 0 ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return;
  Value out = generic.getDpsInits()[0];
  if (!isDense(out) || getElementTypeOrSelf(out.getType()) != m.type ||
      out == m.input || out == m.weight || out == m.bias)
    return;
  // In place (bufferization reuses the accumulator of a fused conv's
  // activation): the call writes the result there. Else the accumulator
  // dies with the call: nothing else may read it.
  if (out != m.acc) {
    if (!m.eraseInit)
      return;
    // Bufferization may reuse the buffer for a later accumulator: fine
    // when that next life starts by overwriting all of it.
    Operation *init = m.init, *conv = m.conv.getOperation();
    for (Operation *user : m.acc.getUsers())
      if (user->getBlock() != conv->getBlock() ||
          (init->isBeforeInBlock(user) && user != conv &&
           user->isBeforeInBlock(generic)))
        return;
    for (Operation *op = generic->getNextNode(); op; op = op->getNextNode())
      if (usesValue(op, m.acc)) {
        if (!isa<memref::DeallocOp>(op) && !isZeroFill(op, m.acc) &&
            !biasOf(op, m.acc))
          return;
        break;
      }
  }
  Block *body = generic.getBlock();
  if (!body->getArgument(1).use_empty())
    return;
  for (Operation &op : body->without_terminator())
    if (!isa<arith::ExtFOp, arith::TruncFOp, arith::MaximumFOp,
             arith::MaxNumFOp, arith::ConstantOp>(op))
      return;
  Value acc = body->getArgument(0);
  Value v =
      skipCasts(cast<linalg::YieldOp>(body->getTerminator()).getOperand(0));
  int32_t code = kNone;
  if (Operation *def = v.getDefiningOp();
      def && isa<arith::MaximumFOp, arith::MaxNumFOp>(def)) {
    Value a = def->getOperand(0), b = def->getOperand(1);
    if (isZeroConstant(a))
      std::swap(a, b);
    if (!isZeroConstant(b))
      return;
    code = kRelu;
    v = skipCasts(a);
  }
  if (v != acc)
    return;
  m.epilogue = generic;
  m.epilogueCode = code;
  m.out = out;
}

func::FuncOp declareConv(ModuleOp module) {
  Builder b(module.getContext());
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  SmallVector<Type> params{ptr, i32, i32};
  params.append(18, i64);
  params.append(4, ptr);
  return declareCall(module, "kiln_rt_cuda_conv2d", params);
}

/// A small constant left in the IR (memref.get_global, under
/// kiln-hoist-weights' threshold), or a view of one, is host memory: the
/// call gets a device copy of it: kiln-cuda-copies-to-kernels makes the
/// copy a kernel reading the constant, which kiln-cuda-sink-globals moves
/// into it. (kiln-cuda-library-calls leaves a GEMM with such an operand a
/// kernel instead; a convolution's small bias is common enough to keep the
/// call.)
Value onDevice(OpBuilder &b, Location loc, Value memref) {
  if (!isHostConstant(memref))
    return memref;
  auto type = cast<MemRefType>(memref.getType());
  Value copy = memref::AllocOp::create(b, loc, type);
  memref::CopyOp::create(b, loc, memref, copy);
  return copy;
}

struct CudnnCallsPass : PassWrapper<CudnnCallsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CudnnCallsPass)
  StringRef getArgument() const override { return "kiln-cuda-cudnn-calls"; }
  StringRef getDescription() const override {
    return "Replace f32/f16/bf16 NCHW 2-D convolutions (with their bias, "
           "zero padding and relu) by kiln_rt_cuda_conv2d host calls "
           "(cuDNN); bufferized IR";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<func::FuncDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                    memref::MemRefDialect, arith::ArithDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<linalg::LinalgOp> convs;
    module.walk([&](linalg::LinalgOp op) {
      if (isa<linalg::Conv2DNchwFchwOp, linalg::DepthwiseConv2DNchwChwOp>(
              op.getOperation()) &&
          op.hasPureBufferSemantics())
        convs.push_back(op);
    });
    for (linalg::LinalgOp conv : convs) {
      ConvMatch m;
      std::string why = matchConv(conv, m);
      if (why.empty()) {
        matchEpilogue(m);
        if (!m.epilogue && getElementTypeOrSelf(m.acc.getType()) != m.type)
          why = "no elementwise consumer (a cast, relu) writing the " +
                std::string(m.type.isF16() ? "f16" : "bf16") +
                " result: the call writes the input type";
      }
      if (!why.empty()) {
        emitRemark(stripOrigins(conv.getLoc()))
            << "CUDA library mode: the convolution of ONNX node '"
            << onnxNodeOf(conv) << "' is not called (" << why
            << "); it stays a generated kernel";
        continue;
      }
      if (m.asymmetricPad)
        emitRemark(stripOrigins(conv.getLoc()))
            << "CUDA library mode: the convolution of ONNX node '"
            << onnxNodeOf(conv)
            << "' has asymmetric pads (cuDNN pads symmetrically): its padded "
               "input stays a copy kernel, the call gets pads 0";
      emitCall(module, m);
      // What the call replaces, users first.
      if (m.epilogue)
        m.epilogue->erase();
      conv->erase();
      if (m.init && m.eraseInit)
        m.init->erase();
      for (Operation *op : m.padOps)
        op->erase();
      if (m.epilogue)
        if (auto alloc = m.acc.getDefiningOp<memref::AllocOp>()) {
          SmallVector<Operation *> deallocs(alloc->getUsers());
          if (llvm::all_of(deallocs, [](Operation *u) {
                return isa<memref::DeallocOp>(u);
              })) {
            for (Operation *d : deallocs)
              d->erase();
            alloc->erase();
          }
        }
    }
    (void)ctx;
  }

  void emitCall(ModuleOp module, ConvMatch &m) {
    MLIRContext *ctx = &getContext();
    Operation *anchor =
        m.epilogue ? m.epilogue.getOperation() : m.conv.getOperation();
    OpBuilder b(anchor);
    // The locations of everything the call computes, in program order: they
    // name the ONNX nodes in the kernel table.
    SmallVector<Location> locs{m.conv.getLoc()};
    if (m.epilogue) {
      for (Operation &inner : m.epilogue.getBlock()->without_terminator())
        locs.push_back(inner.getLoc());
      locs.push_back(m.epilogue.getLoc());
    }
    Location loc = FusedLoc::get(ctx, locs);
    Value out = m.epilogue ? m.out : m.acc;
    int32_t dtype = dtypeOf(m.type);
    auto i32 = [&](int64_t v) {
      return arith::ConstantIntOp::create(b, loc, v, 32).getResult();
    };
    auto i64 = [&](int64_t v) {
      return arith::ConstantIntOp::create(b, loc, v, 64).getResult();
    };
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    Value input = onDevice(b, loc, m.input);
    Value weight = onDevice(b, loc, m.weight);
    Value bias = m.bias ? onDevice(b, loc, m.bias) : Value();
    Value stream = createStream(b, loc, module);
    Value biasPtr = bias ? pointerOf(b, loc, bias)
                         : LLVM::ZeroOp::create(b, loc, ptr).getResult();
    SmallVector<Value> args{stream, i32(dtype), i32(m.epilogueCode)};
    for (int64_t v : {m.n, m.c, m.h, m.w, m.k, m.r, m.s, m.p, m.q, m.pads[0],
                      m.pads[1], m.pads[2], m.pads[3], m.strides[0],
                      m.strides[1], m.dilations[0], m.dilations[1], m.groups})
      args.push_back(i64(v));
    args.push_back(pointerOf(b, loc, input));
    args.push_back(pointerOf(b, loc, weight));
    args.push_back(biasPtr);
    args.push_back(pointerOf(b, loc, out));
    auto call = func::CallOp::create(b, loc, declareConv(module), args);
    synchronizeAndDestroyStream(b, loc, module, stream);
    std::string name = "cudnn_conv";
    if (m.bias)
      name += "_bias";
    if (m.epilogueCode == kRelu)
      name += "_relu";
    call->setAttr("kiln.cuda.library", StringAttr::get(ctx, name));
  }
};

} // namespace

void registerCudnnCallsPasses() { PassRegistration<CudnnCallsPass>(); }

} // namespace kiln::cuda
