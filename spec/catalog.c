/*
 * catalog.c - loads the catalog YAML (deploy/catalog.yaml; its shape is
 * documented at the top of that file) with libyaml's document API, checks
 * it as a whole and answers the queries of catalog.h.
 *
 * Loading walks the document by its schema, so its depth is fixed whatever
 * the file holds (aliases cannot make it recurse). Every problem is reported
 * as "path:line:col: problem" at the node that is wrong, and the first one
 * stops the load: a server must not start on a catalog it half understood.
 * Once loaded, the catalog is never written again, so any thread may read it.
 */
#include "catalog.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "yamldoc.h"

struct tpu_image {
	char *image;
	char *version;
};

struct catalog {
	struct catalog_accelerator accs[CATALOG_MAX_ACCELERATORS];
	size_t n_accs;
	struct catalog_machine *machines;	/* sorted by name after load */
	size_t n_machines;
	struct catalog_region *regions;		/* sorted by name after load */
	size_t n_regions;
	struct catalog_runtime *runtimes;	/* file order */
	size_t n_runtimes;
	char *default_runtime;
	struct catalog_tier *tiers;
	size_t n_tiers;
	struct catalog_limit *limits;
	size_t n_limits;
	struct tpu_image *images;
	size_t n_images;
	int64_t max_replica_count;
};

#define DEFAULT_MAX_REPLICA_COUNT 1000

/* ------------------------------------------------------------------------- */
/* Freeing                                                                    */

static void machine_release(struct catalog_machine *m)
{
	free((char *)m->name);
	free((char *)m->equivalent);
}

static void region_release(struct catalog_region *r)
{
	for (size_t i = 0; i < r->n_zones; i++)
		free((char *)r->zones[i].name);
	free((struct catalog_zone *)r->zones);
	free((char *)r->name);
}

static void runtime_release(struct catalog_runtime *rt)
{
	for (size_t i = 0; i < rt->n_python; i++)
		free((char *)rt->python[i]);
	free((char **)rt->python);
	free((char *)rt->version);
}

static void tier_release(struct catalog_tier *t)
{
	free((char *)t->name);
	free((char *)t->master.machine_type);
	free((char *)t->worker.machine_type);
	free((char *)t->parameter_server.machine_type);
	free((char *)t->evaluator.machine_type);
}

void catalog_free(struct catalog *cat)
{
	if (!cat)
		return;
	for (size_t i = 0; i < cat->n_accs; i++)
		free((char *)cat->accs[i].name);
	for (size_t i = 0; i < cat->n_machines; i++)
		machine_release(&cat->machines[i]);
	free(cat->machines);
	for (size_t i = 0; i < cat->n_regions; i++)
		region_release(&cat->regions[i]);
	free(cat->regions);
	for (size_t i = 0; i < cat->n_runtimes; i++)
		runtime_release(&cat->runtimes[i]);
	free(cat->runtimes);
	free(cat->default_runtime);
	for (size_t i = 0; i < cat->n_tiers; i++)
		tier_release(&cat->tiers[i]);
	free(cat->tiers);
	free(cat->limits);
	for (size_t i = 0; i < cat->n_images; i++) {
		free(cat->images[i].image);
		free(cat->images[i].version);
	}
	free(cat->images);
	free(cat);
}

/* ------------------------------------------------------------------------- */
/* YAML helpers                                                               */

struct loader {
	const char *path;
	yaml_document_t *doc;
	char *err;
	size_t errlen;
	struct catalog *cat;
};

PRINTF_LIKE(3, 4)
static int fail(struct loader *ld, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;
	int off;

	if (!ld->errlen)
		return -1;
	off = snprintf(ld->err, ld->errlen, "%s:%zu:%zu: ", ld->path,
		       n ? n->start_mark.line + 1 : 1, n ? n->start_mark.column + 1 : 1);
	if (off < 0 || (size_t)off >= ld->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(ld->err + off, ld->errlen - off, fmt, ap);
	va_end(ap);
	return -1;
}

static yaml_node_t *node_at(struct loader *ld, yaml_node_item_t i)
{
	return yaml_document_get_node(ld->doc, i);
}

static const char *scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

#define for_each_pair(map, p) \
	for (yaml_node_pair_t *p = (map)->data.mapping.pairs.start; \
	     p < (map)->data.mapping.pairs.top; p++)
#define for_each_item(seq, it) \
	for (yaml_node_item_t *it = (seq)->data.sequence.items.start; \
	     it < (seq)->data.sequence.items.top; it++)

static const char *kind_name(yaml_node_type_t t)
{
	switch (t) {
	case YAML_SCALAR_NODE:
		return "scalar";
	case YAML_SEQUENCE_NODE:
		return "list";
	case YAML_MAPPING_NODE:
		return "mapping";
	default:
		return "node";
	}
}

static int expect(struct loader *ld, const yaml_node_t *n, yaml_node_type_t t, const char *what)
{
	if (n->type != t)
		return fail(ld, n, "%s must be a %s", what, kind_name(t));
	return 0;
}

/*
 * Checks that a mapping's keys are non-empty scalars, none twice (libyaml
 * does not refuse duplicate keys; a second "n1-standard-4:" row would
 * silently win in most YAML readers).
 */
static int check_keys(struct loader *ld, const yaml_node_t *map, const char *what)
{
	for_each_pair(map, p) {
		const yaml_node_t *k = node_at(ld, p->key);
		if (k->type != YAML_SCALAR_NODE || !*scalar(k))
			return fail(ld, k, "%s: keys must be non-empty names", what);
		for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++)
			if (!strcmp(scalar(node_at(ld, q->key)), scalar(k)))
				return fail(ld, k, "%s: duplicate key \"%s\"", what, scalar(k));
	}
	return 0;
}

static int parse_long(struct loader *ld, const yaml_node_t *n, const char *what, long min,
		      long max, long *out)
{
	char *end;
	long v;

	if (expect(ld, n, YAML_SCALAR_NODE, what))
		return -1;
	errno = 0;
	v = strtol(scalar(n), &end, 10);
	if (errno || end == scalar(n) || *end)
		return fail(ld, n, "%s: \"%s\" is not an integer", what, scalar(n));
	if (v < min || v > max)
		return fail(ld, n, "%s: %ld is out of range [%ld, %ld]", what, v, min, max);
	*out = v;
	return 0;
}

static int parse_gb(struct loader *ld, const yaml_node_t *n, const char *what, int64_t *mb)
{
	char *end;
	double v;

	if (expect(ld, n, YAML_SCALAR_NODE, what))
		return -1;
	errno = 0;
	v = strtod(scalar(n), &end);
	if (errno || end == scalar(n) || *end || !isfinite(v))
		return fail(ld, n, "%s: \"%s\" is not a number", what, scalar(n));
	if (v <= 0 || v > 1e6)
		return fail(ld, n, "%s: %s is out of range (0, 1000000] GB", what, scalar(n));
	*mb = (int64_t)llround(v * 1024);
	return 0;
}

static int parse_bool(struct loader *ld, const yaml_node_t *n, const char *what, bool *out)
{
	if (expect(ld, n, YAML_SCALAR_NODE, what))
		return -1;
	if (!strcmp(scalar(n), "true") || !strcmp(scalar(n), "yes")) {
		*out = true;
		return 0;
	}
	if (!strcmp(scalar(n), "false") || !strcmp(scalar(n), "no")) {
		*out = false;
		return 0;
	}
	return fail(ld, n, "%s: \"%s\" is not true or false", what, scalar(n));
}

static int parse_name(struct loader *ld, const yaml_node_t *n, const char *what, const char **out)
{
	if (expect(ld, n, YAML_SCALAR_NODE, what))
		return -1;
	if (!*scalar(n))
		return fail(ld, n, "%s must not be empty", what);
	*out = scalar(n);
	return 0;
}

static int parse_apis(struct loader *ld, const yaml_node_t *n, const char *what, unsigned *out)
{
	unsigned apis = 0;

	if (expect(ld, n, YAML_SEQUENCE_NODE, what))
		return -1;
	for_each_item(n, it) {
		const yaml_node_t *v = node_at(ld, *it);
		if (v->type == YAML_SCALAR_NODE && !strcmp(scalar(v), "ml"))
			apis |= CATALOG_API_ML;
		else if (v->type == YAML_SCALAR_NODE && !strcmp(scalar(v), "vertex"))
			apis |= CATALOG_API_VERTEX;
		else
			return fail(ld, v, "%s: expected ml or vertex", what);
	}
	*out = apis;
	return 0;
}

/* Finds value nodes of a mapping by key; an unknown key is an error. */
struct field {
	const char *key;
	bool required;
	yaml_node_t *value;	/* out */
};

static int get_fields(struct loader *ld, const yaml_node_t *map, const char *what,
		      struct field *fields, size_t n)
{
	if (expect(ld, map, YAML_MAPPING_NODE, what) || check_keys(ld, map, what))
		return -1;
	for (size_t i = 0; i < n; i++)
		fields[i].value = NULL;
	for_each_pair(map, p) {
		const yaml_node_t *k = node_at(ld, p->key);
		size_t i;
		for (i = 0; i < n; i++)
			if (!strcmp(fields[i].key, scalar(k)))
				break;
		if (i == n)
			return fail(ld, k, "%s: unknown key \"%s\"", what, scalar(k));
		fields[i].value = node_at(ld, p->value);
	}
	for (size_t i = 0; i < n; i++)
		if (fields[i].required && !fields[i].value)
			return fail(ld, map, "%s: \"%s\" is required", what, fields[i].key);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Sections                                                                   */

static int find_acc(const struct catalog *cat, const char *name)
{
	for (size_t i = 0; i < cat->n_accs; i++)
		if (!strcmp(cat->accs[i].name, name))
			return (int)i;
	return -1;
}

static int acc_ref(struct loader *ld, const yaml_node_t *n, const char *what, int *out)
{
	const char *name;

	if (parse_name(ld, n, what, &name))
		return -1;
	*out = find_acc(ld->cat, name);
	if (*out < 0)
		return fail(ld, n, "%s: unknown accelerator \"%s\" (not in accelerators)", what, name);
	return 0;
}

static struct catalog_machine *find_machine_linear(struct catalog *cat, const char *name)
{
	for (size_t i = 0; i < cat->n_machines; i++)
		if (!strcmp(cat->machines[i].name, name))
			return &cat->machines[i];
	return NULL;
}

static int load_accelerators(struct loader *ld, const yaml_node_t *seq)
{
	struct catalog *cat = ld->cat;

	if (expect(ld, seq, YAML_SEQUENCE_NODE, "accelerators"))
		return -1;
	for_each_item(seq, it) {
		yaml_node_t *n = node_at(ld, *it);
		struct field f[] = { { "name", true }, { "kind", true }, { "apis", false } };
		struct catalog_accelerator *a;
		const char *name, *kind;

		if (get_fields(ld, n, "accelerators entry", f, ARRAY_SIZE(f)) ||
		    parse_name(ld, f[0].value, "accelerator name", &name) ||
		    parse_name(ld, f[1].value, "accelerator kind", &kind))
			return -1;
		if (find_acc(cat, name) >= 0)
			return fail(ld, f[0].value, "duplicate accelerator \"%s\"", name);
		if (cat->n_accs == CATALOG_MAX_ACCELERATORS)
			return fail(ld, n, "more than %d accelerators", CATALOG_MAX_ACCELERATORS);
		if (strcmp(kind, "gpu") && strcmp(kind, "tpu"))
			return fail(ld, f[1].value, "accelerator kind must be gpu or tpu, not \"%s\"",
				    kind);
		a = &cat->accs[cat->n_accs];
		a->apis = CATALOG_API_ML | CATALOG_API_VERTEX;
		if (f[2].value && parse_apis(ld, f[2].value, "accelerator apis", &a->apis))
			return -1;
		a->tpu = !strcmp(kind, "tpu");
		a->name = xstrdup(name);
		cat->n_accs++;
	}
	return 0;
}

/* accelerator: {type: X, count: N} */
static int load_builtin(struct loader *ld, const yaml_node_t *n, struct catalog_machine *m)
{
	struct field f[] = { { "type", true }, { "count", true } };
	long count;

	if (get_fields(ld, n, "machine type accelerator", f, ARRAY_SIZE(f)) ||
	    acc_ref(ld, f[0].value, "machine type accelerator type", &m->accelerator) ||
	    parse_long(ld, f[1].value, "machine type accelerator count", 1, CATALOG_MAX_COUNT,
		       &count))
		return -1;
	m->accelerator_count = (int)count;
	if (ld->cat->accs[m->accelerator].tpu != m->tpu_host)
		return fail(ld, f[0].value, m->tpu_host ?
			    "a tpu_host machine type can only include a TPU" :
			    "only a tpu_host machine type can include a TPU");
	return 0;
}

static int load_machine(struct loader *ld, const yaml_node_t *key, const yaml_node_t *val,
			bool legacy)
{
	struct catalog *cat = ld->cat;
	struct field f[] = {
		{ "vcpus", false }, { "memory_gb", false }, { "apis", false },
		{ "accelerator", false }, { "tpu_host", false }, { "equivalent", false },
	};
	struct catalog_machine m = { 0 };
	const char *what = legacy ? "legacy machine type" : "machine type";
	long vcpus;

	m.accelerator = -1;
	m.apis = legacy ? CATALOG_API_ML : CATALOG_API_ML | CATALOG_API_VERTEX;
	m.legacy = legacy;
	if (find_machine_linear(cat, scalar(key)))
		return fail(ld, key, "duplicate machine type \"%s\"", scalar(key));
	/* Only legacy types stand for another one. */
	if (get_fields(ld, val, what, f, ARRAY_SIZE(f) - !legacy))
		return -1;
	if (f[4].value && parse_bool(ld, f[4].value, "tpu_host", &m.tpu_host))
		return -1;
	if (f[2].value && parse_apis(ld, f[2].value, "apis", &m.apis))
		return -1;
	if (legacy && f[5].value) {
		const struct catalog_machine *eq;
		const char *name;
		if (parse_name(ld, f[5].value, "equivalent", &name))
			return -1;
		eq = find_machine_linear(cat, name);
		if (!eq || eq->legacy)
			return fail(ld, f[5].value, "equivalent: unknown Compute Engine machine type \"%s\"",
				    name);
		m.vcpus = eq->vcpus;
		m.memory_mb = eq->memory_mb;
	} else if (!f[0].value || !f[1].value) {
		return fail(ld, val, legacy ? "%s \"%s\" needs equivalent, or vcpus and memory_gb" :
			    "%s \"%s\" needs vcpus and memory_gb", what, scalar(key));
	}
	if (f[0].value) {
		if (parse_long(ld, f[0].value, "vcpus", 1, 100000, &vcpus))
			return -1;
		m.vcpus = (int)vcpus;
	}
	if (f[1].value && parse_gb(ld, f[1].value, "memory_gb", &m.memory_mb))
		return -1;
	if (f[3].value && load_builtin(ld, f[3].value, &m))
		return -1;
	if (legacy && m.tpu_host && m.accelerator < 0)
		return fail(ld, val, "legacy tpu_host machine type \"%s\" must name the TPU it "
			    "includes (accelerator: {type: TPU_V2, count: 8})", scalar(key));

	m.name = xstrdup(scalar(key));
	if (legacy && f[5].value)
		m.equivalent = xstrdup(scalar(f[5].value));
	cat->machines = xrealloc(cat->machines, (cat->n_machines + 1) * sizeof(*cat->machines));
	cat->machines[cat->n_machines++] = m;
	return 0;
}

static int load_machines(struct loader *ld, const yaml_node_t *map, bool legacy)
{
	const char *what = legacy ? "legacy_machine_types" : "machine_types";

	if (expect(ld, map, YAML_MAPPING_NODE, what) || check_keys(ld, map, what))
		return -1;
	for_each_pair(map, p)
		if (load_machine(ld, node_at(ld, p->key), node_at(ld, p->value), legacy))
			return -1;
	return 0;
}

/* A count list: positive integers up to CATALOG_MAX_COUNT, strictly increasing. */
static int load_count_list(struct loader *ld, const yaml_node_t *seq, uint64_t *mask)
{
	long prev = 0;

	if (seq->type != YAML_SEQUENCE_NODE)
		return fail(ld, seq, "malformed count list: expected a list of counts like [1, 2, 4]");
	if (seq->data.sequence.items.start == seq->data.sequence.items.top)
		return fail(ld, seq, "malformed count list: empty (leave the accelerator out instead)");
	*mask = 0;
	for_each_item(seq, it) {
		const yaml_node_t *n = node_at(ld, *it);
		long c;
		if (parse_long(ld, n, "malformed count list", 1, CATALOG_MAX_COUNT, &c))
			return -1;
		if (c <= prev)
			return fail(ld, n, "malformed count list: counts must be strictly increasing");
		prev = c;
		*mask |= UINT64_C(1) << c;
	}
	return 0;
}

static int load_counts(struct loader *ld, const yaml_node_t *map)
{
	struct catalog *cat = ld->cat;

	if (expect(ld, map, YAML_MAPPING_NODE, "accelerator_counts") ||
	    check_keys(ld, map, "accelerator_counts"))
		return -1;
	for_each_pair(map, p) {
		const yaml_node_t *key = node_at(ld, p->key), *row = node_at(ld, p->value);
		struct catalog_machine *m = find_machine_linear(cat, scalar(key));

		if (!m)
			return fail(ld, key, "accelerator_counts: row for unknown machine type \"%s\"",
				    scalar(key));
		if (m->legacy && !m->tpu_host)
			return fail(ld, key, "accelerator_counts: legacy machine type \"%s\" takes no "
				    "accelerator config (its GPUs come with it)", m->name);
		if (expect(ld, row, YAML_MAPPING_NODE, "accelerator_counts row") ||
		    check_keys(ld, row, "accelerator_counts row"))
			return -1;
		for_each_pair(row, q) {
			const yaml_node_t *ak = node_at(ld, q->key);
			int a;
			if (acc_ref(ld, ak, "accelerator_counts", &a))
				return -1;
			if (cat->accs[a].tpu != m->tpu_host)
				return fail(ld, ak, m->tpu_host ?
					    "accelerator_counts: tpu_host machine type \"%s\" can only take TPUs" :
					    "accelerator_counts: only a tpu_host machine type can take TPUs, not \"%s\"",
					    m->name);
			if (load_count_list(ld, node_at(ld, q->value), &m->counts[a]))
				return -1;
		}
		if (m->accelerator >= 0 &&
		    !(m->counts[m->accelerator] & (UINT64_C(1) << m->accelerator_count)))
			return fail(ld, key, "accelerator_counts: the row of \"%s\" does not allow its own "
				    "%d x %s", m->name, m->accelerator_count,
				    cat->accs[m->accelerator].name);
	}
	return 0;
}

static int load_limits(struct loader *ld, const yaml_node_t *seq)
{
	struct catalog *cat = ld->cat;

	if (expect(ld, seq, YAML_SEQUENCE_NODE, "accelerator_limits"))
		return -1;
	for_each_item(seq, it) {
		yaml_node_t *n = node_at(ld, *it);
		struct field f[] = { { "accelerator", true }, { "count", true },
				     { "max_vcpus", true }, { "max_memory_gb", true } };
		struct catalog_limit l;
		long count, vcpus;

		if (get_fields(ld, n, "accelerator_limits entry", f, ARRAY_SIZE(f)) ||
		    acc_ref(ld, f[0].value, "accelerator_limits", &l.accelerator) ||
		    parse_long(ld, f[1].value, "count", 1, CATALOG_MAX_COUNT, &count) ||
		    parse_long(ld, f[2].value, "max_vcpus", 1, 100000, &vcpus) ||
		    parse_gb(ld, f[3].value, "max_memory_gb", &l.max_memory_mb))
			return -1;
		l.count = (int)count;
		l.max_vcpus = (int)vcpus;
		cat->limits = xrealloc(cat->limits, (cat->n_limits + 1) * sizeof(*cat->limits));
		cat->limits[cat->n_limits++] = l;
	}
	return 0;
}

static bool zone_exists(const struct catalog *cat, const struct catalog_region *cur,
			const char *name)
{
	for (size_t i = 0; i < cat->n_regions; i++)
		for (size_t j = 0; j < cat->regions[i].n_zones; j++)
			if (!strcmp(cat->regions[i].zones[j].name, name))
				return true;
	for (size_t j = 0; j < cur->n_zones; j++)
		if (!strcmp(cur->zones[j].name, name))
			return true;
	return false;
}

static int load_region(struct loader *ld, const yaml_node_t *key, const yaml_node_t *val)
{
	struct catalog *cat = ld->cat;
	struct catalog_region r = { 0 };
	struct catalog_zone *zones = NULL;
	struct field f[] = { { "zones", true }, { "apis", false } };
	const yaml_node_t *zmap;

	r.apis = CATALOG_API_ML | CATALOG_API_VERTEX;
	if (get_fields(ld, val, "region", f, ARRAY_SIZE(f)) ||
	    (f[1].value && parse_apis(ld, f[1].value, "region apis", &r.apis)))
		return -1;
	zmap = f[0].value;
	if (expect(ld, zmap, YAML_MAPPING_NODE, "zones") || check_keys(ld, zmap, "zones"))
		return -1;
	if (zmap->data.mapping.pairs.start == zmap->data.mapping.pairs.top)
		return fail(ld, zmap, "region \"%s\" has no zones", scalar(key));
	for_each_pair(zmap, p) {
		const yaml_node_t *zk = node_at(ld, p->key), *list = node_at(ld, p->value);
		catalog_accset set = 0;

		if (zone_exists(cat, &r, scalar(zk))) {
			fail(ld, zk, "zone \"%s\" is listed twice", scalar(zk));
			goto fail;
		}
		if (expect(ld, list, YAML_SEQUENCE_NODE, "zone accelerators"))
			goto fail;
		for_each_item(list, it) {
			const yaml_node_t *an = node_at(ld, *it);
			int a;
			if (acc_ref(ld, an, "zone", &a))
				goto fail;
			if (set & (1u << a)) {
				fail(ld, an, "zone \"%s\" lists \"%s\" twice", scalar(zk), scalar(an));
				goto fail;
			}
			set |= 1u << a;
		}
		zones = xrealloc(zones, (r.n_zones + 1) * sizeof(*zones));
		zones[r.n_zones].name = xstrdup(scalar(zk));
		zones[r.n_zones].accelerators = set;
		r.zones = zones;
		r.n_zones++;
		r.accelerators |= set;
	}
	r.name = xstrdup(scalar(key));
	cat->regions = xrealloc(cat->regions, (cat->n_regions + 1) * sizeof(*cat->regions));
	cat->regions[cat->n_regions++] = r;
	return 0;
fail:
	region_release(&r);
	return -1;
}

static int load_regions(struct loader *ld, const yaml_node_t *map)
{
	if (expect(ld, map, YAML_MAPPING_NODE, "regions") || check_keys(ld, map, "regions"))
		return -1;
	if (map->data.mapping.pairs.start == map->data.mapping.pairs.top)
		return fail(ld, map, "regions: at least one region is required");
	for_each_pair(map, p)
		if (load_region(ld, node_at(ld, p->key), node_at(ld, p->value)))
			return -1;
	return 0;
}

static int load_runtimes(struct loader *ld, const yaml_node_t *map)
{
	struct catalog *cat = ld->cat;

	if (expect(ld, map, YAML_MAPPING_NODE, "runtime_versions") ||
	    check_keys(ld, map, "runtime_versions"))
		return -1;
	for_each_pair(map, p) {
		const yaml_node_t *key = node_at(ld, p->key);
		struct field f[] = { { "python", true }, { "tpu", false } };
		struct catalog_runtime rt = { 0 };
		const char **py;

		if (get_fields(ld, node_at(ld, p->value), "runtime version", f, ARRAY_SIZE(f)))
			return -1;
		if (f[1].value && parse_bool(ld, f[1].value, "tpu", &rt.tpu))
			return -1;
		if (expect(ld, f[0].value, YAML_SEQUENCE_NODE, "python"))
			return -1;
		if (f[0].value->data.sequence.items.start == f[0].value->data.sequence.items.top)
			return fail(ld, f[0].value, "python: at least one Python version is required");
		for_each_item(f[0].value, it) {
			const char *v;
			if (parse_name(ld, node_at(ld, *it), "python version", &v))
				return -1;
		}
		py = xcalloc(f[0].value->data.sequence.items.top -
			     f[0].value->data.sequence.items.start, sizeof(*py));
		for_each_item(f[0].value, it)
			py[rt.n_python++] = xstrdup(scalar(node_at(ld, *it)));
		rt.python = py;
		rt.version = xstrdup(scalar(key));
		cat->runtimes = xrealloc(cat->runtimes, (cat->n_runtimes + 1) * sizeof(*cat->runtimes));
		cat->runtimes[cat->n_runtimes++] = rt;
	}
	return 0;
}

static int load_tpu(struct loader *ld, const yaml_node_t *map)
{
	struct catalog *cat = ld->cat;
	struct field f[] = { { "pytorch_images", false } };
	const yaml_node_t *img;

	if (get_fields(ld, map, "tpu", f, ARRAY_SIZE(f)))
		return -1;
	img = f[0].value;
	if (!img)
		return 0;
	if (expect(ld, img, YAML_MAPPING_NODE, "pytorch_images") ||
	    check_keys(ld, img, "pytorch_images"))
		return -1;
	for_each_pair(img, p) {
		const char *v;
		if (parse_name(ld, node_at(ld, p->value), "tpuTfVersion", &v))
			return -1;
		cat->images = xrealloc(cat->images, (cat->n_images + 1) * sizeof(*cat->images));
		cat->images[cat->n_images].image = xstrdup(scalar(node_at(ld, p->key)));
		cat->images[cat->n_images].version = xstrdup(v);
		cat->n_images++;
	}
	return 0;
}

static int tier_replica(struct loader *ld, const yaml_node_t *type, const yaml_node_t *count,
			const char *role, struct catalog_tier_replica *out)
{
	const struct catalog_machine *m;
	long n = type ? 1 : 0;

	if (count && parse_long(ld, count, "replica count", 1, 100000, &n))
		return -1;
	if (count && !type)
		return fail(ld, count, "scale tier: a %s count needs a %s machine type", role, role);
	if (!type)
		return 0;
	if (expect(ld, type, YAML_SCALAR_NODE, "machine type"))
		return -1;
	m = find_machine_linear(ld->cat, scalar(type));
	if (!m || !(m->apis & CATALOG_API_ML))
		return fail(ld, type, "scale tier: unknown machine type \"%s\"", scalar(type));
	out->machine_type = xstrdup(m->name);
	out->count = n;
	return 0;
}

static int load_tiers(struct loader *ld, const yaml_node_t *map)
{
	struct catalog *cat = ld->cat;

	if (expect(ld, map, YAML_MAPPING_NODE, "scale_tiers") || check_keys(ld, map, "scale_tiers"))
		return -1;
	for_each_pair(map, p) {
		const yaml_node_t *key = node_at(ld, p->key), *val = node_at(ld, p->value);
		struct field f[] = {
			{ "master", true }, { "worker", false }, { "workers", false },
			{ "parameter_server", false }, { "parameter_servers", false },
			{ "evaluator", false }, { "evaluators", false },
		};
		struct catalog_tier t = { 0 };

		if (!strcmp(scalar(key), "CUSTOM"))
			return fail(ld, key, "scale_tiers: CUSTOM cannot be defined (the job gives its machines)");
		if (get_fields(ld, val, "scale tier", f, ARRAY_SIZE(f)))
			return -1;
		if (tier_replica(ld, f[0].value, NULL, "master", &t.master) ||
		    tier_replica(ld, f[1].value, f[2].value, "worker", &t.worker) ||
		    tier_replica(ld, f[3].value, f[4].value, "parameter server",
				 &t.parameter_server) ||
		    tier_replica(ld, f[5].value, f[6].value, "evaluator", &t.evaluator)) {
			tier_release(&t);
			return -1;
		}
		t.name = xstrdup(scalar(key));
		cat->tiers = xrealloc(cat->tiers, (cat->n_tiers + 1) * sizeof(*cat->tiers));
		cat->tiers[cat->n_tiers++] = t;
	}
	return 0;
}

static int cmp_machine(const void *a, const void *b)
{
	return strcmp(((const struct catalog_machine *)a)->name,
		      ((const struct catalog_machine *)b)->name);
}

static int cmp_region(const void *a, const void *b)
{
	return strcmp(((const struct catalog_region *)a)->name,
		      ((const struct catalog_region *)b)->name);
}

static int load_root(struct loader *ld, yaml_node_t *root)
{
	struct catalog *cat = ld->cat;
	enum {
		K_VERSION, K_MAX_REPLICAS, K_ACCS, K_MACHINES, K_LEGACY, K_COUNTS, K_LIMITS,
		K_REGIONS, K_RUNTIMES, K_DEFAULT_RUNTIME, K_TPU, K_TIERS,
	};
	struct field f[] = {
		[K_VERSION] = { "version", true },
		[K_MAX_REPLICAS] = { "max_replica_count", false },
		[K_ACCS] = { "accelerators", true },
		[K_MACHINES] = { "machine_types", true },
		[K_LEGACY] = { "legacy_machine_types", false },
		[K_COUNTS] = { "accelerator_counts", false },
		[K_LIMITS] = { "accelerator_limits", false },
		[K_REGIONS] = { "regions", true },
		[K_RUNTIMES] = { "runtime_versions", true },
		[K_DEFAULT_RUNTIME] = { "default_runtime_version", false },
		[K_TPU] = { "tpu", false },
		[K_TIERS] = { "scale_tiers", false },
	};
	long v;

	if (get_fields(ld, root, "catalog", f, ARRAY_SIZE(f)))
		return -1;
	if (parse_long(ld, f[K_VERSION].value, "version", 1, 1, &v))
		return -1;
	cat->max_replica_count = DEFAULT_MAX_REPLICA_COUNT;
	if (f[K_MAX_REPLICAS].value) {
		if (parse_long(ld, f[K_MAX_REPLICAS].value, "max_replica_count", 1, 1000000, &v))
			return -1;
		cat->max_replica_count = v;
	}
	/* Dependency order: names must exist before they are referred to. */
	if (load_accelerators(ld, f[K_ACCS].value) ||
	    load_machines(ld, f[K_MACHINES].value, false) ||
	    (f[K_LEGACY].value && load_machines(ld, f[K_LEGACY].value, true)) ||
	    (f[K_COUNTS].value && load_counts(ld, f[K_COUNTS].value)) ||
	    (f[K_LIMITS].value && load_limits(ld, f[K_LIMITS].value)) ||
	    load_regions(ld, f[K_REGIONS].value) ||
	    load_runtimes(ld, f[K_RUNTIMES].value) ||
	    (f[K_TPU].value && load_tpu(ld, f[K_TPU].value)) ||
	    (f[K_TIERS].value && load_tiers(ld, f[K_TIERS].value)))
		return -1;
	if (f[K_DEFAULT_RUNTIME].value) {
		const yaml_node_t *n = f[K_DEFAULT_RUNTIME].value;
		const char *name;
		if (parse_name(ld, n, "default_runtime_version", &name))
			return -1;
		if (!catalog_runtime_find(cat, name))
			return fail(ld, n, "default_runtime_version: \"%s\" is not in runtime_versions",
				    name);
		cat->default_runtime = xstrdup(name);
	}
	qsort(cat->machines, cat->n_machines, sizeof(*cat->machines), cmp_machine);
	qsort(cat->regions, cat->n_regions, sizeof(*cat->regions), cmp_region);
	return 0;
}

/* Checks the loaded document doc (deleted here) into *out; path names it in errors. */
static int load_doc(const char *path, yaml_document_t *doc, struct catalog **out, char *err,
		    size_t errlen)
{
	struct loader ld = { path, doc, err, errlen, NULL };
	yaml_node_t *root = yaml_document_get_root_node(doc);
	int rc = -1;

	if (!root) {
		snprintf(err, errlen, "%s:1:1: the catalog is empty", path);
		goto out;
	}
	ld.cat = xcalloc(1, sizeof(*ld.cat));
	if (load_root(&ld, root))
		goto out;
	*out = ld.cat;
	ld.cat = NULL;
	rc = 0;
out:
	catalog_free(ld.cat);
	yaml_document_delete(doc);
	return rc;
}

int catalog_load(const char *path, struct catalog **out, char *err, size_t errlen)
{
	yaml_document_t doc;

	*out = NULL;
	if (errlen)
		err[0] = '\0';
	if (yaml_doc_load(path, &doc, err, errlen))
		return -1;
	return load_doc(path, &doc, out, err, errlen);
}

int catalog_load_text(const char *name, const char *text, size_t len, struct catalog **out,
		      char *err, size_t errlen)
{
	yaml_document_t doc;

	*out = NULL;
	if (errlen)
		err[0] = '\0';
	if (yaml_doc_load_text(name, text, len, &doc, err, errlen))
		return -1;
	return load_doc(name, &doc, out, err, errlen);
}

/* ------------------------------------------------------------------------- */
/* Queries                                                                    */

size_t catalog_region_count(const struct catalog *cat, unsigned api)
{
	size_t n = 0;

	for (size_t i = 0; i < cat->n_regions; i++)
		n += (cat->regions[i].apis & api) != 0;
	return n;
}

const char *catalog_region_name(const struct catalog *cat, unsigned api, size_t i)
{
	for (size_t j = 0; j < cat->n_regions; j++)
		if ((cat->regions[j].apis & api) && !i--)
			return cat->regions[j].name;
	return NULL;
}

const struct catalog_region *catalog_region_find(const struct catalog *cat, const char *name)
{
	struct catalog_region key = { .name = name };

	if (!name)
		return NULL;
	return bsearch(&key, cat->regions, cat->n_regions, sizeof(*cat->regions), cmp_region);
}

bool catalog_has_region(const struct catalog *cat, const char *region)
{
	return catalog_region_find(cat, region) != NULL;
}

const struct catalog_zone *catalog_region_zone_offering(const struct catalog_region *region,
							catalog_accset set)
{
	for (size_t i = 0; i < region->n_zones; i++)
		if ((region->zones[i].accelerators & set) == set)
			return &region->zones[i];
	return NULL;
}

json_t *catalog_location_json(const struct catalog *cat, const char *project, const char *region)
{
	const struct catalog_region *r = catalog_region_find(cat, region);
	json_t *loc, *caps, *accs, *cap;
	char *name;

	if (!r || !(r->apis & CATALOG_API_ML))
		return NULL;
	cap = json_object();
	json_object_set_new(cap, "type", json_string("TRAINING"));
	accs = json_array();
	for (size_t i = 0; i < cat->n_accs; i++)
		if ((r->accelerators & (1u << i)) && (cat->accs[i].apis & CATALOG_API_ML))
			json_array_append_new(accs, json_string(cat->accs[i].name));
	/* proto3 JSON leaves an empty repeated field out. */
	if (json_array_size(accs))
		json_object_set_new(cap, "availableAccelerators", accs);
	else
		json_decref(accs);
	name = xasprintf("projects/%s/locations/%s", project, r->name);
	loc = json_object();
	json_object_set_new(loc, "name", json_string(name));
	caps = json_array();
	json_array_append_new(caps, cap);
	json_object_set_new(loc, "capabilities", caps);
	free(name);
	return loc;
}

const struct catalog_machine *catalog_machine_find(const struct catalog *cat, const char *name)
{
	struct catalog_machine key = { .name = name };

	if (!name)
		return NULL;
	return bsearch(&key, cat->machines, cat->n_machines, sizeof(*cat->machines), cmp_machine);
}

size_t catalog_machine_count(const struct catalog *cat)
{
	return cat->n_machines;
}

const struct catalog_machine *catalog_machine(const struct catalog *cat, size_t i)
{
	return i < cat->n_machines ? &cat->machines[i] : NULL;
}

size_t catalog_region_total(const struct catalog *cat)
{
	return cat->n_regions;
}

const struct catalog_region *catalog_region(const struct catalog *cat, size_t i)
{
	return i < cat->n_regions ? &cat->regions[i] : NULL;
}

int catalog_machine_size(const struct catalog *cat, const char *machine_type,
			 struct machine_size *out)
{
	const struct catalog_machine *m = catalog_machine_find(cat, machine_type);

	if (!m)
		return -1;
	out->vcpus = m->vcpus;
	out->memory_mb = m->memory_mb;
	return 0;
}

size_t catalog_accelerator_count(const struct catalog *cat)
{
	return cat->n_accs;
}

const struct catalog_accelerator *catalog_accelerator(const struct catalog *cat, size_t i)
{
	return i < cat->n_accs ? &cat->accs[i] : NULL;
}

int catalog_accelerator_find(const struct catalog *cat, const char *name)
{
	return name ? find_acc(cat, name) : -1;
}

size_t catalog_runtime_count(const struct catalog *cat)
{
	return cat->n_runtimes;
}

const struct catalog_runtime *catalog_runtime(const struct catalog *cat, size_t i)
{
	return i < cat->n_runtimes ? &cat->runtimes[i] : NULL;
}

const struct catalog_runtime *catalog_runtime_find(const struct catalog *cat, const char *version)
{
	if (!version)
		return NULL;
	for (size_t i = 0; i < cat->n_runtimes; i++)
		if (!strcmp(cat->runtimes[i].version, version))
			return &cat->runtimes[i];
	return NULL;
}

const char *catalog_default_runtime_version(const struct catalog *cat)
{
	return cat->default_runtime;
}

const struct catalog_tier *catalog_tier_find(const struct catalog *cat, const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < cat->n_tiers; i++)
		if (!strcmp(cat->tiers[i].name, name))
			return &cat->tiers[i];
	return NULL;
}

size_t catalog_limit_count(const struct catalog *cat)
{
	return cat->n_limits;
}

const struct catalog_limit *catalog_limit(const struct catalog *cat, size_t i)
{
	return i < cat->n_limits ? &cat->limits[i] : NULL;
}

size_t catalog_tpu_image_count(const struct catalog *cat)
{
	return cat->n_images;
}

const char *catalog_tpu_image(const struct catalog *cat, size_t i, const char **tpu_tf_version)
{
	if (i >= cat->n_images)
		return NULL;
	if (tpu_tf_version)
		*tpu_tf_version = cat->images[i].version;
	return cat->images[i].image;
}

const char *catalog_tpu_image_version(const struct catalog *cat, const char *image)
{
	if (!image)
		return NULL;
	for (size_t i = 0; i < cat->n_images; i++)
		if (!strcmp(cat->images[i].image, image))
			return cat->images[i].version;
	return NULL;
}

int64_t catalog_max_replica_count(const struct catalog *cat)
{
	return cat->max_replica_count;
}
