/*
 * validate.c - the catalog rules both APIs share (validate.h): one machine
 * type with one accelerator config against the catalog's machine x
 * accelerator table and limits, images, boot disks, durations, the
 * region/zone rules, and labels. ml v1's rules are in validate_ml.c,
 * Vertex's in validate_vertex.c; all of them check the typed spec
 * (training_spec.h).
 *
 * Descriptions are sentences in Google's style. Where the reference quotes
 * Google's wording (Vertex pool 0, both-or-none, accelerator vs machine
 * type, the API field documentation), it is used verbatim; ml v1 messages
 * name fields in lowerCamelCase as a user writes them in config.yaml.
 */
#include "validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageref.h"
#include "validate_internal.h"
#include "wire.h"

#define MAX_LABELS 64
#define MAX_LABEL_CHARS 63

/* ------------------------------------------------------------------------- */
/* Formatting helpers                                                         */

/* "1, 2, 4" for a count mask. */
static void fmt_counts(uint64_t mask, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int n = 1; n <= CATALOG_MAX_COUNT && off < len; n++) {
		if (!(mask & (UINT64_C(1) << n)))
			continue;
		off += snprintf(buf + off, len - off, "%s%d", off ? ", " : "", n);
	}
}

/* Memory in GB as the catalog writes it: "208", "14.4". */
static void fmt_gb(int64_t mb, char *buf, size_t len)
{
	snprintf(buf, len, "%.4g", (double)mb / 1024.0);
}

void add_runtime_list(const struct catalog *cat, struct strbuf *sb, bool tpu_only)
{
	bool first = true;

	for (size_t i = 0; i < catalog_runtime_count(cat); i++) {
		const struct catalog_runtime *rt = catalog_runtime(cat, i);
		if (tpu_only && !rt->tpu)
			continue;
		sb_addf(sb, "%s%s", first ? "" : ", ", rt->version);
		first = false;
	}
}

const char *acc_name(const struct ctx *c, int a)
{
	return catalog_accelerator(c->cat, (size_t)a)->name;
}

/* ------------------------------------------------------------------------- */
/* Shared: what reaches a container engine (lib/imageref.h)                   */

bool quotable(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if ((unsigned char)s[n] < ' ' || (unsigned char)s[n] >= 0x7f || n >= 300)
			return false;
	return true;
}

/*
 * An image: the node's engine gets it as `run ... -- <image>`, and before
 * issue 12 an image "--volume=/:/host" was read as an option. Anything that
 * is not a reference (docker's grammar; no podman transport) is refused.
 */
void check_image(struct ctx *c, const char *image, const char *base, const char *sfx)
{
	const char *why = image ? imageref_parse(image, NULL) : NULL;
	char field[FIELD_MAX];

	if (!why)
		return;
	snprintf(field, sizeof(field), "%s%s", base, sfx);
	if (quotable(image))
		violations_add(c->out, field, "Invalid image URI \"%s\": %s. An image URI is "
			       IMAGEREF_FORM ", e.g. " IMAGEREF_EXAMPLE ".", image, why);
	else
		violations_add(c->out, field, "Invalid image URI: %s. An image URI is "
			       IMAGEREF_FORM ", e.g. " IMAGEREF_EXAMPLE ".", why);
}

/* ------------------------------------------------------------------------- */
/* Shared: one machine type with one accelerator config                       */

void check_machine_accelerator(struct ctx *c, const struct catalog_machine *m,
				      const char *acc_type, int64_t acc_count,
				      const char *type_field, const char *count_field,
				      const char *machine_field, int *acc, int64_t *count)
{
	uint64_t mask;
	int a;

	*acc = -1;
	*count = 0;
	if (!acc_type) {
		if (m && m->accelerator >= 0) {
			*acc = m->accelerator;
			*count = m->accelerator_count;
		}
		return;
	}
	a = catalog_accelerator_find(c->cat, acc_type);
	if (a < 0 || !(catalog_accelerator(c->cat, (size_t)a)->apis & c->api)) {
		violations_add(c->out, type_field, "Accelerator \"%s\" is not supported.", acc_type);
		return;
	}
	if (!m || acc_count <= 0)
		return;
	mask = m->counts[a];
	if (!mask) {
		violations_add(c->out, type_field,
			       "Accelerator \"%s\" is not supported for machine type \"%s\".",
			       acc_type, m->name);
		return;
	}
	if (acc_count > CATALOG_MAX_COUNT || !(mask & (UINT64_C(1) << acc_count))) {
		char counts[256];
		fmt_counts(mask, counts, sizeof(counts));
		violations_add(c->out, count_field,
			       "Accelerator count %lld is not supported for accelerator \"%s\" on "
			       "machine type \"%s\". Supported counts: %s.",
			       (long long)acc_count, acc_type, m->name, counts);
		return;
	}
	for (size_t i = 0; i < catalog_limit_count(c->cat); i++) {
		const struct catalog_limit *l = catalog_limit(c->cat, i);
		char max_gb[32], gb[32];
		if (l->accelerator != a || acc_count < l->count)
			continue;
		if (m->vcpus <= l->max_vcpus && m->memory_mb <= l->max_memory_mb)
			continue;
		fmt_gb(l->max_memory_mb, max_gb, sizeof(max_gb));
		fmt_gb(m->memory_mb, gb, sizeof(gb));
		violations_add(c->out, machine_field,
			       "Configurations with %d %s accelerators support at most %d vCPUs and "
			       "%s GB of memory; machine type \"%s\" has %d vCPUs and %s GB.",
			       l->count, acc_type, l->max_vcpus, max_gb, m->name, m->vcpus, gb);
		return;
	}
	*acc = a;
	*count = acc_count;
}

void check_boot_disk(struct ctx *c, const char *type, int64_t size_gb, bool size_bad,
		     const char *base, const char *sfx)
{
	char f[FIELD_MAX];

	if (type && strcmp(type, "pd-ssd") && strcmp(type, "pd-standard")) {
		snprintf(f, sizeof(f), "%s%s.boot_disk_type", base, sfx);
		violations_add(c->out, f,
			       "Boot disk type \"%s\" is not supported. Valid values: \"pd-ssd\", "
			       "\"pd-standard\".", type);
	}
	if (!size_bad && size_gb < 0) {
		snprintf(f, sizeof(f), "%s%s.boot_disk_size_gb", base, sfx);
		violations_add(c->out, f, "The boot disk size must not be negative.");
	}
}

bool check_duration(struct ctx *c, const char *s, const char *field, int64_t *nanos)
{
	*nanos = 0;
	if (!s)
		return false;
	if (wire_duration_parse(s, nanos)) {
		*nanos = 0;
		violations_add(c->out, field,
			       "Invalid duration \"%s\": expected seconds with up to 9 fractional "
			       "digits followed by 's', e.g. \"7200s\".", s);
		return false;
	}
	if (*nanos <= 0) {
		violations_add(c->out, field, "The duration must be positive.");
		return false;
	}
	return true;
}

void check_region_accelerators(struct ctx *c, const struct catalog_region *r,
				      catalog_accset used, const char *const *blame,
				      const char *zone_field, const char *where)
{
	catalog_accset missing = used & ~r->accelerators;
	struct strbuf sb = STRBUF_INIT;
	size_t n = 0;

	for (size_t a = 0; a < catalog_accelerator_count(c->cat); a++)
		if (missing & (1u << a))
			violations_add(c->out, blame[a],
				       "Accelerator \"%s\" is not available in %s \"%s\".",
				       acc_name(c, (int)a), where, r->name);
	if (missing || !used || catalog_region_zone_offering(r, used))
		return;
	for (size_t a = 0; a < catalog_accelerator_count(c->cat); a++)
		if (used & (1u << a))
			sb_addf(&sb, "%s%s", n++ ? ", " : "", acc_name(c, (int)a));
	if (n < 2) {	/* one type offered by the region is offered by one of its zones */
		sb_release(&sb);
		return;
	}
	violations_add(c->out, zone_field,
		       "No zone in %s \"%s\" offers all of the accelerator types the job uses "
		       "(%s). A job that uses more than one accelerator type must run in one "
		       "zone that offers all of them.", where, r->name, sb_str(&sb));
	sb_release(&sb);
}

/* ------------------------------------------------------------------------- */
/* Labels                                                                     */

/* Decodes one UTF-8 code point; returns its length, 0 when malformed. */
static size_t utf8_next(const unsigned char *s, uint32_t *cp)
{
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0 && (s[1] & 0xc0) == 0x80) {
		*cp = (uint32_t)(s[0] & 0x1f) << 6 | (s[1] & 0x3f);
		return *cp >= 0x80 ? 2 : 0;
	}
	if ((s[0] & 0xf0) == 0xe0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80) {
		*cp = (uint32_t)(s[0] & 0x0f) << 12 | (uint32_t)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
		return *cp >= 0x800 && (*cp < 0xd800 || *cp > 0xdfff) ? 3 : 0;
	}
	if ((s[0] & 0xf8) == 0xf0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80 &&
	    (s[3] & 0xc0) == 0x80) {
		*cp = (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3f) << 12 |
		      (uint32_t)(s[2] & 0x3f) << 6 | (s[3] & 0x3f);
		return *cp >= 0x10000 && *cp <= 0x10ffff ? 4 : 0;
	}
	return 0;
}

/*
 * An "international character" in Google's label rule ([\p{Ll}\p{Lo}] and
 * \p{N}). Without Unicode tables this is an approximation: any non-ASCII
 * code point except the Latin-1 symbols, the common upper-case blocks
 * (Latin-1, Greek, Cyrillic) and general punctuation.
 */
static bool label_intl_ok(uint32_t cp)
{
	if (cp < 0xc0)	/* Latin-1 symbols; keep ª µ º and ² ³ ¹ ¼ ½ ¾ */
		return cp == 0xaa || cp == 0xb5 || cp == 0xba || cp == 0xb2 || cp == 0xb3 ||
		       cp == 0xb9 || (cp >= 0xbc && cp <= 0xbe);
	if (cp <= 0xde || cp == 0xf7)	/* À..Þ upper case, × and ÷ */
		return false;
	if ((cp >= 0x391 && cp <= 0x3ab) || (cp >= 0x400 && cp <= 0x42f))
		return false;
	if (cp >= 0x2000 && cp <= 0x206f)
		return false;
	return true;
}

/* Checks one label key or value: min..63 characters of the label alphabet. */
static bool label_ok(const char *s, bool key)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t chars = 0;

	while (*p) {
		uint32_t cp;
		size_t len = utf8_next(p, &cp);
		if (!len)
			return false;
		if (cp < 0x80) {
			bool lower = cp >= 'a' && cp <= 'z';
			bool other = (cp >= '0' && cp <= '9') || cp == '_' || cp == '-';
			if (!lower && (!other || (key && chars == 0)))
				return false;
		} else if (!label_intl_ok(cp)) {
			return false;
		}
		p += len;
		if (++chars > MAX_LABEL_CHARS)
			return false;
	}
	return !key || chars > 0;
}

size_t spec_validate_labels(const json_t *labels, const char *field, struct violations *out)
{
	size_t before = out->n;
	const char *key;
	json_t *value;

	if (!labels || json_is_null(labels))
		return 0;
	if (!json_is_object(labels)) {
		violations_add(out, field, "Invalid value: expected a map of labels.");
		return out->n - before;
	}
	if (json_object_size(labels) > MAX_LABELS) {
		violations_add(out, field, "At most %d labels can be set; %zu were given.",
			       MAX_LABELS, json_object_size(labels));
		return out->n - before;
	}
	json_object_foreach((json_t *)labels, key, value) {
		if (!label_ok(key, true))
			violations_add(out, field,
				       "Invalid label key \"%s\": label keys must be between 1 and 63 "
				       "characters long and must conform to the regular expression "
				       "[\\p{Ll}\\p{Lo}][\\p{Ll}\\p{Lo}\\p{N}_-]{0,62}.", key);
		if (!json_is_string(value))
			violations_add(out, field, "Invalid value for label \"%s\": expected a string.",
				       key);
		else if (!label_ok(json_string_value(value), false))
			violations_add(out, field,
				       "Invalid value for label \"%s\": label values must be between 0 "
				       "and 63 characters long and must conform to the regular "
				       "expression [\\p{Ll}\\p{Lo}\\p{N}_-]{0,63}.", key);
	}
	return out->n - before;
}

/* ------------------------------------------------------------------------- */
/* Parse and check in one                                                     */

size_t spec_check_ml(const struct catalog *cat, const json_t *training_input,
		     struct violations *out)
{
	struct training_spec spec;
	size_t n = spec_ml_parse(training_input, &spec, out);

	if (!spec.not_object)
		n += spec_validate_ml(cat, &spec, out);
	spec_release(&spec);
	return n;
}

size_t spec_check_vertex(const struct catalog *cat, const char *location, const json_t *job_spec,
			 struct violations *out)
{
	struct training_spec spec;
	size_t n = spec_vertex_parse(job_spec, location, &spec, out);

	n += spec_validate_vertex(cat, &spec, out);
	spec_release(&spec);
	return n;
}
