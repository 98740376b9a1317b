//===- DnnlCalls.cpp - Convolutions and large matmuls through oneDNN ------===//
//
// kiln-cpu-dnnl-calls (--kernels=auto, on the graph with the weights
// hoisted, before kiln-cpu-pack-weights and the linalg lowering): each
// kiln.conv_nhwc / kiln.fused_conv_nhwc
// that kiln::isLibraryConvolution accepts becomes one call to
// kiln_abi_dnnl_conv2d_f32 (runtime/abi/kiln_abi_dnnl.cpp), oneDNN's
// convolution on the NHWC activations with the bias, the activation and
// the residual add as post-ops:
//
//   %x_buf = bufferization.to_buffer %x read_only     (and %w, %b, %residual)
//   %x_ptr = memref.reinterpret_cast %x_buf to memref<1xf32>
//   %y_buf = memref.alloc(%n) : memref<?xOHxOWxMxf32>
//   func.call @kiln_abi_dnnl_conv2d_f32(%slot, %x_ptr, ..., sizes, window)
//   %y = bufferization.to_tensor %y_buf restrict writable
//
// The operands are passed as 1-element views of their buffers: the bare
// pointer calling convention passes a static memref as its pointer, and the
// views keep the buffers alive until the call (the deallocation pipeline
// sees the call as their last user). Sizes and the window are index
// arguments; the batch may be a run-time size. `%slot` is a private 8-byte
// global per call, where the kernel keeps its primitive and packed filter.
//
// The graph pipeline kept these convolutions channels-last
// (kiln-decompose-fused keep-library-convs); measured on two AVX-512
// cores, oneDNN ran a ResNet-50's convolutions at about 225 GFLOP/s on
// NHWC tensors, and 1.6x slower (15-20x for the depthwise ones) on NCHW.
//
// A float32 MatMul or Gemm of at least kMatmulMinRows rows by a weight
// becomes kiln_abi_dnnl_matmul_f32 the same way (the weight reordered once
// into oneDNN's blocked layout); its epilogue stays generated code. Below
// that, Kiln's GEMM on packed panels was as fast or faster. The static
// channels-last max and average pools between the convolutions become
// kiln_abi_dnnl_pool2d_f32 calls (instead of a -inf or zero fill of a padded
// copy and a generated loop).
//
//===----------------------------------------------------------------------===//

#include "../../Conversion/KilnToLinalg/NN.h"
#include "kiln/Dialect/KilnOps.h"
#include "kiln/Dialect/ShapeInference.h"
#include "kiln/Target/CPU/CpuBackend.h"
#include "kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kiln::cpu {
namespace {

constexpr llvm::StringLiteral kKernel = "kiln_abi_dnnl_conv2d_f32";
constexpr llvm::StringLiteral kMatmulKernel = "kiln_abi_dnnl_matmul_f32";
constexpr llvm::StringLiteral kPoolKernel = "kiln_abi_dnnl_pool2d_f32";

/// The rows from which a matmul with a weight is oneDNN's. Measured on two
/// AVX-512 cores (kiln-run, median ms, Kiln's tiled GEMM on packed panels
/// against oneDNN): M x K x N = 16 x 576 x 1536: 0.14 / 0.33; 32 x 768 x
/// 768: 0.24 / 0.34; 64 x 576 x 1536: 0.54 / 0.53; 128 x 768 x 768: 0.72 /
/// 0.71; 197 x 768 x 3072: 6.5 / 4.8; 1024 x 768 x 3072: 28.5 / 24.6. A
/// decode step's matrix-vector products stay Kiln's.
constexpr int64_t kMatmulMinRows = 128;

/// The kernel's code for an epilogue activation (kiln_abi_dnnl.cpp); -1
/// for one it does not know.
int64_t activationCode(StringRef activation) {
  return llvm::StringSwitch<int64_t>(activation)
      .Case("none", 0)
      .Case("relu", 1)
      .Case("gelu", 2)
      .Case("gelu_tanh", 3)
      .Case("silu", 4)
      .Case("sigmoid", 5)
      .Case("tanh", 6)
      .Case("hard_swish", 7)
      .Case("relu6", 8)
      .Default(-1);
}

/// Whether `w` holds the same values in every run: a weight argument of the
/// function (kiln-hoist-weights) or a constant.
bool isConstantFilter(Value w) {
  if (w.getDefiningOp<kiln::ConstantOp>() ||
      w.getDefiningOp<arith::ConstantOp>())
    return true;
  auto arg = dyn_cast<BlockArgument>(w);
  if (!arg)
    return false;
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return func && arg.getOwner()->isEntryBlock() &&
         func.getArgAttr(arg.getArgNumber(), "kiln.weight_value");
}

struct DnnlCallsPass : PassWrapper<DnnlCallsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(DnnlCallsPass)
  StringRef getArgument() const override { return "kiln-cpu-dnnl-calls"; }
  StringRef getDescription() const override {
    return "Call oneDNN for the float32 channels-last convolutions "
           "(kiln::isLibraryConvolution), epilogues as post-ops";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, bufferization::BufferizationDialect,
                    func::FuncDialect, memref::MemRefDialect,
                    tensor::TensorDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> convs, matmuls, pools;
    module.walk([&](Operation *op) {
      if (kiln::isLibraryConvolution(op))
        convs.push_back(op);
      else if (isLibraryMatmul(op))
        matmuls.push_back(op);
      else if (isa<kiln::MaxPoolNhwcOp, kiln::AveragePoolNhwcOp>(op))
        pools.push_back(op);
    });
    for (Operation *op : convs)
      if (failed(rewrite(module, op)))
        return signalPassFailure();
    for (Operation *op : matmuls)
      rewriteMatmul(module, op);
    for (Operation *op : pools)
      rewritePool(module, op);
  }

  /// The sizes of `type`'s dynamic dims among `sizes` (one per dim).
  static SmallVector<Value> dynamicOf(RankedTensorType type,
                                      ArrayRef<Value> sizes) {
    SmallVector<Value> dynamic;
    for (auto [d, size] : llvm::enumerate(sizes))
      if (type.isDynamicDim(d))
        dynamic.push_back(size);
    return dynamic;
  }

  /// A channels-last pool's window and the kernel's kind: 0 max, 1 average
  /// counting the padding, 2 average without it.
  static std::pair<kiln::WindowAttrs, int64_t> poolWindow(Operation *op) {
    if (auto max = dyn_cast<kiln::MaxPoolNhwcOp>(op))
      return {kiln::getPoolWindowAttrs(max), 0};
    auto avg = cast<kiln::AveragePoolNhwcOp>(op);
    return {kiln::getPoolWindowAttrs(avg), avg.getCountIncludePad() ? 1 : 2};
  }

  /// A float32 2-D channels-last max or average pooling of static shapes
  /// without dilation becomes kiln_abi_dnnl_pool2d_f32; the bottom / right
  /// padding is what makes the result's size (a ceil_mode output's
  /// overhang). Not taken: an average counting the padding with ceil_mode
  /// (ONNX does not count the overhang), a window that leaves the input's
  /// last rows unread (oneDNN takes no negative padding).
  void rewritePool(ModuleOp module, Operation *op) {
    auto x = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    auto y = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (kiln::isDynamicLibraryPool(op))
      return rewriteDynamicPool(module, op);
    if (!x || !y || x.getRank() != 4 || !x.hasStaticShape() ||
        !y.hasStaticShape() || !x.getElementType().isF32() ||
        !y.getElementType().isF32())
      return;
    auto [attrs, kind] = poolWindow(op);
    if (kind == 1 && attrs.ceilMode)
      return;
    FailureOr<lowering::Window> window = lowering::resolveWindow(
        op, x.getShape().slice(1, 2), {}, attrs, y.getShape().slice(1, 2));
    if (failed(window) ||
        llvm::any_of(window->dilations, [](int64_t d) { return d != 1; }))
      return;
    const lowering::Window &win = *window;
    SmallVector<int64_t> padEnd;
    for (int i = 0; i < 2; ++i) {
      int64_t end = (y.getDimSize(1 + i) - 1) * win.strides[i] +
                    win.kernel[i] - x.getDimSize(1 + i) - win.padBegin[i];
      if (end < 0)
        return;
      padEnd.push_back(end);
    }
    Location loc = op->getLoc();
    OpBuilder b(op);
    Value xPtr = pointerTo(b, loc, op->getOperand(0));
    replaceByCall(b, module, op, kPoolKernel, {xPtr}, ValueRange(), {},
                  {x.getDimSize(0), x.getDimSize(1), x.getDimSize(2),
                   x.getDimSize(3), y.getDimSize(1), y.getDimSize(2),
                   win.kernel[0], win.kernel[1], win.strides[0],
                   win.strides[1], win.padBegin[0], win.padBegin[1],
                   padEnd[0], padEnd[1], kind});
  }

  /// rewritePool over run-time sizes (kiln::isDynamicLibraryPool): OH and
  /// OW by ONNX's floor rule, and the end padding oneDNN needs for them,
  /// (O - 1) * stride + k - D - padBegin (never negative there), computed
  /// at run time.
  void rewriteDynamicPool(ModuleOp module, Operation *op) {
    Value x = op->getOperand(0);
    auto xType = cast<RankedTensorType>(x.getType());
    auto yType = cast<RankedTensorType>(op->getResult(0).getType());
    auto [attrs, kind] = poolWindow(op);
    FailureOr<lowering::Window> window = lowering::resolveWindow(
        op, xType.getShape().slice(1, 2), {}, attrs,
        yType.getShape().slice(1, 2));
    if (failed(window))
      return;
    const lowering::Window &win = *window;
    Location loc = op->getLoc();
    OpBuilder b(op);
    auto index = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    auto dimOf = [&](RankedTensorType type, int64_t d) -> Value {
      if (type.isDynamicDim(d))
        return tensor::DimOp::create(b, loc, x, d);
      return index(type.getDimSize(d));
    };
    Value n = dimOf(xType, 0);
    Value in[] = {dimOf(xType, 1), dimOf(xType, 2)};
    Value out[2], padEnd[2];
    for (int i = 0; i < 2; ++i) {
      int64_t k = win.kernel[i], s = win.strides[i];
      // ceil_mode: rounded up (no window to drop: isDynamicLibraryPool).
      Value span = arith::AddIOp::create(
          b, loc, in[i],
          index(win.padBegin[i] + win.padEnd[i] - k +
                (attrs.ceilMode ? s - 1 : 0)));
      out[i] = arith::AddIOp::create(
          b, loc, arith::FloorDivSIOp::create(b, loc, span, index(s)),
          index(1));
      Value reach = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(
              b, loc, arith::SubIOp::create(b, loc, out[i], index(1)),
              index(s)),
          index(k - win.padBegin[i]));
      padEnd[i] = arith::SubIOp::create(b, loc, reach, in[i]);
    }
    Value xPtr = pointerTo(b, loc, x);
    replaceByCall(b, module, op, kPoolKernel, {xPtr},
                  dynamicOf(yType, {n, out[0], out[1]}),
                  {n, in[0], in[1], index(xType.getDimSize(3)), out[0], out[1],
                   index(win.kernel[0]), index(win.kernel[1]),
                   index(win.strides[0]), index(win.strides[1]),
                   index(win.padBegin[0]), index(win.padBegin[1]), padEnd[0],
                   padEnd[1]},
                  {kind});
  }

  /// A float32 MatMul (or Gemm without transposes, alpha 1, and a bias of
  /// N elements or none) of static A [..., M', K] by a weight [K, N], with
  /// at least kMatmulMinRows rows in all.
  static bool isLibraryMatmul(Operation *op) {
    if (!isa<kiln::MatMulOp, kiln::GemmOp>(op))
      return false;
    auto a = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    auto w = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
    auto y = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!a || !w || !y || a.getRank() < 2 || w.getRank() != 2 ||
        !a.hasStaticShape() || !w.hasStaticShape() ||
        !a.getElementType().isF32() || !w.getElementType().isF32() ||
        !y.getElementType().isF32() || !isConstantFilter(op->getOperand(1)) ||
        a.getShape().back() != w.getDimSize(0) || w.getDimSize(0) == 0)
      return false;
    if (auto gemm = dyn_cast<kiln::GemmOp>(op)) {
      if (gemm.getTransA() != 0 || gemm.getTransB() != 0 ||
          gemm.getAlpha().convertToFloat() != 1.0f)
        return false;
      Value c = gemm.getC();
      if (c && !kiln::isNone(c)) {
        auto cType = dyn_cast<RankedTensorType>(c.getType());
        if (gemm.getBeta().convertToFloat() != 1.0f || !cType ||
            !cType.getElementType().isF32() ||
            cType.getNumElements() != w.getDimSize(1) ||
            (cType.getRank() == 2 && cType.getDimSize(0) != 1) ||
            cType.getRank() > 2)
          return false;
      }
    }
    return a.getNumElements() / a.getShape().back() >= kMatmulMinRows;
  }

  /// A new private, zero-initialized, writable 8-byte global.
  StringRef createSlot(ModuleOp module, Location loc) {
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToStart(module.getBody());
    auto type = MemRefType::get({1}, b.getI64Type());
    std::string name;
    do {
      name = "kiln_dnnl_state_" + std::to_string(nextSlot++);
    } while (module.lookupSymbol(name));
    auto zero = DenseElementsAttr::get(
        RankedTensorType::get({1}, b.getI64Type()), b.getI64IntegerAttr(0));
    auto global = memref::GlobalOp::create(
        b, loc, name, b.getStringAttr("private"), type, zero,
        /*constant=*/false, b.getI64IntegerAttr(8));
    return global.getSymName();
  }

  /// The private declaration of kernel `name`: the state slot, `numBuffers`
  /// float pointers, `numIndices` index values.
  func::FuncOp declareKernel(ModuleOp module, StringRef name,
                             unsigned numBuffers, unsigned numIndices) {
    if (auto fn = module.lookupSymbol<func::FuncOp>(name))
      return fn;
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToStart(module.getBody());
    Type f32 = b.getF32Type();
    SmallVector<Type> types{MemRefType::get({1}, b.getI64Type())};
    types.append(numBuffers, MemRefType::get({1}, f32));
    types.append(numIndices, b.getIndexType());
    auto fn = func::FuncOp::create(b, module.getLoc(), name,
                                   b.getFunctionType(types, {}));
    fn.setPrivate();
    return fn;
  }

  /// A tensor's buffer as the 1-element view a kernel's pointer is.
  static Value pointerTo(OpBuilder &b, Location loc, Value tensor) {
    auto type = cast<RankedTensorType>(tensor.getType());
    Type f32 = b.getF32Type();
    auto buffer = bufferization::ToBufferOp::create(
        b, loc, MemRefType::get(type.getShape(), f32), tensor,
        /*read_only=*/true);
    return memref::ReinterpretCastOp::create(
        b, loc, MemRefType::get({1}, f32), buffer, /*offset=*/0,
        /*sizes=*/{1}, /*strides=*/{1});
  }

  /// Replaces `op` by a call to `kernel`: (its state slot, `inputs`, the
  /// result's buffer, `indices`, then `sizes` as index constants); the
  /// result is a new buffer (`dynamicSizes` its run-time dims) as a tensor.
  void replaceByCall(OpBuilder &b, ModuleOp module, Operation *op,
                     StringRef kernel, ArrayRef<Value> inputs,
                     ValueRange dynamicSizes, ArrayRef<Value> indices,
                     ArrayRef<int64_t> sizes) {
    Location loc = op->getLoc();
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    Value out = memref::AllocOp::create(
        b, loc, MemRefType::get(resultType.getShape(), b.getF32Type()),
        dynamicSizes, b.getI64IntegerAttr(64));
    Value outPtr = memref::ReinterpretCastOp::create(
        b, loc, MemRefType::get({1}, b.getF32Type()), out, /*offset=*/0,
        /*sizes=*/{1}, /*strides=*/{1});
    SmallVector<Value> args{memref::GetGlobalOp::create(
        b, loc, MemRefType::get({1}, b.getI64Type()),
        createSlot(module, loc))};
    llvm::append_range(args, inputs);
    args.push_back(outPtr);
    llvm::append_range(args, indices);
    for (int64_t v : sizes)
      args.push_back(arith::ConstantIndexOp::create(b, loc, v));
    unsigned numIndices = indices.size() + sizes.size();
    func::CallOp::create(
        b, loc,
        declareKernel(module, kernel, inputs.size() + 1, numIndices), args);
    Value result = bufferization::ToTensorOp::create(
        b, loc, resultType, out, /*restrict=*/true, /*writable=*/true);
    op->getResult(0).replaceAllUsesWith(result);
    op->erase();
  }

  /// x [..., K] * w [K, N] (+ bias) as one oneDNN matmul of x's rows.
  void rewriteMatmul(ModuleOp module, Operation *op) {
    Location loc = op->getLoc();
    OpBuilder b(op);
    Value x = op->getOperand(0), w = op->getOperand(1), bias;
    if (auto gemm = dyn_cast<kiln::GemmOp>(op))
      if (gemm.getC() && !kiln::isNone(gemm.getC()))
        bias = gemm.getC();
    auto xType = cast<RankedTensorType>(x.getType());
    auto wType = cast<RankedTensorType>(w.getType());
    auto yType = cast<RankedTensorType>(op->getResult(0).getType());
    int64_t k = wType.getDimSize(0), n = wType.getDimSize(1);
    int64_t m = xType.getNumElements() / k;
    Value xPtr = pointerTo(b, loc, x);
    Value wPtr = pointerTo(b, loc, w);
    Value biasPtr = bias ? pointerTo(b, loc, bias) : xPtr;
    replaceByCall(b, module, op, kMatmulKernel, {xPtr, wPtr, biasPtr},
                  ValueRange(), {}, {m, k, n, int64_t(bool(bias)), 1});
  }

  LogicalResult rewrite(ModuleOp module, Operation *op) {
    Location loc = op->getLoc();
    OpBuilder b(op);
    Value x = op->getOperand(0), w = op->getOperand(1),
          bias = op->getOperand(2);
    Value residual;
    int64_t activation = 0, residualFirst = 0;
    kiln::WindowAttrs attrs;
    int64_t group = 1;
    if (auto conv = dyn_cast<kiln::ConvNhwcOp>(op)) {
      attrs = kiln::getConvWindowAttrs(conv);
      group = conv.getGroup();
    } else {
      auto fused = cast<kiln::FusedConvNhwcOp>(op);
      attrs = kiln::getConvWindowAttrs(fused);
      group = fused.getGroup();
      residual = fused.getResidual();
      activation = activationCode(fused.getActivation());
      if (activation < 0)
        return op->emitOpError("no oneDNN post-op for the activation ")
               << fused.getActivation();
      residualFirst = fused.getResidualBeforeActivation();
    }
    if (kiln::isNone(bias))
      bias = Value();
    if (residual && kiln::isNone(residual))
      residual = Value();
    auto xType = cast<RankedTensorType>(x.getType());
    auto wType = cast<RankedTensorType>(w.getType());
    auto yType = cast<RankedTensorType>(op->getResult(0).getType());
    FailureOr<lowering::Window> window = lowering::resolveWindow(
        op, xType.getShape().slice(1, 2), wType.getShape().slice(1, 2), attrs,
        yType.getShape().slice(1, 2));
    if (failed(window))
      return failure();

    Value xPtr = pointerTo(b, loc, x);
    Value wPtr = pointerTo(b, loc, w);
    Value biasPtr = bias ? pointerTo(b, loc, bias) : xPtr;
    Value residualPtr = residual ? pointerTo(b, loc, residual) : xPtr;
    const lowering::Window &win = *window;
    // N, H and W: constants, or the input's run-time dims. A run-time
    // spatial dim's output size and padding by ONNX's rules: explicit
    // padding, floor((D + pads - dilation * (k - 1) - 1) / stride) + 1;
    // SAME, ceil(D / stride), the total padding max(0, (O - 1) * stride +
    // dilation * (k - 1) + 1 - D), its odd element at the end for
    // SAME_UPPER and at the beginning for SAME_LOWER.
    auto index = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    auto dimOf = [&](Value t, RankedTensorType type, int64_t d) -> Value {
      if (type.isDynamicDim(d))
        return tensor::DimOp::create(b, loc, t, d);
      return index(type.getDimSize(d));
    };
    Value n = dimOf(x, xType, 0);
    Value in[2] = {dimOf(x, xType, 1), dimOf(x, xType, 2)};
    Value out[2], padBegin[2], padEnd[2];
    StringRef autoPad = attrs.autoPad;
    bool same = autoPad.starts_with("SAME");
    for (int i = 0; i < 2; ++i) {
      if (!xType.isDynamicDim(1 + i) && !yType.isDynamicDim(1 + i)) {
        out[i] = index(yType.getDimSize(1 + i));
        padBegin[i] = index(win.padBegin[i]);
        padEnd[i] = index(win.padEnd[i]);
        continue;
      }
      int64_t stride = win.strides[i];
      int64_t extent = win.dilations[i] * (win.kernel[i] - 1) + 1;
      if (!same) {
        Value span = arith::AddIOp::create(
            b, loc, in[i], index(win.padBegin[i] + win.padEnd[i] - extent));
        out[i] = arith::AddIOp::create(
            b, loc, arith::FloorDivSIOp::create(b, loc, span, index(stride)),
            index(1));
        padBegin[i] = index(win.padBegin[i]);
        padEnd[i] = index(win.padEnd[i]);
        continue;
      }
      out[i] = arith::FloorDivSIOp::create(
          b, loc, arith::AddIOp::create(b, loc, in[i], index(stride - 1)),
          index(stride));
      Value reach = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(
              b, loc, arith::SubIOp::create(b, loc, out[i], index(1)),
              index(stride)),
          index(extent));
      Value total = arith::MaxSIOp::create(
          b, loc, arith::SubIOp::create(b, loc, reach, in[i]), index(0));
      Value half = arith::FloorDivSIOp::create(b, loc, total, index(2));
      padBegin[i] = autoPad == "SAME_UPPER"
                        ? half
                        : Value(arith::SubIOp::create(b, loc, total, half));
      padEnd[i] = arith::SubIOp::create(b, loc, total, padBegin[i]);
    }
    replaceByCall(
        b, module, op, kKernel, {xPtr, wPtr, biasPtr, residualPtr},
        dynamicOf(yType, {n, out[0], out[1]}),
        {n, in[0], in[1], index(xType.getDimSize(3)), out[0], out[1],
         index(yType.getDimSize(3)), index(wType.getDimSize(1)),
         index(wType.getDimSize(2)), index(group), index(win.strides[0]),
         index(win.strides[1]), index(win.dilations[0]),
         index(win.dilations[1]), padBegin[0], padBegin[1], padEnd[0],
         padEnd[1]},
        {activation, residualFirst, int64_t(bool(bias)),
         int64_t(bool(residual)), int64_t(isConstantFilter(w))});
    return success();
  }

  int64_t nextSlot = 0;
};

} // namespace

std::unique_ptr<Pass> createDnnlCallsPass() {
  return std::make_unique<DnnlCallsPass>();
}

} // namespace kiln::cpu
