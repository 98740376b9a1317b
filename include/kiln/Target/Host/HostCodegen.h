//===- HostCodegen.h - Code for the host CPU, shared by the targets -*- C++ -*-===//
//
// What the CPU target (the whole model) and the CUDA target (the model's
// host code around its kernels) both do to turn an LLVM-dialect module into
// a shared object the runtime loads:
//
//   createPrepareEntryPass   @main's arguments read-only, empty I/O dropped
//   resolveTarget            --cpu -> triple, CPU name, features
//   translateToLLVMIR -> optimizeLLVMModule -> emitMachineCode (obj/asm)
//   linkWithSystemCompiler   object + support archives -> .so bytes
//
// Nothing here names an install path: the LLVM library folder (libomp,
// compiler-rt's builtins) is the one the build found (LLVM_LIBRARY_DIR) or
// $KILN_LLVM_LIBRARY_DIR; Kiln's support archives are found beside the
// running binary (findSupportArchive).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TARGET_HOST_HOSTCODEGEN_H
#define KILN_TARGET_HOST_HOSTCODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class TargetMachine;
} // namespace llvm

namespace mlir::memref {
class CopyOp;
} // namespace mlir::memref

namespace kiln::host {

/// kiln-cpu-prepare-entry: @main's arguments read-only for bufferization,
/// zero-element inputs and outputs dropped (`kiln.entry_slots`). Both the
/// CPU and the CUDA pipelines start with it.
std::unique_ptr<mlir::Pass> createPrepareEntryPass();
/// kiln-cpu-dynamic-entry (after bufferization and out-params): symbolic
/// dims as trailing index parameters of @main, its dynamic buffers as bare
/// pointers reinterpreted at the start.
std::unique_ptr<mlir::Pass> createDynamicEntryPass();
void registerHostCodegenPasses();

/// Replaces each memref.copy under `root` that `select` picks with a
/// linalg.copy of the same operands: the copies the runtime's memcpy does
/// badly or cannot do become loops (CPU) or a copy kernel (CUDA), as any
/// other linalg op.
void copiesToLinalg(mlir::Operation *root,
                    llvm::function_ref<bool(mlir::memref::CopyOp)> select);

/// The resolved target: triple, CPU name, LLVM feature string and the
/// x86 features the artifact records (avx2, fma, avx512f, ...).
struct TargetInfo {
  std::string triple;
  std::string cpu;
  std::string featureString;
  std::vector<std::string> features;
};
/// Resolves a --cpu value: `native` (the host CPU and its features),
/// `generic` (the architecture's baseline, x86-64 on x86) or an LLVM CPU
/// name (skylake-avx512, x86-64-v3). `error` says why it failed.
bool resolveTarget(llvm::StringRef cpu, TargetInfo &info, std::string &error);

std::unique_ptr<llvm::TargetMachine> createTargetMachine(const TargetInfo &info,
                                                         unsigned optLevel,
                                                         std::string &error);
/// The LLVM-dialect module (with OpenMP ops, if any) as LLVM IR, with the
/// target's triple and data layout.
std::unique_ptr<llvm::Module> translateToLLVMIR(mlir::ModuleOp module,
                                                llvm::LLVMContext &context,
                                                llvm::TargetMachine &machine);
/// LLVM's -O<n> pipeline for the target.
bool optimizeLLVMModule(llvm::Module &module, llvm::TargetMachine &machine,
                        unsigned optLevel, std::string &error);
/// An object file (or assembly) of the module.
bool emitMachineCode(llvm::Module &module, llvm::TargetMachine &machine,
                     bool assembly, std::string &out, std::string &error);

/// Modules of at least this many LLVM IR instructions are split for
/// emitObjects (the demo models have a few thousand; DenseNet-121, whose
/// kernels have a thousand shapes, about 100k: 7.9 s in one partition, 4.7
/// s in four on two cores, the same outputs and speed).
/// $KILN_SPLIT_CODEGEN_INSTRUCTIONS overrides it (tests split small models
/// with it).
constexpr size_t kSplitModuleInstructions = 25000;
/// The partitions of a split module: fixed, so that the objects (and the
/// artifact) are the same whatever the machine's core count.
constexpr unsigned kModulePartitions = 4;

/// How many partitions emitObjects makes of `module`: 1, or
/// kModulePartitions for a module of kSplitModuleInstructions or more.
unsigned codegenPartitions(const llvm::Module &module);

/// LLVM's -O<optLevel> pipeline and object emission for `module`, as
/// `partitions` object files that link together. With more than one, the
/// module is split (llvm::SplitModule, its local symbols made hidden ones)
/// and each part optimized and emitted on a thread of its own (at most one
/// per core), in an LLVM context of its own: the code of one function is
/// the same either way, only calls across partitions are not inlined.
bool emitObjects(std::unique_ptr<llvm::Module> module, const TargetInfo &info,
                 unsigned optLevel, unsigned partitions,
                 std::vector<std::string> &objects, std::string &error);

/// The library folder of the LLVM Kiln generates code with (libomp, the
/// clang resource folder): $KILN_LLVM_LIBRARY_DIR, else the one the build
/// was configured with.
std::string llvmLibraryDir();

/// A support archive the link needs (`name`: libkiln_abi.a, ...): $envVar,
/// else in the lib folder beside the running tool (build/bin/../lib), else
/// beside the binary holding the compiler (a library in another program),
/// else where the build put it. The first candidate when none exists.
std::string findSupportArchive(const char *envVar, llvm::StringRef name);

/// Links `object` into an ELF shared object with the system C compiler
/// driver ($KILN_CC, else cc): `cc -shared -o SO OBJ <libraries...>`, plus
/// LLVM's compiler-rt builtins (kept local) for the conversions LLVM lowers
/// to library calls. `what` names the result in errors ("the model's host
/// code").
bool linkWithSystemCompiler(const std::string &object,
                            llvm::ArrayRef<std::string> libraries,
                            llvm::StringRef what, std::string &sharedObject,
                            std::string &error);
/// The same for several object files, linked in their order.
bool linkWithSystemCompiler(llvm::ArrayRef<std::string> objects,
                            llvm::ArrayRef<std::string> libraries,
                            llvm::StringRef what, std::string &sharedObject,
                            std::string &error);

} // namespace kiln::host

#endif // KILN_TARGET_HOST_HOSTCODEGEN_H
