//===- Int8Calls.cpp - int8 GEMMs as cuBLASLt IMMA calls (library mode) ---===//
//
// --kernels=library on CUDA: the i32 contraction of kiln.quantized_matmul
// (the linalg.generic marked `kiln.int8_matmul`, A [M, K] read as u8, after
// a xor 0x80 when `a_shifted`, times W [N, K]) becomes a host call
//
//   kiln_rt_cuda_qgemm(stream, m, n, k, a, a_flags, w, c)
//
// C[m, n] = sum_k A[m, k] * W[n, k] in int32 with A and W signed int8: the
// "TN" int8 GEMM of cuBLASLt's IMMA kernels (runtime/include/kiln/
// cuda_abi.h), which has no unsigned operand. Two passes:
//
// kiln-cuda-int8-prepare (tensors, before elementwise fusion) rewrites the
// contraction into the signed one. With u(a) the value the CPU's contract
// multiplies (a as u8, or a + 128 for a shifted i8), s(a') = u(a) - 128 for
// a' = a (shifted i8: the shift is simply not done) or a' = a xor 0x80
// (u8: an elementwise op, which fusion merges into A's producer, usually the
// QuantizeLinear). So
//
//   sum u(A) W = sum s(A') W + 128 * rowsum(W)[n]
//
// and the correction is an elementwise op after the contraction that fusion
// merges into the existing epilogue (which is left exactly as Quant.cpp
// built it: its zero-point terms expect the u8 sum). rowsum(W) is folded at
// compile time when W is a constant, else it is a small reduction over W
// per run (N x K bytes read; W is usually a hoisted weight), one per weight.
// The signed contraction is a linalg.matmul (cast_signed) with W
// transposed by its indexing map, marked `kiln.cuda.qgemm`: a named op, so
// elementwise fusion leaves it (and its operand A') alone, and if no call
// replaces it, it is still the exact int8 GEMM as a plain kernel.
//
// kiln-cuda-int8-calls (bufferized) replaces each marked matmul whose
// operands are dense row-major buffers, and whose accumulator is zero-filled
// right before it, by the call (the call writes C; the fill goes). The
// stream is mgpuStreamCreate's (the session's stream, cuda_abi.h), so the
// call is ordered with the launches; pointers are the buffers' aligned
// pointers (identity layouts: offset 0). The call is tagged
// `kiln.cuda.library = "cublaslt_qgemm"`: kiln-cuda-name-kernels numbers it
// with the kernels (k<N>_cublaslt_qgemm, category gemm) and the host
// pipeline brackets it with the profiling hooks and marks its kernel-table
// entry "library": true.
//
// cuBLASLt's IMMA kernels (non-COL32 layouts) need 4-byte aligned pointers
// and N and K multiples of 4 (its m and k, and the leading dimensions):
// other shapes keep Kiln's generated kernel, with a remark. So does a u8
// weight (no signed form without a correction per row of A).
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "kiln/Target/CUDA/CudaBackend.h"
#include "kiln/Transforms/Origin.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kiln::cuda {
namespace {

constexpr StringLiteral kMarker = "kiln.cuda.qgemm";

/// The row sums of a constant [N, K] int8 weight, or nothing.
std::optional<SmallVector<int32_t>> constantRowSums(Value w, int64_t n,
                                                    int64_t k) {
  auto constant = w.getDefiningOp<arith::ConstantOp>();
  if (!constant)
    return std::nullopt;
  SmallVector<int32_t> sums(n, 0);
  Attribute value = constant.getValue();
  if (auto dense = dyn_cast<DenseIntElementsAttr>(value)) {
    if (dense.getNumElements() != n * k)
      return std::nullopt;
    int64_t i = 0;
    for (const APInt &v : dense.getValues<APInt>()) // splats repeat
      sums[i++ / k] += static_cast<int32_t>(v.getSExtValue());
    return sums;
  }
  if (auto resource = dyn_cast<DenseI8ResourceElementsAttr>(value)) {
    std::optional<ArrayRef<int8_t>> data = resource.tryGetAsArrayRef();
    if (!data || static_cast<int64_t>(data->size()) != n * k)
      return std::nullopt;
    for (int64_t i = 0; i < n * k; ++i)
      sums[i / k] += (*data)[i];
    return sums;
  }
  return std::nullopt;
}

bool isZeroFill(linalg::FillOp fill) {
  auto constant =
      fill.getDpsInputOperand(0)->get().getDefiningOp<arith::ConstantOp>();
  auto attr = constant ? dyn_cast<IntegerAttr>(constant.getValue()) : nullptr;
  return attr && attr.getValue().isZero();
}

struct Int8PreparePass
    : PassWrapper<Int8PreparePass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Int8PreparePass)
  Int8PreparePass() = default;
  Int8PreparePass(const Int8PreparePass &other) : PassWrapper(other) {}
  StringRef getArgument() const override { return "kiln-cuda-int8-prepare"; }
  StringRef getDescription() const override {
    return "Rewrite kiln.int8_matmul contractions into signed int8 "
           "linalg.matmul ops plus a correction (for cuBLASLt IMMA calls, "
           "or the tensor-core kernels of codegen mode)";
  }
  // Codegen mode (false): no cuBLASLt shape limits; the tensor-core kernel
  // (MatmulKernels.cpp) has its own, and remarks on them.
  Option<bool> library{*this, "library",
                       llvm::cl::desc("For cuBLASLt calls (--kernels=library)"),
                       llvm::cl::init(true)};
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, linalg::LinalgDialect,
                    tensor::TensorDialect>();
  }

  void runOnOperation() override {
    rowSums.clear();
    SmallVector<linalg::GenericOp> candidates;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op->hasAttr("kiln.int8_matmul") && op.hasPureTensorSemantics() &&
          op.getNumDpsInputs() == 2 && op.getNumDpsInits() == 1)
        candidates.push_back(op);
    });
    for (linalg::GenericOp op : candidates)
      rewrite(op);
  }

  /// The run-time row sums of each weight, shared by its contractions (Q, K
  /// and V projections of one input read different weights, but a weight
  /// may be used twice).
  llvm::DenseMap<Value, Value> rowSums;

  void rewrite(linalg::GenericOp op) {
    MLIRContext *ctx = op.getContext();
    auto attr = op->getAttrOfType<DictionaryAttr>("kiln.int8_matmul");
    auto flag = [&](StringRef name) {
      auto v = attr ? attr.getAs<BoolAttr>(name) : nullptr;
      return v && v.getValue();
    };
    std::string node = findOnnxNode(op.getLoc());
    auto keep = [&](const Twine &why) {
      emitRemark(stripOrigins(op.getLoc()))
          << (library ? "CUDA library mode" : "CUDA")
          << ": the int8 GEMM of ONNX node '" << (node.empty() ? "?" : node)
          << "' stays a generated kernel" << (library ? "" : " (no IMMA)")
          << ": " << why;
    };
    Value a = op.getDpsInputOperand(0)->get();
    Value w = op.getDpsInputOperand(1)->get();
    Value init = op.getDpsInitOperand(0)->get();
    auto aType = cast<RankedTensorType>(a.getType());
    auto wType = cast<RankedTensorType>(w.getType());
    auto accType = cast<RankedTensorType>(op.getResult(0).getType());
    if (!aType.hasStaticShape() || !wType.hasStaticShape() ||
        aType.getRank() != 2 || wType.getRank() != 2)
      return keep("dynamic shape");
    if (flag("w_unsigned"))
      return keep("a uint8 weight (cuBLASLt's IMMA GEMM is int8 x int8)");
    int64_t k = aType.getDimSize(1), n = wType.getDimSize(0);
    if (library && (n % 4 != 0 || k % 4 != 0))
      return keep("cuBLASLt's int8 GEMM needs N and K multiples of 4 (N " +
                  Twine(n) + ", K " + Twine(k) + ")");
    auto fill = init.getDefiningOp<linalg::FillOp>();
    if (!fill || !isZeroFill(fill))
      return keep("the accumulator is not zero-initialized");
    if (!accType.getElementType().isInteger(32))
      return keep("an accumulator that is not i32");

    OpBuilder b(op);
    Location loc = op.getLoc();
    Type i8 = b.getI8Type(), i32 = b.getI32Type();
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    // A' with s(A') = u(A) - 128: an i8 activation as it is (the shift is
    // not done), an u8 one xor 0x80.
    Value aSigned = a;
    if (!flag("a_shifted")) {
      Value empty = tensor::EmptyOp::create(b, loc, aType.getShape(), i8);
      AffineMap id = AffineMap::getMultiDimIdentityMap(2, ctx);
      aSigned = linalg::GenericOp::create(
                    b, loc, TypeRange{aType}, ValueRange{a}, ValueRange{empty},
                    ArrayRef<AffineMap>{id, id},
                    SmallVector<utils::IteratorType>(
                        2, utils::IteratorType::parallel),
                    [&](OpBuilder &nb, Location l, ValueRange args) {
                      Value c = arith::ConstantIntOp::create(nb, l, i8, -128);
                      linalg::YieldOp::create(
                          nb, l,
                          ValueRange{arith::XOrIOp::create(nb, l, args[0], c)});
                    })
                    .getResult(0);
    }
    // The signed contraction, W transposed by its map, onto a zero fill of
    // its own: CSE may have given several contractions one fill, which
    // bufferization would then copy, and the call overwrites its output.
    Value ownInit = linalg::FillOp::create(
                        b, loc, fill.getDpsInputOperand(0)->get(),
                        tensor::EmptyOp::create(b, loc, accType.getShape(), i32)
                            .getResult())
                        .getResult(0);
    auto matmul =
        linalg::MatmulOp::create(b, loc, TypeRange{accType},
                                 ValueRange{aSigned, w}, ValueRange{ownInit});
    matmul->setAttr(
        "indexing_maps",
        b.getAffineMapArrayAttr({AffineMap::get(3, 0, {d(0), d(2)}, ctx),
                                 AffineMap::get(3, 0, {d(1), d(2)}, ctx),
                                 AffineMap::get(3, 0, {d(0), d(1)}, ctx)}));
    matmul->setAttr(kMarker, b.getUnitAttr());

    // 128 * rowsum(W)[n]: a constant when W is one, else a reduction.
    auto rowType = RankedTensorType::get({n}, i32);
    Value correction;
    bool scaled = false;
    if (auto sums = constantRowSums(w, n, k)) {
      SmallVector<int32_t> values;
      for (int32_t s : *sums)
        values.push_back(128 * s);
      correction = arith::ConstantOp::create(
          b, loc, DenseIntElementsAttr::get(rowType, ArrayRef(values)));
      scaled = true;
    } else if (Value cached = rowSums.lookup(w);
               cached && cached.getDefiningOp()->getBlock() == op->getBlock() &&
               cached.getDefiningOp()->isBeforeInBlock(op)) {
      correction = cached;
    } else {
      Value zero = arith::ConstantIntOp::create(b, loc, i32, 0);
      Value sumInit =
          linalg::FillOp::create(
              b, loc, zero,
              tensor::EmptyOp::create(b, loc, rowType.getShape(), i32)
                  .getResult())
              .getResult(0);
      correction =
          linalg::GenericOp::create(
              b, loc, TypeRange{rowType}, ValueRange{w}, ValueRange{sumInit},
              ArrayRef<AffineMap>{AffineMap::getMultiDimIdentityMap(2, ctx),
                                  AffineMap::get(2, 0, {d(0)}, ctx)},
              ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                            utils::IteratorType::reduction},
              [&](OpBuilder &nb, Location l, ValueRange args) {
                Value x = arith::ExtSIOp::create(nb, l, i32, args[0]);
                linalg::YieldOp::create(
                    nb, l,
                    ValueRange{arith::AddIOp::create(nb, l, x, args[1])});
              })
              .getResult(0);
      rowSums[w] = correction;
    }
    Value empty = tensor::EmptyOp::create(b, loc, accType.getShape(), i32);
    AffineMap id = AffineMap::getMultiDimIdentityMap(2, ctx);
    Value corrected =
        linalg::GenericOp::create(
            b, loc, TypeRange{accType},
            ValueRange{matmul.getResult(0), correction}, ValueRange{empty},
            ArrayRef<AffineMap>{id, AffineMap::get(2, 0, {d(1)}, ctx), id},
            SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel),
            [&](OpBuilder &nb, Location l, ValueRange args) {
              Value c = args[1];
              if (!scaled)
                c = arith::MulIOp::create(
                    nb, l, c, arith::ConstantIntOp::create(nb, l, i32, 128));
              linalg::YieldOp::create(
                  nb, l, ValueRange{arith::AddIOp::create(nb, l, args[0], c)});
            })
            .getResult(0);
    op.getResult(0).replaceAllUsesWith(corrected);
    op.erase();
  }
};

func::FuncOp declareQGemm(ModuleOp module) {
  Builder b(module.getContext());
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  return declareCall(module, "kiln_rt_cuda_qgemm",
                     {ptr, i64, i64, i64, ptr, i32, ptr, ptr});
}

/// A static row-major buffer (identity layout, so offset 0 and contiguous
/// rows).
bool isDenseRowMajor(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.hasStaticShape() && type.getLayout().isIdentity() &&
         type.getRank() == 2;
}

struct Int8CallsPass : PassWrapper<Int8CallsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Int8CallsPass)
  StringRef getArgument() const override { return "kiln-cuda-int8-calls"; }
  StringRef getDescription() const override {
    return "Replace the signed int8 matmuls of kiln-cuda-int8-prepare by "
           "kiln_rt_cuda_qgemm host calls (cuBLASLt IMMA); bufferized IR";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, func::FuncDialect, LLVM::LLVMDialect,
                    memref::MemRefDialect>();
  }

  /// The zero fill of `c` this matmul accumulates onto: the nearest earlier
  /// op of the block touching `c`, if it is one.
  static linalg::FillOp zeroFillBefore(Operation *op, Value c) {
    for (Operation *p = op->getPrevNode(); p; p = p->getPrevNode()) {
      if (!llvm::is_contained(p->getOperands(), c))
        continue;
      auto fill = dyn_cast<linalg::FillOp>(p);
      return fill && fill.getDpsInitOperand(0)->get() == c && isZeroFill(fill)
                 ? fill
                 : nullptr;
    }
    return nullptr;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<linalg::MatmulOp> candidates;
    module.walk([&](linalg::MatmulOp op) {
      if (op->hasAttr(kMarker) && op.hasPureBufferSemantics())
        candidates.push_back(op);
    });
    for (linalg::MatmulOp op : candidates) {
      Value a = op.getDpsInputOperand(0)->get();
      Value w = op.getDpsInputOperand(1)->get();
      Value c = op.getDpsInitOperand(0)->get();
      std::string node = findOnnxNode(op.getLoc());
      auto keep = [&](StringRef why) {
        emitRemark(stripOrigins(op.getLoc()))
            << "CUDA library mode: the int8 GEMM of ONNX node '"
            << (node.empty() ? "?" : node)
            << "' stays a generated kernel: " << why;
      };
      if (!isDenseRowMajor(a) || !isDenseRowMajor(w) || !isDenseRowMajor(c)) {
        keep("an operand is not a dense row-major buffer");
        continue;
      }
      if (isHostConstant(a) || isHostConstant(w)) {
        keep("an operand is a constant of the module, not a device buffer "
             "(weights under kiln-hoist-weights' 256 bytes stay constants)");
        continue;
      }
      linalg::FillOp fill = zeroFillBefore(op, c);
      if (!fill) {
        keep("no zero fill of the accumulator right before it");
        continue;
      }
      auto shape = [](Value v) {
        return cast<MemRefType>(v.getType()).getShape();
      };
      int64_t m = shape(a)[0], k = shape(a)[1], n = shape(w)[0];
      OpBuilder b(op);
      Location loc = op.getLoc();
      Type ptr = LLVM::LLVMPointerType::get(ctx);
      Value stream = createStream(b, loc, module);
      auto i64 = [&](int64_t v) {
        return arith::ConstantIntOp::create(b, loc, v, 64).getResult();
      };
      // a_flags 0: A is int8 (KILN_CUDA_QGEMM_A_INT8).
      Value flags = arith::ConstantIntOp::create(b, loc, 0, 32);
      auto call = func::CallOp::create(
          b, loc, declareQGemm(module),
          ValueRange{stream, i64(m), i64(n), i64(k), pointerOf(b, loc, a),
                     flags, pointerOf(b, loc, w), pointerOf(b, loc, c)});
      call->setAttr("kiln.cuda.library",
                    StringAttr::get(ctx, "cublaslt_qgemm"));
      // The session's stream: destroying it is a no-op (cuda_abi.h); no
      // synchronization, the launches after it are on the same stream.
      LLVM::CallOp::create(b, loc,
                           declareRuntime(module, "mgpuStreamDestroy",
                                          LLVM::LLVMVoidType::get(ctx), {ptr}),
                           ValueRange{stream});
      fill.erase();
      op.erase();
    }
  }
};

} // namespace

void registerInt8CallsPasses() {
  PassRegistration<Int8PreparePass>();
  PassRegistration<Int8CallsPass>();
}

} // namespace kiln::cuda
