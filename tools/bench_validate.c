/*
 * bench_validate.c - how fast the rule engine validates a typical CUSTOM
 * job: a GPU master, 9 GPU workers and 3 parameter servers (the example of
 * Google's GPU guide, https://cloud.google.com/ai-platform/training/docs/using-gpus,
 * plus scheduling and labels), against deploy/catalog.yaml (or argv[1]).
 * Runs for about 2 seconds on the calling thread (pin it with taskset for
 * one core) and prints
 *   validate: N validations/s (X us each)
 *
 * What it times is what jobs.create does with a trainingInput: the typed
 * spec parsed once (spec_ml_parse) and checked (spec_validate_ml), plus
 * the labels.
 *
 * Build (from the repository root): make build/bench/bench_validate
 */
#include <stdio.h>
#include <stdlib.h>

#include "catalog.h"
#include "validate.h"

static const char job_text[] =
	"{\"jobId\":\"bench\",\"labels\":{\"team\":\"ml\",\"env\":\"prod\"},"
	"\"trainingInput\":{\"scaleTier\":\"CUSTOM\","
	"\"masterType\":\"n1-highcpu-16\",\"masterConfig\":{\"acceleratorConfig\":"
	"{\"count\":\"4\",\"type\":\"NVIDIA_TESLA_T4\"}},"
	"\"workerCount\":\"9\",\"workerType\":\"n1-highcpu-16\",\"workerConfig\":"
	"{\"acceleratorConfig\":{\"count\":\"4\",\"type\":\"NVIDIA_TESLA_T4\"}},"
	"\"parameterServerCount\":\"3\",\"parameterServerType\":\"n1-highmem-8\","
	"\"packageUris\":[\"gs://b/trainer-0.1.tar.gz\"],\"pythonModule\":\"trainer.task\","
	"\"runtimeVersion\":\"2.4\",\"pythonVersion\":\"3.7\",\"region\":\"us-central1\","
	"\"jobDir\":\"gs://b/out\",\"args\":[\"--epochs\",\"10\"],"
	"\"scheduling\":{\"maxRunningTime\":\"7200s\",\"maxWaitTime\":\"3600s\"}}}";

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "deploy/catalog.yaml";
	struct violations vs = VIOLATIONS_INIT;
	const json_t *ti, *labels;
	struct catalog *cat;
	json_error_t jerr;
	int64_t start, elapsed;
	long n = 0;
	char err[512];
	json_t *job;

	if (catalog_load(path, &cat, err, sizeof(err))) {
		fprintf(stderr, "bench_validate: %s\n", err);
		return 1;
	}
	job = json_loads(job_text, 0, &jerr);
	if (!job) {
		fprintf(stderr, "bench_validate: %s\n", jerr.text);
		return 1;
	}
	ti = json_object_get(job, "trainingInput");
	labels = json_object_get(job, "labels");
	if (spec_check_ml(cat, ti, &vs) || spec_validate_labels(labels, "job.labels", &vs)) {
		fprintf(stderr, "bench_validate: the job is not valid: %s: %s\n", vs.v[0].field,
			vs.v[0].description);
		return 1;
	}
	start = mono_usec();
	do {
		for (int i = 0; i < 1000; i++) {
			spec_check_ml(cat, ti, &vs);
			spec_validate_labels(labels, "job.labels", &vs);
		}
		n += 1000;
		elapsed = mono_usec() - start;
	} while (elapsed < 2000000);
	printf("validate: %.0f validations/s (%.2f us each)\n", n * 1e6 / (double)elapsed,
	       (double)elapsed / (double)n);
	violations_release(&vs);
	json_decref(job);
	catalog_free(cat);
	return 0;
}
