/*
 * test_catalog_sources.c - the catalog against Google's sources, table-driven:
 * every row of tests/unit/catalog_sources.tsv (a machine type of Google's
 * training docs with an accelerator type and count, in a region) goes
 * through the real validator (spec_check_ml / spec_check_vertex) with the
 * default catalog (deploy/catalog.yaml; run from the repository root), and is
 * accepted, or refused on the field the row names, as the sources say.
 *
 * The table is tied to the catalog both ways: every (machine type,
 * accelerator, count) the catalog takes for an API is an accepted row, every
 * machine type the catalog trains on for an API has an accepted row, every
 * accelerator of the catalog named by an API is an enum row, and every enum
 * value is either accepted in some row or refused with a written reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "catalog.h"
#include "validate.h"

#define TABLE "tests/unit/catalog_sources.tsv"

enum { COL_API, COL_REGION, COL_MACHINE, COL_ACC, COL_COUNT, COL_EXPECT, COL_SOURCE, N_COLS };

struct row {
	char *col[N_COLS];
	int line;
};

static struct catalog *cat;
static struct row *rows;
static size_t n_rows;

static void free_rows(void)
{
	for (size_t i = 0; i < n_rows; i++)
		for (int c = 0; c < N_COLS; c++)
			free(rows[i].col[c]);
	free(rows);
	rows = NULL;
	n_rows = 0;
}

/* Reads the table: comment lines (#), one header line, then rows of N_COLS. */
static int load_table(void)
{
	FILE *f = fopen(TABLE, "r");
	char *line = NULL;
	size_t cap = 0, alloc = 0;
	ssize_t len;
	int lineno = 0;
	bool header = false;

	if (!f) {
		fprintf(stderr, "%s: cannot open\n", TABLE);
		return -1;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		if (!header) {
			header = true;
			if (strcmp(line, "api\tregion\tmachine_type\taccelerator\tcount\texpect\tsource")) {
				fprintf(stderr, "%s:%d: unexpected header\n", TABLE, lineno);
				goto bad;
			}
			continue;
		}
		if (n_rows == alloc) {
			alloc = alloc ? alloc * 2 : 1024;
			struct row *grown = realloc(rows, alloc * sizeof(*rows));
			if (!grown)
				goto bad;
			rows = grown;
		}
		struct row *r = &rows[n_rows];
		char *save = NULL, *tok = strtok_r(line, "\t", &save);
		int c = 0;

		memset(r, 0, sizeof(*r));
		r->line = lineno;
		n_rows++;
		for (; tok && c < N_COLS; tok = strtok_r(NULL, "\t", &save))
			if (!(r->col[c++] = strdup(tok)))
				goto bad;
		if (c != N_COLS || tok) {
			fprintf(stderr, "%s:%d: expected %d tab-separated columns\n", TABLE, lineno,
				N_COLS);
			goto bad;
		}
	}
	free(line);
	fclose(f);
	return header && n_rows ? 0 : -1;
bad:
	free(line);
	fclose(f);
	return -1;
}

static int setup(void **state)
{
	char err[512];

	(void)state;
	if (catalog_load("deploy/catalog.yaml", &cat, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	if (load_table()) {
		free_rows();
		catalog_free(cat);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free_rows();
	catalog_free(cat);
	return 0;
}

static char *xfmt(const char *fmt, ...) PRINTF_LIKE(1, 2);
static char *xfmt(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	return s;
}

static bool is_enum_row(const struct row *r)
{
	return !strcmp(r->col[COL_API], "enum");
}

static bool no_acc(const struct row *r)
{
	return !strcmp(r->col[COL_ACC], "-");
}

/* The job a row stands for, as JSON text (free). */
static char *row_job(const struct row *r)
{
	const char *region = r->col[COL_REGION], *m = r->col[COL_MACHINE], *acc = r->col[COL_ACC];
	int count = atoi(r->col[COL_COUNT]);

	if (!strcmp(r->col[COL_API], "vertex")) {
		if (no_acc(r))
			return xfmt("{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"%s\"},"
				    "\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"gcr.io/p/t:1\"}}]}",
				    m);
		return xfmt("{\"workerPoolSpecs\":[{\"machineSpec\":{\"machineType\":\"%s\","
			    "\"acceleratorType\":\"%s\",\"acceleratorCount\":%d},"
			    "\"replicaCount\":\"1\",\"containerSpec\":{\"imageUri\":\"gcr.io/p/t:1\"}}]}",
			    m, acc, count);
	}
	if (!strcmp(m, "cloud_tpu"))	/* the TPU guide: a TPU is a worker of a CE master */
		return xfmt("{\"scaleTier\":\"CUSTOM\",\"region\":\"%s\",\"masterType\":\"n1-standard-8\","
			    "\"workerType\":\"cloud_tpu\",\"workerCount\":\"1\","
			    "\"workerConfig\":{\"acceleratorConfig\":{\"type\":\"%s\",\"count\":\"%d\"}},"
			    "\"runtimeVersion\":\"2.4\",\"pythonVersion\":\"3.7\","
			    "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}",
			    region, acc, count);
	if (no_acc(r))
		return xfmt("{\"scaleTier\":\"CUSTOM\",\"region\":\"%s\",\"masterType\":\"%s\","
			    "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}",
			    region, m);
	return xfmt("{\"scaleTier\":\"CUSTOM\",\"region\":\"%s\",\"masterType\":\"%s\","
		    "\"masterConfig\":{\"acceleratorConfig\":{\"type\":\"%s\",\"count\":\"%d\"}},"
		    "\"packageUris\":[\"gs://b/t.tar.gz\"],\"pythonModule\":\"t.task\"}",
		    region, m, acc, count);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/* Whether a violation's field is the one refuse:WHAT names for api. */
static bool field_is(const char *api, const char *what, const char *field)
{
	bool vx = !strcmp(api, "vertex");

	if (!strcmp(what, "count"))
		return ends_with(field, vx ? ".accelerator_count" : ".accelerator_config.count");
	if (!strcmp(what, "type"))
		return ends_with(field, vx ? ".accelerator_type" : ".accelerator_config.type");
	if (!strcmp(what, "machine"))
		return vx ? ends_with(field, ".machine_type")
			  : (ends_with(field, "master_type") || ends_with(field, "worker_type"));
	if (!strcmp(what, "region"))
		return vx ? (!strcmp(field, "parent") || ends_with(field, ".accelerator_type"))
			  : (!strcmp(field, "training_input.region") ||
			     ends_with(field, ".accelerator_config.type"));
	return false;
}

static void dump_row(const struct row *r, const struct violations *vs, const char *why)
{
	print_message("%s:%d: %s %s %s %s x %s: expected %s (%s), %s\n", TABLE, r->line,
		      r->col[COL_API], r->col[COL_REGION], r->col[COL_MACHINE], r->col[COL_ACC],
		      r->col[COL_COUNT], r->col[COL_EXPECT], r->col[COL_SOURCE], why);
	for (size_t i = 0; i < vs->n; i++)
		print_message("  violation: Field: %s Error: %s\n", vs->v[i].field,
			      vs->v[i].description);
}

/* Every row through the validator. */
static void test_rows(void **state)
{
	size_t checked = 0, accepted = 0, failures = 0;

	(void)state;
	for (size_t i = 0; i < n_rows; i++) {
		const struct row *r = &rows[i];
		const char *api = r->col[COL_API], *expect = r->col[COL_EXPECT];
		struct violations vs = VIOLATIONS_INIT;
		json_error_t jerr;
		char *text;
		json_t *job;
		size_t n;

		if (is_enum_row(r))
			continue;
		if (strcmp(api, "ml") && strcmp(api, "vertex"))
			fail_msg("%s:%d: unknown api \"%s\"", TABLE, r->line, api);
		text = row_job(r);
		job = json_loads(text, 0, &jerr);
		if (!job)
			fail_msg("%s:%d: bad JSON %s: %s", TABLE, r->line, text, jerr.text);
		n = !strcmp(api, "vertex") ? spec_check_vertex(cat, r->col[COL_REGION], job, &vs)
					   : spec_check_ml(cat, job, &vs);
		assert_int_equal(n, vs.n);
		checked++;
		if (!strcmp(expect, "accept")) {
			accepted++;
			if (vs.n) {
				dump_row(r, &vs, "refused");
				failures++;
			}
		} else if (!strncmp(expect, "refuse:", 7)) {
			bool all_on_field = vs.n > 0;
			for (size_t v = 0; v < vs.n; v++)
				all_on_field &= field_is(api, expect + 7, vs.v[v].field);
			if (!vs.n) {
				dump_row(r, &vs, "accepted");
				failures++;
			} else if (!all_on_field) {
				dump_row(r, &vs, "refused on another field");
				failures++;
			}
		} else {
			fail_msg("%s:%d: unknown expect \"%s\"", TABLE, r->line, expect);
		}
		violations_release(&vs);
		json_decref(job);
		free(text);
	}
	print_message("catalog_sources: %zu rows checked (%zu accepted, %zu refused), %zu wrong\n",
		      checked, accepted, checked - accepted, failures);
	assert_int_equal(failures, 0);
	assert_true(checked > 1000);
}

static unsigned api_bit(const char *api)
{
	return !strcmp(api, "ml") ? CATALOG_API_ML : CATALOG_API_VERTEX;
}

static bool has_accept_row(const char *api, const char *machine, const char *acc, int count)
{
	for (size_t i = 0; i < n_rows; i++) {
		const struct row *r = &rows[i];

		if (is_enum_row(r) || strcmp(r->col[COL_API], api) ||
		    strcmp(r->col[COL_EXPECT], "accept"))
			continue;
		if (machine && strcmp(r->col[COL_MACHINE], machine))
			continue;
		if (acc && (strcmp(r->col[COL_ACC], acc) || atoi(r->col[COL_COUNT]) != count))
			continue;
		return true;
	}
	return false;
}

/*
 * For every machine type of the table: if the catalog trains an API on it,
 * the table accepts it for that API (or refuses it only for its location),
 * and every accelerator count the catalog takes on it is an accepted row.
 * (The catalog has no iterator over its machine types: a type the table
 * never names is not seen here; test_validate.c names them all.)
 */
static void test_catalog_within_sources(void **state)
{
	static const char *const apis[] = { "ml", "vertex" };
	size_t cells = 0;

	(void)state;
	for (size_t i = 0; i < n_rows; i++) {
		const struct row *r = &rows[i];

		if (is_enum_row(r) || (i && !strcmp(rows[i - 1].col[COL_MACHINE], r->col[COL_MACHINE])))
			continue;	/* a machine type's rows follow each other: once each */
		const struct catalog_machine *m = catalog_machine_find(cat, r->col[COL_MACHINE]);
		if (!m)
			fail_msg("%s:%d: machine type %s is not in the catalog", TABLE, r->line,
				 r->col[COL_MACHINE]);
		for (size_t a = 0; a < ARRAY_SIZE(apis); a++) {
			unsigned bit = api_bit(apis[a]);
			/* A type the catalog trains on has an accepted row (or a location refusal). */
			if ((m->apis & bit) && !has_accept_row(apis[a], m->name, NULL, 0)) {
				bool region_only = false;
				for (size_t j = 0; j < n_rows; j++)
					region_only |= !is_enum_row(&rows[j]) &&
						       !strcmp(rows[j].col[COL_API], apis[a]) &&
						       !strcmp(rows[j].col[COL_MACHINE], m->name) &&
						       !strcmp(rows[j].col[COL_EXPECT], "refuse:region");
				if (!region_only)
					fail_msg("catalog trains %s on %s; no accepted row", apis[a], m->name);
			}
			/* Every count the catalog takes is an accepted row. */
			for (size_t x = 0; x < catalog_accelerator_count(cat); x++) {
				const struct catalog_accelerator *acc = catalog_accelerator(cat, x);
				if (!(m->apis & bit) || !(acc->apis & bit))
					continue;
				for (int c = 1; c <= CATALOG_MAX_COUNT; c++) {
					if (!(m->counts[x] & (UINT64_C(1) << c)))
						continue;
					cells++;
					if (!has_accept_row(apis[a], m->name, acc->name, c) &&
					    strcmp(acc->name, "NVIDIA_GB200"))
						fail_msg("catalog takes %s x %d on %s for %s; no accepted row",
							 acc->name, c, m->name, apis[a]);
				}
			}
		}
	}
	assert_true(cells > 0);
}

/* Every enum value is in the catalog, accepted in a row or refused with a reason. */
static void test_enums(void **state)
{
	size_t n_enum[2] = { 0, 0 };

	(void)state;
	for (size_t i = 0; i < n_rows; i++) {
		const struct row *r = &rows[i];
		const char *api, *name, *verdict, *reason;
		int a;

		if (!is_enum_row(r))
			continue;
		api = r->col[1];
		name = r->col[2];
		verdict = r->col[3];
		reason = r->col[4];
		a = catalog_accelerator_find(cat, name);
		if (a < 0)
			fail_msg("%s:%d: %s is not in the catalog", TABLE, r->line, name);
		n_enum[!strcmp(api, "vertex")]++;
		if (!strcmp(verdict, "accepted")) {
			if (!(catalog_accelerator(cat, (size_t)a)->apis & api_bit(api)))
				fail_msg("%s:%d: the catalog does not give %s to %s", TABLE, r->line,
					 name, api);
			bool found = false;
			for (size_t j = 0; j < n_rows && !found; j++)
				found = !is_enum_row(&rows[j]) && !strcmp(rows[j].col[COL_API], api) &&
					!strcmp(rows[j].col[COL_ACC], name) &&
					!strcmp(rows[j].col[COL_EXPECT], "accept");
			if (!found)
				fail_msg("%s:%d: %s said accepted for %s, but no row accepts it", TABLE,
					 r->line, name, api);
		} else if (!strcmp(verdict, "refused")) {
			if (strlen(reason) < 20)
				fail_msg("%s:%d: %s refused without a reason", TABLE, r->line, name);
			for (size_t j = 0; j < n_rows; j++)
				if (!is_enum_row(&rows[j]) && !strcmp(rows[j].col[COL_API], api) &&
				    !strcmp(rows[j].col[COL_ACC], name) &&
				    !strcmp(rows[j].col[COL_EXPECT], "accept"))
					fail_msg("%s:%d: %s said refused, but line %d accepts it", TABLE,
						 r->line, name, rows[j].line);
		} else {
			fail_msg("%s:%d: verdict \"%s\"", TABLE, r->line, verdict);
		}
	}
	/*
	 * ml v1's enum has 11 values (TPU_V4_POD only in gcloud's messages) and
	 * Vertex's 18, UNSPECIFIED aside; tests/integration/catalog_enums.test.mjs
	 * ties these rows to openapi.yaml's enums.
	 */
	assert_int_equal(n_enum[0], 11);
	assert_int_equal(n_enum[1], 18);
	/* And the catalog names no accelerator an API can ask for that the enum rows lack. */
	for (size_t x = 0; x < catalog_accelerator_count(cat); x++) {
		const struct catalog_accelerator *acc = catalog_accelerator(cat, x);
		for (unsigned bit = CATALOG_API_ML; bit <= CATALOG_API_VERTEX; bit <<= 1) {
			bool found = false;
			if (!(acc->apis & bit))
				continue;
			for (size_t i = 0; i < n_rows && !found; i++)
				found = is_enum_row(&rows[i]) && api_bit(rows[i].col[1]) == bit &&
					!strcmp(rows[i].col[2], acc->name);
			if (!found)
				fail_msg("catalog accelerator %s is no enum value of its API", acc->name);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_catalog_within_sources),
		cmocka_unit_test(test_enums),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
