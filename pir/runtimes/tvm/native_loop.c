/* The iterations of a scan whose body is compiled kernels only, run in C.
 *
 * A recurrent step (an LSTM or GRU cell after decompose) is three or four small kernels:
 * called from Python, each costs more than its work, and the loop around them more again
 * (pir.runtimes.tvm.native_loop).  Here one call runs every iteration: before each, the
 * tensors that change from one iteration to the next get their data pointer (the rows of
 * the scan inputs and outputs, the states), then every kernel of the body is called, in
 * order, through TVM's C ABI with arguments prepared once.
 */
#include <stdint.h>

#include <tvm/ffi/c_api.h>

typedef int (*pir_call_fn)(void *func, TVMFFIAny *args, int32_t num_args, TVMFFIAny *result);

/* Where a tensor that changes per iteration points at iteration t of n. */
enum {
  PIR_ROWS = 0,     /* base + row * stride, row = t (or n - 1 - t with reverse) */
  PIR_SWAP = 1,     /* base at even t, other at odd t: a state's two buffers */
  PIR_PREVIOUS = 2, /* base at t = 0, else sequence `of` at t - 1: a state read */
};

typedef struct {
  int32_t kind;
  int32_t reverse;
  int32_t of;
  char *base;
  char *other;
  int64_t stride;
} pir_seq;

static char *pir_at(const pir_seq *seqs, int32_t s, int64_t t, int64_t n) {
  const pir_seq *q = &seqs[s];
  if (q->kind == PIR_PREVIOUS) {
    if (t == 0) return q->base;
    q = &seqs[q->of];
    t -= 1;
  }
  if (q->kind == PIR_SWAP) return (t & 1) ? q->other : q->base;
  return q->base + (q->reverse ? n - 1 - t : t) * q->stride;
}

#ifdef __cplusplus
extern "C" { /* TVM's linker driver is a C++ compiler: keep the name unmangled */
#endif

/* Runs n iterations; returns 0, or 1 + the index of the call that failed (its error stays
 * raised in TVM's thread-local state, for the caller to take) with *failed_at its t. */
int pir_run_loop(pir_call_fn call, int64_t n, int32_t n_calls, void **funcs,
                 const int32_t *arg_start, TVMFFIAny *args, const pir_seq *seqs,
                 int32_t n_patches, DLTensor **patched, const int32_t *patch_seq,
                 int64_t *failed_at) {
  for (int64_t t = 0; t < n; ++t) {
    for (int32_t p = 0; p < n_patches; ++p) patched[p]->data = pir_at(seqs, patch_seq[p], t, n);
    for (int32_t c = 0; c < n_calls; ++c) {
      TVMFFIAny result;
      result.type_index = kTVMFFINone;
      result.zero_padding = 0;
      result.v_int64 = 0;
      if (call(funcs[c], args + arg_start[c], arg_start[c + 1] - arg_start[c], &result)) {
        *failed_at = t;
        return c + 1;
      }
    }
  }
  return 0;
}

#ifdef __cplusplus
}
#endif
