/*
 * Unit tests: GPU discovery (agent/gpu.c): driver names to AcceleratorType,
 * nvidia-smi output parsing, and discovery through a fake nvidia-smi on
 * PATH; no GPU (no nvidia-smi, or a failing one) is "none", cleanly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/stat.h>

#include "fixtures/agent/agent_test.h"
#include "gpu.h"

static void gpu__driver_names_map_to_accelerator_types(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
		{ "Tesla T4", "NVIDIA_TESLA_T4" },
		{ "NVIDIA A100-SXM4-40GB", "NVIDIA_TESLA_A100" },
		{ "NVIDIA A100-PCIE-40GB", "NVIDIA_TESLA_A100" },
		{ "NVIDIA A100-SXM4-80GB", "NVIDIA_A100_80GB" },
		{ "NVIDIA A100 80GB PCIe", "NVIDIA_A100_80GB" },
		{ "Tesla V100-SXM2-16GB", "NVIDIA_TESLA_V100" },
		{ "Tesla P100-PCIE-16GB", "NVIDIA_TESLA_P100" },
		{ "Tesla K80", "NVIDIA_TESLA_K80" },
		{ "Tesla P4", "NVIDIA_TESLA_P4" },
		{ "NVIDIA L4", "NVIDIA_L4" },
		{ "NVIDIA H100 80GB HBM3", "NVIDIA_H100_80GB" },	/* read on an H100 host */
		{ "NVIDIA H100 PCIe", "NVIDIA_H100_80GB" },
		{ "NVIDIA H200", "NVIDIA_H200_141GB" },		/* read on an H200 host */
		{ "NVIDIA H200 NVL", "NVIDIA_H200_141GB" },
		{ "NVIDIA B200", "NVIDIA_B200" },
		{ "NVIDIA GB200", "NVIDIA_GB200" },
		{ "NVIDIA RTX PRO 6000 Blackwell Server Edition", "NVIDIA_RTX_PRO_6000" },
		{ "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "NVIDIA_RTX_PRO_6000" },
		{ "tesla t4", "NVIDIA_TESLA_T4" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *got = gpu_type_from_name(cases[i][0]);
		if (!got || strcmp(got, cases[i][1]))
			fail_msg("'%s' -> %s, want %s", cases[i][0], got ? got : "NULL",
				 cases[i][1]);
	}
	assert_null(gpu_type_from_name("Tesla P40"));
	assert_null(gpu_type_from_name("NVIDIA GeForce RTX 3090"));
	assert_null(gpu_type_from_name("NVIDIA T400"));
	/* Neighbours of today's names that the APIs have no type for. */
	assert_null(gpu_type_from_name("NVIDIA GH200 480GB"));
	assert_null(gpu_type_from_name("NVIDIA H20"));
	assert_null(gpu_type_from_name("NVIDIA L40S"));
	assert_null(gpu_type_from_name("NVIDIA RTX 6000 Ada Generation"));
	assert_null(gpu_type_from_name("Quadro RTX 6000"));
	assert_null(gpu_type_from_name(""));
	assert_null(gpu_type_from_name(NULL));
	assert_true(gpu_type_is_gpu("NVIDIA_TESLA_T4"));
	assert_false(gpu_type_is_gpu("TPU_V2"));
	assert_true(gpu_type_is_tpu("TPU_V3"));
	assert_true(gpu_type_is_gpu("NVIDIA_H100_MEGA_80GB"));
	assert_true(gpu_type_is_gpu("NVIDIA_H200_141GB"));
	assert_true(gpu_type_is_gpu("NVIDIA_RTX_PRO_6000"));
	assert_true(gpu_type_is_tpu("TPU_V5_LITEPOD"));
	assert_true(gpu_type_is_tpu("TPU_V6E"));
	assert_false(gpu_type_is_gpu("NVIDIA_H200"));
	assert_false(gpu_type_is_tpu("NVIDIA_L4"));
}

static void gpu__nvidia_smi_csv_is_parsed(void **state)
{
	struct gpu_info g[8];
	(void)state;
	size_t n = gpu_parse_nvidia_smi("0, Tesla T4, 15360 MiB\n"
					"1, Tesla T4, 15360 MiB\r\n"
					"garbage line\n"
					"\n"
					"3, NVIDIA A100-SXM4-40GB, 40960\n"
					"x, Tesla T4, 1 MiB\n"
					"7, NVIDIA GeForce RTX 3090, [N/A]\n", g, 8);
	assert_int_equal(n, 4);
	assert_int_equal(g[0].index, 0);
	assert_string_equal(g[0].name, "Tesla T4");
	assert_string_equal(g[0].type, "NVIDIA_TESLA_T4");
	assert_int_equal(g[0].memory_mb, 15360);
	assert_int_equal(g[1].index, 1);
	assert_int_equal(g[2].index, 3);
	assert_string_equal(g[2].type, "NVIDIA_TESLA_A100");
	assert_int_equal(g[2].memory_mb, 40960);
	assert_int_equal(g[3].index, 7);
	assert_null(g[3].type);
	assert_int_equal(g[3].memory_mb, -1);
	/* Capacity is respected; nothing is an empty list. */
	assert_int_equal(gpu_parse_nvidia_smi("0, Tesla T4, 1\n1, Tesla T4, 1\n", g, 1), 1);
	assert_int_equal(gpu_parse_nvidia_smi("", g, 8), 0);
	/* An 8 x H200 host's lines, as nvidia-smi prints them. */
	n = gpu_parse_nvidia_smi("0, NVIDIA H200, 143771 MiB\n7, NVIDIA H200, 143771 MiB\n", g, 8);
	assert_int_equal(n, 2);
	assert_string_equal(g[1].type, "NVIDIA_H200_141GB");
	assert_int_equal(g[1].memory_mb, 143771);
	assert_int_equal(gpu_parse_nvidia_smi(NULL, g, 8), 0);
}

static void gpu__inventory_takes_one_type(void **state)
{
	struct gpu_info g[8];
	const char *type;
	(void)state;
	size_t n = gpu_parse_nvidia_smi("0, NVIDIA GeForce RTX 3090, 1\n1, Tesla T4, 1\n"
					"2, Tesla V100-SXM2-16GB, 1\n3, Tesla T4, 1\n", g, 8);
	assert_int_equal(gpu_inventory(g, n, &type), 2);
	assert_string_equal(type, "NVIDIA_TESLA_T4");
	assert_int_equal(gpu_inventory(g, 0, &type), 0);
	assert_null(type);
}

/* Puts an executable nvidia-smi with body into a new dir first on PATH. */
static char *fake_nvidia_smi(const char *body, char **old_path)
{
	char *dir = test_tmpdir(), *file = xasprintf("%s/nvidia-smi", dir);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	chmod(file, 0755);
	free(file);
	*old_path = xstrdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	char *path = xasprintf("%s:%s", dir, *old_path);
	setenv("PATH", path, 1);
	free(path);
	return dir;
}

static void restore_path(char *dir, char *old_path)
{
	setenv("PATH", old_path, 1);
	free(old_path);
	test_rm_rf(dir);
	free(dir);
}

static void gpu__discovery_through_a_fake_nvidia_smi(void **state)
{
	struct gpu_info g[GPU_MAX];
	char *old;
	(void)state;
	/* Answers only the query the agent is documented to send. */
	char *dir = fake_nvidia_smi(
		"case \"$*\" in\n"
		"'--query-gpu=index,name,memory.total --format=csv,noheader')\n"
		"  printf '0, NVIDIA A100-SXM4-40GB, 40960 MiB\\n1, NVIDIA A100-SXM4-40GB, 40960 MiB\\n';;\n"
		"*) echo \"unexpected: $*\" >&2; exit 2;;\n"
		"esac", &old);
	size_t n = gpu_discover(g, GPU_MAX);
	restore_path(dir, old);
	assert_int_equal(n, 2);
	assert_int_equal(g[1].index, 1);
	assert_string_equal(g[1].type, "NVIDIA_TESLA_A100");
}

static void gpu__failing_nvidia_smi_means_no_gpu(void **state)
{
	struct gpu_info g[GPU_MAX];
	char *old;
	(void)state;
	char *dir = fake_nvidia_smi("echo \"NVIDIA-SMI has failed because it couldn't communicate "
				    "with the NVIDIA driver.\"; exit 9", &old);
	size_t n = gpu_discover(g, GPU_MAX);
	restore_path(dir, old);
	assert_int_equal(n, 0);
}

static void gpu__no_nvidia_smi_at_all_means_no_gpu(void **state)
{
	struct gpu_info g[GPU_MAX];
	(void)state;
	char *old = xstrdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	setenv("PATH", "/nonexistent", 1);
	size_t n = gpu_discover(g, GPU_MAX);
	setenv("PATH", old, 1);
	free(old);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(gpu__driver_names_map_to_accelerator_types),
		cmocka_unit_test(gpu__nvidia_smi_csv_is_parsed),
		cmocka_unit_test(gpu__inventory_takes_one_type),
		cmocka_unit_test(gpu__discovery_through_a_fake_nvidia_smi),
		cmocka_unit_test(gpu__failing_nvidia_smi_means_no_gpu),
		cmocka_unit_test(gpu__no_nvidia_smi_at_all_means_no_gpu),
	};
	log_set_level(LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
