/*===- artifact_format.h - Constants of the model artifact format ---------===*
 *
 * The constants of docs/artifact.md for C and C++: the file layout of a
 * model.kiln, the content hash, and the tensor element types with their
 * ONNX TensorProto codes. Header-only and dependency-free: the compiler, the
 * runtime and the tools share it.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_ARTIFACT_FORMAT_H
#define KILN_ARTIFACT_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The fixed-size file prefix (all fields little-endian). */
#define KILN_ARTIFACT_MAGIC "KILNART" /* 8 bytes with the trailing NUL */
#define KILN_ARTIFACT_MAGIC_SIZE 8
#define KILN_ARTIFACT_VERSION 1u
#define KILN_ARTIFACT_OFF_VERSION 8
#define KILN_ARTIFACT_OFF_RESERVED 12
#define KILN_ARTIFACT_OFF_HEADER_SIZE 16
#define KILN_ARTIFACT_OFF_DATA_OFFSET 24
#define KILN_ARTIFACT_OFF_HASH 32
#define KILN_ARTIFACT_PREFIX_SIZE 40 /* the header JSON starts here */
/* The data area and every section and weight in it are aligned to this. */
#define KILN_ARTIFACT_ALIGNMENT 64
/* Weights larger than this go to a side file "<artifact>.weights". */
#define KILN_ARTIFACT_SIDE_WEIGHTS_THRESHOLD (2ull << 30)
/* The code ABI version (kiln_abi_version() of the code section). */
#define KILN_CODE_ABI_VERSION 1

/* FNV-1a 64: the content hash is this over the header JSON bytes, continued
 * over the bytes [data offset, end of file). Start with
 * KILN_FNV1A64_OFFSET_BASIS and feed the pieces in order. */
#define KILN_FNV1A64_OFFSET_BASIS 0xcbf29ce484222325ull
#define KILN_FNV1A64_PRIME 0x100000001b3ull

static inline uint64_t kiln_fnv1a64(uint64_t hash, const void *data,
                                    size_t size) {
  const unsigned char *p = (const unsigned char *)data;
  for (size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= KILN_FNV1A64_PRIME;
  }
  return hash;
}

/* Element types: the values are ONNX TensorProto.DataType codes. */
typedef enum kiln_dtype {
  KILN_DTYPE_UNDEFINED = 0,
  KILN_DTYPE_FLOAT32 = 1,
  KILN_DTYPE_UINT8 = 2,
  KILN_DTYPE_INT8 = 3,
  KILN_DTYPE_UINT16 = 4,
  KILN_DTYPE_INT16 = 5,
  KILN_DTYPE_INT32 = 6,
  KILN_DTYPE_INT64 = 7,
  KILN_DTYPE_BOOL = 9,
  KILN_DTYPE_FLOAT16 = 10,
  KILN_DTYPE_FLOAT64 = 11,
  KILN_DTYPE_UINT32 = 12,
  KILN_DTYPE_UINT64 = 13,
  KILN_DTYPE_BFLOAT16 = 16
} kiln_dtype;

/* The artifact's name of a dtype ("float32", ...), or NULL if unknown. */
static inline const char *kiln_dtype_name(int32_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_FLOAT32: return "float32";
  case KILN_DTYPE_UINT8: return "uint8";
  case KILN_DTYPE_INT8: return "int8";
  case KILN_DTYPE_UINT16: return "uint16";
  case KILN_DTYPE_INT16: return "int16";
  case KILN_DTYPE_INT32: return "int32";
  case KILN_DTYPE_INT64: return "int64";
  case KILN_DTYPE_BOOL: return "bool";
  case KILN_DTYPE_FLOAT16: return "float16";
  case KILN_DTYPE_FLOAT64: return "float64";
  case KILN_DTYPE_UINT32: return "uint32";
  case KILN_DTYPE_UINT64: return "uint64";
  case KILN_DTYPE_BFLOAT16: return "bfloat16";
  default: return NULL;
  }
}

/* The dtype code of an artifact dtype name, or KILN_DTYPE_UNDEFINED. */
static inline int32_t kiln_dtype_from_name(const char *name) {
  static const int32_t codes[] = {
      KILN_DTYPE_FLOAT32, KILN_DTYPE_UINT8,   KILN_DTYPE_INT8,
      KILN_DTYPE_UINT16,  KILN_DTYPE_INT16,   KILN_DTYPE_INT32,
      KILN_DTYPE_INT64,   KILN_DTYPE_BOOL,    KILN_DTYPE_FLOAT16,
      KILN_DTYPE_FLOAT64, KILN_DTYPE_UINT32,  KILN_DTYPE_UINT64,
      KILN_DTYPE_BFLOAT16};
  for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); ++i)
    if (name && strcmp(name, kiln_dtype_name(codes[i])) == 0)
      return codes[i];
  return KILN_DTYPE_UNDEFINED;
}

/* Bytes per element of a dtype (bool: 1), or 0 if unknown. */
static inline size_t kiln_dtype_size(int32_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_UINT8:
  case KILN_DTYPE_INT8:
  case KILN_DTYPE_BOOL: return 1;
  case KILN_DTYPE_UINT16:
  case KILN_DTYPE_INT16:
  case KILN_DTYPE_FLOAT16:
  case KILN_DTYPE_BFLOAT16: return 2;
  case KILN_DTYPE_FLOAT32:
  case KILN_DTYPE_INT32:
  case KILN_DTYPE_UINT32: return 4;
  case KILN_DTYPE_INT64:
  case KILN_DTYPE_FLOAT64:
  case KILN_DTYPE_UINT64: return 8;
  default: return 0;
  }
}

#ifdef __cplusplus
}
#endif

#endif /* KILN_ARTIFACT_FORMAT_H */
