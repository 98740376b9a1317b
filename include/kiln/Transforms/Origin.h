//===- Origin.h - Which kiln op a lowered op came from ----------*- C++ -*-===//
//
// The CPU backend's kernel profiler (kiln-cpu-instrument-kernels) names each
// kernel by the kiln op it was lowered from and files it under a category
// (GEMM, attention, ...). Discardable attributes do not survive the way
// there (elementwise fusion, tiling and bufferization build new ops), but
// locations do: every step gives the ops it creates the location of the op
// they replace. So the origin rides in the location, as the metadata of a
// FusedLoc wrapping the original one:
//
//   loc(fused<"kiln.matmul">["/layer0/MatMul"])
//
// convert-kiln-to-linalg wraps each kiln op's location this way before
// lowering it, and kiln-decompose-fused wraps the fused ops (attention,
// linear_attention, rms_norm, ...) before decomposing them, so a matmul
// from an attention reads fused<"kiln.matmul">[fused<"kiln.attention">[..]].
// The ONNX node names (NameLoc) stay inside, where findOnnxNodes finds them.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TRANSFORMS_ORIGIN_H
#define KILN_TRANSFORMS_ORIGIN_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace kiln {

/// `loc` wrapped as coming from an op named `opName` (e.g. "kiln.matmul").
/// Wrapping twice with the same name is a no-op.
inline mlir::Location withOrigin(mlir::Location loc, llvm::StringRef opName) {
  mlir::MLIRContext *context = loc->getContext();
  auto name = mlir::StringAttr::get(context, opName);
  if (auto fused = llvm::dyn_cast<mlir::FusedLoc>(loc))
    if (fused.getMetadata() == name)
      return loc;
  return mlir::FusedLoc::get(context, {loc}, name);
}

/// Marks `op`'s location with its own name as origin.
inline void tagOrigin(mlir::Operation *op) {
  op->setLoc(withOrigin(op->getLoc(), op->getName().getStringRef()));
}

/// `loc` without the origin wrappers around it (for messages).
inline mlir::Location stripOrigins(mlir::Location loc) {
  while (auto fused = llvm::dyn_cast<mlir::FusedLoc>(loc)) {
    auto meta = llvm::dyn_cast_or_null<mlir::StringAttr>(fused.getMetadata());
    if (!meta || !meta.getValue().starts_with("kiln.") ||
        fused.getLocations().size() != 1)
      break;
    loc = fused.getLocations().front();
  }
  return loc;
}

/// Appends the ONNX node names (NameLoc) and the origins (kiln op names,
/// outermost first) found in `loc`, each once, in the order met (pre-order).
inline void collectLocationInfo(mlir::Location loc,
                                llvm::SmallVectorImpl<std::string> &nodes,
                                llvm::SmallVectorImpl<std::string> &origins) {
  auto addOnce = [](llvm::SmallVectorImpl<std::string> &list,
                    llvm::StringRef s) {
    if (!s.empty() && !llvm::is_contained(list, s))
      list.push_back(s.str());
  };
  if (auto name = llvm::dyn_cast<mlir::NameLoc>(loc)) {
    addOnce(nodes, name.getName().getValue());
    collectLocationInfo(name.getChildLoc(), nodes, origins);
  } else if (auto fused = llvm::dyn_cast<mlir::FusedLoc>(loc)) {
    if (auto meta =
            llvm::dyn_cast_or_null<mlir::StringAttr>(fused.getMetadata()))
      if (meta.getValue().starts_with("kiln."))
        addOnce(origins, meta.getValue());
    for (mlir::Location inner : fused.getLocations())
      collectLocationInfo(inner, nodes, origins);
  } else if (auto call = llvm::dyn_cast<mlir::CallSiteLoc>(loc)) {
    collectLocationInfo(call.getCallee(), nodes, origins);
    collectLocationInfo(call.getCaller(), nodes, origins);
  }
}

/// The ONNX node names (NameLoc) in `loc`, each once: into `lowered` those
/// inside an origin wrapper (the nodes of kiln ops), into `other` the rest
/// (the names the importer gives graph inputs and initializers, which are
/// not nodes). Every target's kernel table names its kernels' nodes so.
inline void collectNodes(mlir::Location loc, bool underOrigin,
                         llvm::SmallVectorImpl<std::string> &lowered,
                         llvm::SmallVectorImpl<std::string> &other) {
  if (auto name = llvm::dyn_cast<mlir::NameLoc>(loc)) {
    auto &list = underOrigin ? lowered : other;
    if (!llvm::is_contained(list, name.getName().getValue()))
      list.push_back(name.getName().str());
    collectNodes(name.getChildLoc(), underOrigin, lowered, other);
  } else if (auto fused = llvm::dyn_cast<mlir::FusedLoc>(loc)) {
    auto meta = llvm::dyn_cast_or_null<mlir::StringAttr>(fused.getMetadata());
    bool origin = underOrigin || (meta && meta.getValue().starts_with("kiln."));
    for (mlir::Location inner : fused.getLocations())
      collectNodes(inner, origin, lowered, other);
  } else if (auto call = llvm::dyn_cast<mlir::CallSiteLoc>(loc)) {
    collectNodes(call.getCallee(), underOrigin, lowered, other);
    collectNodes(call.getCaller(), underOrigin, lowered, other);
  }
}

/// The first ONNX node name in `loc` ("" when none).
inline std::string findOnnxNode(mlir::Location loc) {
  llvm::SmallVector<std::string> nodes, origins;
  collectLocationInfo(loc, nodes, origins);
  return nodes.empty() ? std::string() : nodes.front();
}

} // namespace kiln

#endif // KILN_TRANSFORMS_ORIGIN_H
