/*
 * gpu.h - GPU discovery for the node agent.
 *
 * Order: NVML loaded at run time (dlopen "libnvidia-ml.so.1"; nothing links
 * against it), then `nvidia-smi --query-gpu=index,name,memory.total
 * --format=csv,noheader` found on PATH. A host with neither, or with no GPU,
 * has none: discovery never fails, it finds zero GPUs.
 */
#ifndef TP_AGENT_GPU_H
#define TP_AGENT_GPU_H

#include <stdbool.h>
#include <stddef.h>

#define GPU_MAX 64

struct gpu_info {
	int index;		/* the index CUDA_VISIBLE_DEVICES uses */
	char name[96];		/* as the driver names it: "Tesla T4" */
	const char *type;	/* AcceleratorType enum name, NULL if unknown (static) */
	long memory_mb;		/* -1 when unknown */
};

/*
 * Maps a driver name ("Tesla T4", "NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB
 * HBM3") to the API's AcceleratorType ("NVIDIA_TESLA_T4", ...). Returns a
 * static string, or NULL for a GPU the API has no name for.
 */
const char *gpu_type_from_name(const char *name);
/* Whether s is an accelerator type name the agent may declare (GPU or TPU). */
bool gpu_type_is_gpu(const char *s);
bool gpu_type_is_tpu(const char *s);

/*
 * Parses nvidia-smi's csv,noheader output ("0, Tesla T4, 15360 MiB" per
 * line) into out (capacity max). Lines that do not parse are skipped.
 * Returns the number of GPUs.
 */
size_t gpu_parse_nvidia_smi(const char *text, struct gpu_info *out, size_t max);

/* Runs discovery (NVML, then nvidia-smi). Returns the number found (>= 0). */
size_t gpu_discover(struct gpu_info *out, size_t max);

/*
 * From discovered GPUs, the inventory to declare: the type of the first
 * known GPU and how many GPUs share it (the protocol carries one type per
 * node). Returns the count, 0 with *type NULL when there is none.
 */
int gpu_inventory(const struct gpu_info *gpus, size_t n, const char **type);

#endif
