/*
 * fuzz_validate.c - libFuzzer target for the rule engine (spec/validate.c).
 *
 * Each input is parsed as JSON (any value) and fed to every validator: the
 * ml v1 rules on "trainingInput" (or the whole value), the label rules on
 * "labels" and on the whole value, and the Vertex rules on "jobSpec" (or the
 * whole value) in "location" (default us-central1). The validators must
 * survive anything, including what the structural pass would have refused:
 * no crash, no undefined behaviour, no leak.
 *
 * Build and run: tools/fuzz.sh (FUZZ_SECONDS, default 600). The catalog is
 * deploy/catalog.yaml, or $TP_FUZZ_CATALOG.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "validate.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct catalog *cat;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *path = getenv("TP_FUZZ_CATALOG");
	char err[512];

	(void)argc;
	(void)argv;
	if (catalog_load(path ? path : "deploy/catalog.yaml", &cat, err, sizeof(err))) {
		fprintf(stderr, "fuzz_validate: %s\n", err);
		abort();
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct violations vs = VIOLATIONS_INIT;
	const json_t *ti, *spec;
	const char *loc;
	json_error_t jerr;
	json_t *root;
	size_t n = 0;

	root = json_loadb((const char *)data, size, JSON_DECODE_ANY, &jerr);
	if (!root)
		return 0;
	ti = json_object_get(root, "trainingInput");
	n += spec_check_ml(cat, ti ? ti : root, &vs);
	n += spec_validate_labels(json_object_get(root, "labels"), "job.labels", &vs);
	n += spec_validate_labels(root, "job.labels", &vs);
	spec = json_object_get(root, "jobSpec");
	loc = json_string_value(json_object_get(root, "location"));
	n += spec_check_vertex(cat, loc ? loc : "us-central1", spec ? spec : root, &vs);
	/* A HyperparameterTuningJob: its study (conditional parameters nested
	 * any way) and its trialJobSpec. */
	struct training_spec st;
	n += spec_vertex_study_parse(root, "us-central1", &st, &vs);
	n += spec_validate_vertex_study(&st, &vs);
	n += spec_validate_vertex(cat, &st, &vs);
	spec_release(&st);
	if (n != vs.n)
		abort();
	/* Every violation is a complete pair of strings. */
	for (size_t i = 0; i < vs.n; i++)
		if (!vs.v[i].field || !vs.v[i].description || !*vs.v[i].field ||
		    !*vs.v[i].description)
			abort();
	violations_release(&vs);
	json_decref(root);
	return 0;
}
