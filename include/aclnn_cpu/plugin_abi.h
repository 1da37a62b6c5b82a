/*
 * aclnn-cpu plugin ABI, version 1.2 (1.1 appended set_node_priority to acp_host_api, 1.2 log_enabled).
 *
 * A plugin is a shared library exporting exactly one C entry point, aclnn_cpu_plugin(), that returns a
 * static descriptor. Nothing C++ crosses this boundary: plain structs (struct_size first, append-only),
 * C function pointers that never throw, status codes plus one-line messages. The core loads the
 * library, checks the descriptor against the operator manifest(s) next to it, enforces the manifest's
 * generic rules (NULLs, dtypes, formats, ranks, attribute ranges, cubeMathType) and only then calls the
 * operator's plan(), which adds the operator's own checks and builds the executor's node graph.
 */
#ifndef ACLNN_CPU_PLUGIN_ABI_H_
#define ACLNN_CPU_PLUGIN_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ACP_ABI_MAJOR 1u
#define ACP_ABI_MINOR 2u
#define ACP_ENTRY_POINT "aclnn_cpu_plugin"

#if defined(__GNUC__)
#define ACP_EXPORT __attribute__((visibility("default")))
#else
#define ACP_EXPORT
#endif

typedef int32_t acp_status; /* aclnnStatus values: 0, 161001, 161002, 361001, 561xxx */

typedef enum acp_arg_kind {
    ACP_ARG_TENSOR = 1,
    ACP_ARG_INT_ARRAY = 2,
    ACP_ARG_BOOL_ARRAY = 3,
    ACP_ARG_FLOAT_ARRAY = 4,
    ACP_ARG_INT = 5,   /* int64_t, int32_t, int8_t parameters, widened to int64 */
    ACP_ARG_BOOL = 6,
    ACP_ARG_FLOAT = 7, /* float / double parameters */
    ACP_ARG_SCALAR = 8 /* aclScalar: value widened to double, scalar_dtype says what it was */
} acp_arg_kind;

/* A tensor view as planned (shape snapshot); its data address is bound at run time (arg_data). */
typedef struct acp_tensor_desc {
    uint32_t struct_size;
    int32_t dtype;  /* aclDataType */
    int32_t format; /* aclFormat */
    uint32_t rank;
    const int64_t *dims;
    const int64_t *strides; /* in elements, >= 0 */
    int64_t offset;         /* in elements */
    uint32_t storage_rank;
    const int64_t *storage_dims;
} acp_tensor_desc;

/* One argument, in manifest signature order. */
typedef struct acp_arg {
    uint32_t struct_size;
    int32_t kind;     /* acp_arg_kind */
    int32_t present;  /* 0 when the caller passed NULL for an optional pointer argument */
    int32_t is_output;
    const char *name; /* the manifest's parameter name */
    const acp_tensor_desc *tensor;
    const int64_t *ints;   /* INT_ARRAY */
    const uint8_t *bools;  /* BOOL_ARRAY, 0/1 */
    const float *floats;   /* FLOAT_ARRAY */
    uint64_t count;        /* element count of the array kinds */
    int64_t i;             /* INT, BOOL (0/1) */
    double f;              /* FLOAT, SCALAR */
    int32_t scalar_dtype;  /* SCALAR */
} acp_arg;

/* What the product's cube unit does to inputs, decided by the core from cubeMathType and the profile. */
typedef enum acp_precision {
    ACP_PREC_NATIVE = 0, /* compute in the input dtype (FLOAT16/BF16 accumulate in FLOAT) */
    ACP_PREC_FP16 = 1,   /* inputs rounded to FLOAT16 before the math */
    ACP_PREC_HF32 = 2,   /* FLOAT inputs rounded to HF32 (11-bit mantissa, RNE) before the math */
    ACP_PREC_BF16 = 3    /* inputs rounded to BF16 (used by the core's store/convert nodes) */
} acp_precision;

typedef enum acp_log_level { ACP_LOG_DEBUG = 0, ACP_LOG_INFO = 1, ACP_LOG_WARNING = 2, ACP_LOG_ERROR = 3 } acp_log_level;

typedef struct acp_run_ctx acp_run_ctx; /* opaque: one phase-2 run of an executor */

/* A compute node. node_data is owned by the plugin's plan state. Return 0 or a status set with fail(). */
typedef acp_status (*acp_node_fn)(void *node_data, const acp_run_ctx *run);

/* Services of the core. Planning functions are valid inside plan() only; run functions inside nodes. */
typedef struct acp_host_api {
    uint32_t struct_size;
    uint32_t abi_minor;

    /* ---- planning ---- */
    /* Reject the call: code 161001/161002/..., message one line naming the parameter, the expected and
     * the given value ("kernelSize[0] must be > 0, got -1"). The core prefixes the operator name. */
    acp_status (*reject)(void *plan, acp_status code, const char *message);
    /* Reserve a workspace slice at a 64-byte multiple from the workspace start; returns its id
     * (>= 0) or -1. The workspace is at least 16-byte aligned (phase 2 refuses less; aclrtMalloc
     * gives 64), so count on 16 bytes in memory: use unaligned vector loads and stores on it. */
    int32_t (*add_buffer)(void *plan, uint64_t bytes);
    /* Add a compute node running after `deps` (node ids). Returns the node id (>= 0) or -1. */
    int32_t (*add_node)(void *plan, const char *name, acp_node_fn fn, void *node_data, const int32_t *deps,
                        uint32_t n_deps);
    /* Core conversion node: copy tensor argument `src_arg` (any strides) into buffer `dst_buffer` as a
     * dense row-major array of `dst_dtype`, rounding values to `precision` on the way. */
    int32_t (*add_convert)(void *plan, int32_t src_arg, int32_t dst_buffer, int32_t dst_dtype, int32_t precision,
                           const int32_t *deps, uint32_t n_deps);
    /* Core store node: write dense buffer `src_buffer` of `src_dtype` into output argument `dst_arg`'s
     * view (any strides), converting to the output dtype with round-to-nearest-even. */
    int32_t (*add_store)(void *plan, int32_t src_buffer, int32_t src_dtype, int32_t dst_arg, const int32_t *deps,
                         uint32_t n_deps);
    /* Hand the plan state (node data) to the executor; destroy(state) runs when the executor dies. */
    void (*set_plan_state)(void *plan, void *state, void (*destroy)(void *state));
    void (*log)(void *plan, int32_t level, const char *message);

    /* ---- running ---- */
    /* Address of element 0 of argument `arg_index`'s view (storage address + offset * element size). */
    void *(*arg_data)(const acp_run_ctx *run, int32_t arg_index);
    void *(*buffer_data)(const acp_run_ctx *run, int32_t buffer_id);
    /* Data-dependent failure (e.g. 361001 for an index out of range); returns code. */
    acp_status (*fail)(const acp_run_ctx *run, acp_status code, const char *message);

    /* ---- since ABI 1.1: present when struct_size covers it (acp::set_node_priority checks) ---- */
    /* Planning: a scheduling hint for node `node`. When several nodes are ready, a free thread starts
     * one of the highest priority first (0, every node's default, is the lowest), and a node passes
     * its priority on to the nodes it waits for. Give long nodes a higher priority than short ones
     * that could run beside them: the run ends sooner when the longest work starts first. Never
     * changes what a node computes. Returns 0, or -1 when there is no such node. */
    int32_t (*set_node_priority)(void *plan, int32_t node, uint32_t priority);

    /* ---- since ABI 1.2: present when struct_size covers it (acp::log_enabled checks) ---- */
    /* Planning: non-zero when log() at `level` (acp_log_level) would write its message, so that a
     * plugin formats debug lines only when someone reads them (plan() runs on every call). */
    int32_t (*log_enabled)(void *plan, int32_t level);
} acp_host_api;

typedef struct acp_plan_ctx {
    uint32_t struct_size;
    void *plan; /* pass to the planning functions */
    const acp_host_api *host;
    const char *op_name;
    const char *product_id;   /* "atlas-a2", ... */
    const char *product_name; /* "Atlas A2 training series ..." */
    int32_t precision;        /* acp_precision from cubeMathType; ACP_PREC_NATIVE when the op has none */
    int32_t threads;          /* worker threads of the runtime */
    const acp_arg *args;
    uint32_t n_args;
} acp_plan_ctx;

typedef struct acp_op {
    uint32_t struct_size;
    const char *name; /* "AvgPool2dBackward": the entry points are aclnn<name>[GetWorkspaceSize] */
    acp_status (*plan)(const acp_plan_ctx *ctx);
} acp_op;

typedef struct acp_plugin {
    uint32_t struct_size;
    uint32_t abi_major;
    uint32_t abi_minor;
    const char *name;
    const char *version;
    const char *description;
    uint32_t n_ops;
    const acp_op *ops;
    /* Optional, may be NULL: called once after loading; non-zero rejects the plugin. */
    acp_status (*init)(const acp_host_api *host, const char **message);
    void *reserved[8];
} acp_plugin;

typedef const acp_plugin *(*acp_entry_fn)(void);

#ifdef __cplusplus
}
#endif
#endif /* ACLNN_CPU_PLUGIN_ABI_H_ */
