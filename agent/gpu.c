/*
 * gpu.c - GPU discovery: NVML through dlopen, nvidia-smi as a fallback,
 * and the mapping of driver names to the API's accelerator names.
 */
#include "gpu.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>

#include "log.h"
#include "strbuf.h"

/*
 * Driver name fragments, most specific first, matched case-insensitively as
 * whole tokens. The names are what NVML and nvidia-smi print: "NVIDIA H100
 * 80GB HBM3" and "NVIDIA H200" as read on this project's H100 and H200
 * machines (2026-11), "NVIDIA H100 PCIe", "NVIDIA H200 NVL", "NVIDIA B200",
 * "NVIDIA GB200", "NVIDIA L4", "NVIDIA RTX PRO 6000 Blackwell Server
 * Edition". Not matched: GH200 and H20 (no token H200), L40S (no L4), "RTX
 * 6000 Ada" (no PRO). An A3 Mega's GPUs call themselves H100 80GB HBM3 too:
 * such a node declares gpu_type NVIDIA_H100_MEGA_80GB.
 */
static const struct {
	const char *needle;
	const char *also;	/* a second fragment that must be present, or NULL */
	const char *type;
} gpu_names[] = {
	{ "GB200", NULL, "NVIDIA_GB200" },
	{ "B200", NULL, "NVIDIA_B200" },
	{ "H200", NULL, "NVIDIA_H200_141GB" },
	{ "H100", NULL, "NVIDIA_H100_80GB" },
	{ "RTX PRO 6000", NULL, "NVIDIA_RTX_PRO_6000" },
	{ "A100", "80GB", "NVIDIA_A100_80GB" },
	{ "A100", NULL, "NVIDIA_TESLA_A100" },
	{ "V100", NULL, "NVIDIA_TESLA_V100" },
	{ "P100", NULL, "NVIDIA_TESLA_P100" },
	{ "K80", NULL, "NVIDIA_TESLA_K80" },
	{ "T4", NULL, "NVIDIA_TESLA_T4" },
	{ "P4", NULL, "NVIDIA_TESLA_P4" },
	{ "L4", NULL, "NVIDIA_L4" },
};

/* What a node may declare: the catalog's accelerator names (deploy/catalog.yaml). */
static const char *const gpu_types[] = {
	"NVIDIA_TESLA_K80", "NVIDIA_TESLA_P4", "NVIDIA_TESLA_P100", "NVIDIA_TESLA_V100",
	"NVIDIA_TESLA_T4", "NVIDIA_TESLA_A100", "NVIDIA_A100_80GB", "NVIDIA_L4",
	"NVIDIA_H100_80GB", "NVIDIA_H100_MEGA_80GB", "NVIDIA_H200_141GB", "NVIDIA_B200",
	"NVIDIA_GB200", "NVIDIA_RTX_PRO_6000",
};
static const char *const tpu_types[] = {
	"TPU_V2", "TPU_V3", "TPU_V4_POD", "TPU_V5_LITEPOD", "TPU_V6E",
};

/* Whether word occurs in s as a whole token (not "T4" inside "T40"). */
static bool has_token(const char *s, const char *word)
{
	size_t wl = strlen(word);
	for (const char *p = s; (p = strcasestr(p, word)); p++) {
		bool start = p == s || !isalnum((unsigned char)p[-1]);
		bool end = !isalnum((unsigned char)p[wl]);
		if (start && end)
			return true;
	}
	return false;
}

const char *gpu_type_from_name(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(gpu_names); i++) {
		/* "A100-SXM4-40GB", "A100 80GB PCIe": the model is a token
		 * delimited by anything but letters and digits. */
		if (has_token(name, gpu_names[i].needle) &&
		    (!gpu_names[i].also || strcasestr(name, gpu_names[i].also)))
			return gpu_names[i].type;
	}
	return NULL;
}

bool gpu_type_is_gpu(const char *s)
{
	for (size_t i = 0; s && i < ARRAY_SIZE(gpu_types); i++)
		if (!strcmp(s, gpu_types[i]))
			return true;
	return false;
}

bool gpu_type_is_tpu(const char *s)
{
	for (size_t i = 0; s && i < ARRAY_SIZE(tpu_types); i++)
		if (!strcmp(s, tpu_types[i]))
			return true;
	return false;
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

size_t gpu_parse_nvidia_smi(const char *text, struct gpu_info *out, size_t max)
{
	size_t n = 0;
	char *copy = xstrdup(text ? text : ""), *save = NULL;

	for (char *line = strtok_r(copy, "\n", &save); line && n < max;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f1 = line, *f2 = strchr(f1, ','), *f3;
		if (!f2)
			continue;
		*f2++ = '\0';
		f3 = strrchr(f2, ',');	/* names have no comma; be lenient anyway */
		if (f3)
			*f3++ = '\0';
		char *idx = trim(f1), *name = trim(f2), *end;
		long i = strtol(idx, &end, 10);
		if (end == idx || *end || i < 0 || i > 1023 || !*name)
			continue;
		struct gpu_info *g = &out[n++];
		memset(g, 0, sizeof(*g));
		g->index = (int)i;
		snprintf(g->name, sizeof(g->name), "%s", name);
		g->type = gpu_type_from_name(name);
		g->memory_mb = -1;
		if (f3) {
			char *mem = trim(f3);
			long mb = strtol(mem, &end, 10);
			if (end != mem && mb >= 0)
				g->memory_mb = mb;	/* "15360 MiB" or "15360" */
		}
	}
	free(copy);
	return n;
}

/* NVML's few entry points we need; typed here so nothing links libnvidia-ml. */
typedef int (*nvml_fn_void)(void);
typedef int (*nvml_fn_count)(unsigned int *);
typedef int (*nvml_fn_handle)(unsigned int, void **);
typedef int (*nvml_fn_name)(void *, char *, unsigned int);
typedef int (*nvml_fn_index)(void *, unsigned int *);

static size_t discover_nvml(struct gpu_info *out, size_t max)
{
	void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	size_t n = 0;

	if (!lib) {
		log_debug("gpu: NVML not available: %s", dlerror());
		return 0;
	}
	nvml_fn_void init = (nvml_fn_void)dlsym(lib, "nvmlInit_v2");
	nvml_fn_void shutdown = (nvml_fn_void)dlsym(lib, "nvmlShutdown");
	nvml_fn_count count = (nvml_fn_count)dlsym(lib, "nvmlDeviceGetCount_v2");
	nvml_fn_handle handle = (nvml_fn_handle)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
	nvml_fn_name name = (nvml_fn_name)dlsym(lib, "nvmlDeviceGetName");
	nvml_fn_index index = (nvml_fn_index)dlsym(lib, "nvmlDeviceGetIndex");
	unsigned int c = 0;

	if (!init || !shutdown || !count || !handle || !name || !index || init() != 0) {
		log_warn("gpu: NVML present but unusable; trying nvidia-smi");
		dlclose(lib);
		return 0;
	}
	if (count(&c) == 0) {
		for (unsigned int i = 0; i < c && n < max; i++) {
			void *h;
			unsigned int idx = i;
			char buf[96] = "";
			if (handle(i, &h) != 0 || name(h, buf, sizeof(buf)) != 0)
				continue;
			if (index(h, &idx) != 0)
				idx = i;
			struct gpu_info *g = &out[n++];
			memset(g, 0, sizeof(*g));
			g->index = (int)idx;
			snprintf(g->name, sizeof(g->name), "%s", buf);
			g->type = gpu_type_from_name(buf);
			g->memory_mb = -1;
		}
	}
	shutdown();
	dlclose(lib);
	return n;
}

static size_t discover_nvidia_smi(struct gpu_info *out, size_t max)
{
	/* popen() runs through sh, which finds nvidia-smi on PATH and says
	 * "not found" on stderr (silenced) when there is none. */
	FILE *p = popen("nvidia-smi --query-gpu=index,name,memory.total "
			"--format=csv,noheader 2>/dev/null", "r");
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	size_t got, n = 0;

	if (!p)
		return 0;
	while ((got = fread(buf, 1, sizeof(buf), p)) > 0 && sb.len < (1 << 20))
		sb_add(&sb, buf, got);
	int st = pclose(p);
	if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		n = gpu_parse_nvidia_smi(sb_str(&sb), out, max);
	else
		log_debug("gpu: nvidia-smi absent or failed (status %d)", st);
	sb_release(&sb);
	return n;
}

size_t gpu_discover(struct gpu_info *out, size_t max)
{
	size_t n = discover_nvml(out, max);
	if (!n)
		n = discover_nvidia_smi(out, max);
	for (size_t i = 0; i < n; i++)
		log_info("gpu: found %d '%s' (%s)", out[i].index, out[i].name,
			 out[i].type ? out[i].type : "unknown type, not offered");
	if (!n)
		log_info("gpu: no GPU found");
	return n;
}

int gpu_inventory(const struct gpu_info *gpus, size_t n, const char **type)
{
	int count = 0;
	*type = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!gpus[i].type)
			continue;
		if (!*type)
			*type = gpus[i].type;
		if (!strcmp(*type, gpus[i].type))
			count++;
		else
			log_warn("gpu: %d '%s' is not a %s; a node declares one GPU type, "
				 "it is left out", gpus[i].index, gpus[i].name, *type);
	}
	return count;
}
