/* A stand-in for the CUDA shim and runtime, for tests without a GPU: it
 * defines the mgpu* functions a CUDA model's host code calls (exported from
 * this program, so the dlopen'ed code, linked without the shim, binds to
 * them), runs kiln_entry once with host buffers standing for the device
 * ones, and prints each call: the order of allocations, launches, copies
 * and frees, the kernel names, the launch shapes and the profiling hooks.
 * Nothing is computed: the kernels are not run.
 *
 *   fake_mgpu code.so SIZE...   (the byte size of each kiln_entry buffer)
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIVE 4096
static void *live[MAX_LIVE];
static uint64_t liveSize[MAX_LIVE];
static int numLive, launches, loads;
static uint64_t current, peak;
static int stream = 42; /* the one stream's handle */
static int profiled = -1; /* the kernel between its profiling hooks */

void *mgpuModuleLoad(void *data, size_t size) {
  uint32_t magic = 0;
  memcpy(&magic, data, 4);
  printf("module load %zu bytes, magic %08x\n", size, magic);
  ++loads;
  return data;
}
void mgpuModuleUnload(void *module) { (void)module; }
void *mgpuModuleGetFunction(void *module, const char *name) {
  (void)module;
  return (void *)name;
}
void mgpuLaunchKernel(void *function, intptr_t gx, intptr_t gy, intptr_t gz,
                      intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                      void *s, void **params, void **extra, size_t count) {
  (void)params;
  (void)extra;
  /* Kernel kN_... is entry N of the kernel table: its hooks bracket it. */
  const char *name = (const char *)function;
  if (name[0] != 'k' || atoi(name + 1) != profiled)
    printf("HOOK MISMATCH: %s launched inside the hooks of kernel %d\n", name,
           profiled);
  printf("launch %s grid %ldx%ldx%ld block %ldx%ldx%ld smem %d params %zu%s\n",
         (const char *)function, (long)gx, (long)gy, (long)gz, (long)bx,
         (long)by, (long)bz, smem, count,
         s == &stream ? "" : " ON ANOTHER STREAM");
  ++launches;
}
void *mgpuStreamCreate(void) {
  printf("stream create\n");
  return &stream;
}
void mgpuStreamDestroy(void *s) {
  printf("stream destroy%s\n", s == &stream ? "" : " OF ANOTHER STREAM");
}
void mgpuStreamSynchronize(void *s) {
  printf("stream synchronize%s\n", s == &stream ? "" : " OF ANOTHER STREAM");
}
void *mgpuMemAlloc(uint64_t size, void *s, int8_t hostShared) {
  void *p = malloc(size ? size : 1);
  printf("alloc %llu%s%s\n", (unsigned long long)size,
         hostShared ? " host-shared" : "",
         s == &stream ? "" : " ON ANOTHER STREAM");
  if (numLive < MAX_LIVE) {
    live[numLive] = p;
    liveSize[numLive++] = size;
  }
  current += size;
  if (current > peak)
    peak = current;
  return p;
}
void mgpuMemFree(void *p, void *s) {
  (void)s;
  for (int i = 0; i < numLive; ++i)
    if (live[i] == p) {
      printf("free %llu\n", (unsigned long long)liveSize[i]);
      current -= liveSize[i];
      live[i] = live[--numLive];
      liveSize[i] = liveSize[numLive];
      free(p);
      return;
    }
  printf("FREE OF A POINTER NOT ALLOCATED\n");
}
void mgpuMemcpy(void *dst, void *src, size_t size, void *s) {
  (void)s;
  memmove(dst, src, size);
  printf("memcpy %zu\n", size);
}

static void profiler(int32_t kernel, int32_t end) {
  printf("prof %s %d\n", end ? "end" : "begin", kernel);
  profiled = end ? -1 : kernel;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: fake_mgpu code.so SIZE...\n");
    return 2;
  }
  void *so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!so) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  int32_t (*version)(void) = (int32_t(*)(void))dlsym(so, "kiln_abi_version");
  void (*entry)(void **) = (void (*)(void **))dlsym(so, "kiln_entry");
  void (*setProfiler)(void (*)(int32_t, int32_t)) =
      (void (*)(void (*)(int32_t, int32_t)))dlsym(so, "kiln_abi_set_profiler");
  if (!version || !entry) {
    fprintf(stderr, "kiln_abi_version or kiln_entry missing\n");
    return 2;
  }
  printf("abi version %d, profiler hook %s\n", version(),
         setProfiler ? "yes" : "no");
  if (setProfiler)
    setProfiler(profiler);
  int n = argc - 2;
  void **buffers = calloc(n ? n : 1, sizeof(void *));
  for (int i = 0; i < n; ++i)
    buffers[i] = calloc(1, strtoull(argv[i + 2], NULL, 10) + 1);
  printf("run\n");
  entry(buffers);
  printf("done: %d module loads, %d launches, %d live allocations, peak %llu "
         "bytes\n",
         loads, launches, numLive, (unsigned long long)peak);
  return numLive == 0 ? 0 : 1;
}
