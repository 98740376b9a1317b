//===- LibraryCalls.cpp - --kernels=library: GEMMs as cuBLASLt calls ------===//
//
// On bufferized IR, replaces each f32/f16/bf16 GEMM (GemmMatch.h: matmul,
// batch_matmul, the generic contractions of reshape propagation) by a host
// call to kiln_rt_cuda_gemm (runtime/include/kiln/cuda_abi.h), which the
// runtime runs with cuBLASLt:
//
//   kiln_rt_cuda_gemm(stream, dtype, epilogue, batch, b_batch, m, n, k,
//                     a, b, bias, c)
//
// C = epilogue(A x B + bias), one rounding to the data type at the end. The
// matcher folds in the zero fill of the accumulator (the call overwrites C)
// and the elementwise op after the matmul when it is exactly that: the
// accumulator, plus a [n] bias, then relu, with the casts between f32 and
// the data type that mixed precision leaves (their double rounding becomes
// cuBLASLt's single one). A f16/bf16 matmul needs that consumer (the
// truncation to f16/bf16 at least): the call writes C in the input type, and
// an f32 accumulator nothing truncates has no call. What cannot be called
// keeps its codegen kernel (tensor cores for f16/bf16) with a remark.
//
// The stream: the call is bracketed as gpu-to-llvm brackets a synchronous
// gpu.launch_func, mgpuStreamCreate (the runtime returns the session's
// stream), then mgpuStreamSynchronize and mgpuStreamDestroy (deferred / no-op
// for the session's stream, cuda_abi.h). They are llvm.call to llvm.func
// declarations of the type gpu-to-llvm uses, which it then reuses. (A
// `gpu.wait async` token as the stream would not do: the canonicalizer drops
// the wait on a token no GPU op depends on.) Pointers are the buffers' aligned
// pointers: the operands have identity layouts (offset 0).
//
// The call is tagged `kiln.cuda.library = "cublaslt_matmul_bias_relu"`;
// kiln-cuda-name-kernels numbers it with the kernels (k<N>_cublaslt_...)
// and puts it in the kernel table with category "gemm".
//
// GELU: cuBLASLt's GELU epilogue is the tanh approximation; Kiln's Gelu
// with approximate="tanh" is folded (recognized by evaluating the body),
// the default erf-based one is not (a different function).
//
//===----------------------------------------------------------------------===//

#include "GemmMatch.h"
#include "RuntimeCalls.h"
#include "kiln/Transforms/Origin.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace kiln::cuda {
namespace {

/// `v` computed by the body for `p` = x: arith/math float ops and
/// constants, casts as the identity (their rounding aside); nullopt for
/// anything else.
std::optional<double> evaluate(Value v, Value p, double x, int depth = 0) {
  if (v == p)
    return x;
  Operation *def = v.getDefiningOp();
  if (!def || depth > 64)
    return std::nullopt;
  if (auto constant = dyn_cast<arith::ConstantOp>(def)) {
    if (auto attr = dyn_cast<FloatAttr>(constant.getValue()))
      return attr.getValueAsDouble();
    return std::nullopt;
  }
  SmallVector<double, 2> args;
  for (Value operand : def->getOperands()) {
    std::optional<double> a = evaluate(operand, p, x, depth + 1);
    if (!a)
      return std::nullopt;
    args.push_back(*a);
  }
  return llvm::TypeSwitch<Operation *, std::optional<double>>(def)
      .Case<arith::ExtFOp, arith::TruncFOp>([&](auto) { return args[0]; })
      .Case<arith::AddFOp>([&](auto) { return args[0] + args[1]; })
      .Case<arith::SubFOp>([&](auto) { return args[0] - args[1]; })
      .Case<arith::MulFOp>([&](auto) { return args[0] * args[1]; })
      .Case<arith::DivFOp>([&](auto) { return args[0] / args[1]; })
      .Case<arith::NegFOp>([&](auto) { return -args[0]; })
      .Case<math::TanhOp>([&](auto) { return std::tanh(args[0]); })
      .Default([](Operation *) { return std::nullopt; });
}

/// Whether `v`, as a function of `p`, is the tanh approximation of GELU
/// (cuBLASLt's GELU epilogue): checked numerically at a few points, so any
/// order the canonicalizer gave the operations matches.
bool isTanhGelu(Value v, Value p) {
  for (double x : {-3.0, -1.2, -0.4, 0.25, 0.9, 2.7}) {
    double expected =
        0.5 * x *
        (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    std::optional<double> got = evaluate(v, p, x);
    // f16 constants are rounded to 11 bits.
    if (!got ||
        std::abs(*got - expected) > 2e-3 * std::max(1.0, std::abs(expected)))
      return false;
  }
  return true;
}

/// The epilogue `generic` of `match` as cuBLASLt's: accumulator [+ bias[n]]
/// [relu | tanh GELU], casts aside. Returns the epilogue code and sets
/// `bias`, or -1.
int32_t matchCublasEpilogue(const GemmMatch &match, linalg::GenericOp generic,
                            Value &bias) {
  Block *body = generic.getBlock();
  for (Operation &op : body->without_terminator())
    if (!isa<arith::ExtFOp, arith::TruncFOp, arith::AddFOp, arith::MaximumFOp,
             arith::MaxNumFOp, arith::ConstantOp, arith::MulFOp, arith::SubFOp,
             arith::DivFOp, arith::NegFOp, math::TanhOp>(op))
      return -1;
  Value acc = body->getArgument(match.epilogueArg);
  Value v =
      skipCasts(cast<linalg::YieldOp>(body->getTerminator()).getOperand(0));
  int32_t epilogue = kNone;
  Operation *def = v.getDefiningOp();
  if (def && isa<arith::MaximumFOp, arith::MaxNumFOp>(def)) {
    Value x = def->getOperand(0), y = def->getOperand(1);
    if (isZeroConstant(x))
      std::swap(x, y);
    if (!isZeroConstant(y))
      return -1;
    epilogue = kRelu;
    v = skipCasts(x);
  } else if (llvm::any_of(body->getOps<math::TanhOp>(),
                          [](math::TanhOp) { return true; })) {
    // GELU of the pre-activation: the bias add if there is one, else the
    // accumulator.
    Value pre = acc;
    for (auto add : body->getOps<arith::AddFOp>())
      if (skipCasts(add.getLhs()) == acc || skipCasts(add.getRhs()) == acc)
        pre = add.getResult();
    if (!isTanhGelu(v, pre))
      return -1;
    epilogue = kGelu;
    v = pre;
  }
  if (auto add = v.getDefiningOp<arith::AddFOp>()) {
    Value x = skipCasts(add.getLhs()), y = skipCasts(add.getRhs());
    if (y == acc)
      std::swap(x, y);
    auto arg = dyn_cast<BlockArgument>(y);
    if (x != acc || !arg || arg.getOwner() != body ||
        arg.getArgNumber() >= generic.getNumDpsInputs())
      return -1;
    OpOperand *input = generic.getDpsInputOperand(arg.getArgNumber());
    auto type = dyn_cast<MemRefType>(input->get().getType());
    AffineMap map = generic.getMatchingIndexingMap(input);
    // A [n] vector along the last loop (the n dimension).
    if (match.numNDims != 1 || !type || type.getRank() != 1 ||
        type.getDimSize(0) != match.n || !type.getLayout().isIdentity() ||
        type.getElementType() != match.inType || map.getNumResults() != 1 ||
        map.getResult(0) !=
            getAffineDimExpr(generic.getNumLoops() - 1, generic.getContext()))
      return -1;
    // A small bias left as a host constant stays in the epilogue kernel.
    if (isHostConstant(input->get()))
      return -1;
    bias = input->get();
    v = x;
  }
  return v == acc ? epilogue : -1;
}

func::FuncOp declareGemm(ModuleOp module) {
  Builder b(module.getContext());
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  return declareCall(
      module, "kiln_rt_cuda_gemm",
      {ptr, i32, i32, i64, i64, i64, i64, i64, ptr, ptr, ptr, ptr});
}

struct LibraryCallsPass
    : PassWrapper<LibraryCallsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LibraryCallsPass)
  StringRef getArgument() const override { return "kiln-cuda-library-calls"; }
  StringRef getDescription() const override {
    return "Replace f32/f16/bf16 GEMMs (with a bias/relu epilogue) by "
           "kiln_rt_cuda_gemm host calls (cuBLASLt); bufferized IR";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<func::FuncDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                    memref::MemRefDialect>();
  }

  /// Why `match` has no call, or "".
  static std::string unsupported(const GemmMatch &match, int32_t epilogue) {
    Type t = match.inType;
    if (!(t.isF32() || t.isF16() || t.isBF16()))
      return "inputs are not f32, f16 or bf16";
    if (!match.accType.isF32())
      return "the accumulator is not f32";
    if (match.bNK)
      return "B is read transposed ([n, k]) by the contraction";
    if (!match.zeroStart)
      return "it accumulates into an existing result (no zero fill)";
    if (!t.isF32() && epilogue < 0)
      return "no elementwise consumer that is a cuBLASLt epilogue (bias, "
             "relu, tanh GELU) writing the " +
             std::string(t.isF16() ? "f16" : "bf16") + " result";
    return "";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<linalg::LinalgOp> candidates;
    module.walk([&](linalg::LinalgOp op) {
      if (op.getNumReductionLoops() >= 1 && op.hasPureBufferSemantics())
        candidates.push_back(op);
    });
    for (linalg::LinalgOp op : candidates) {
      std::string why;
      FailureOr<GemmMatch> match = matchGemm(op, why);
      if (failed(match)) {
        if (!why.empty())
          emitRemark(stripOrigins(op.getLoc()))
              << "CUDA library mode: the contraction of ONNX node '"
              << onnxNodeOf(op) << "' is no cuBLASLt GEMM (" << why
              << "); it stays a generated kernel";
        continue;
      }
      Value bias;
      int32_t epilogue = -1;
      if (match->epilogue) {
        epilogue = matchCublasEpilogue(*match, match->epilogue, bias);
        Type outType = getElementTypeOrSelf(
            match->epilogue.getDpsInitOperand(0)->get().getType());
        if (outType != match->inType)
          epilogue = -1;
        if (epilogue < 0)
          bias = Value();
      }
      // Integer GEMMs are kiln-cuda-int8-calls' (which said why it left
      // one); they go on to the tensor-core kernels.
      if (match->inType.isInteger())
        continue;
      why = unsupported(*match, epilogue);
      if (why.empty() && (isHostConstant(match->a) || isHostConstant(match->b)))
        why = "an operand is a host constant";
      if (!why.empty()) {
        emitRemark(stripOrigins(op.getLoc()))
            << "CUDA library mode: the matmul of ONNX node '" << onnxNodeOf(op)
            << "' is not called (" << why << "); it stays a generated kernel";
        continue;
      }
      linalg::GenericOp folded = epilogue >= 0 ? match->epilogue : nullptr;
      Operation *anchor = folded ? folded.getOperation() : op.getOperation();
      OpBuilder b(anchor);
      // The locations of everything the call computes, in program order:
      // they name the ONNX nodes in the kernel table.
      SmallVector<Location> locs{op.getLoc()};
      if (folded) {
        for (Operation &inner : folded.getBlock()->without_terminator())
          locs.push_back(inner.getLoc());
        locs.push_back(folded.getLoc());
      }
      Location loc = FusedLoc::get(ctx, locs);
      Value c = folded ? folded.getDpsInitOperand(0)->get() : match->c;
      Type t = match->inType;
      int32_t dtype = dtypeOf(t);
      auto i32 = [&](int64_t v) {
        return arith::ConstantIntOp::create(b, loc, v, 32).getResult();
      };
      auto i64 = [&](int64_t v) {
        return arith::ConstantIntOp::create(b, loc, v, 64).getResult();
      };
      Value stream = createStream(b, loc, module);
      Value biasPtr =
          bias ? pointerOf(b, loc, bias)
               : LLVM::ZeroOp::create(b, loc, LLVM::LLVMPointerType::get(ctx))
                     .getResult();
      SmallVector<Value> args{stream,
                              i32(dtype),
                              i32(epilogue < 0 ? kNone : epilogue),
                              i64(match->batch),
                              i64(match->batch),
                              i64(match->m),
                              i64(match->n),
                              i64(match->k),
                              pointerOf(b, loc, match->a),
                              pointerOf(b, loc, match->b),
                              biasPtr,
                              pointerOf(b, loc, c)};
      auto call = func::CallOp::create(b, loc, declareGemm(module), args);
      synchronizeAndDestroyStream(b, loc, module, stream);
      // The kernel table's name: cublaslt_<matmul|gemm>[_bias][_relu].
      SmallVector<std::string> nodes, origins;
      collectLocationInfo(op.getLoc(), nodes, origins);
      bool gemm = llvm::any_of(origins, [](const std::string &o) {
        return StringRef(o).ends_with("gemm");
      });
      std::string name = gemm ? "cublaslt_gemm" : "cublaslt_matmul";
      if (bias)
        name += "_bias";
      if (epilogue == kRelu)
        name += "_relu";
      if (epilogue == kGelu)
        name += "_gelu";
      call->setAttr("kiln.cuda.library", StringAttr::get(ctx, name));

      eraseFolded(*match, folded);
    }
  }
};

} // namespace

void registerLibraryCallsPasses() { PassRegistration<LibraryCallsPass>(); }

} // namespace kiln::cuda
