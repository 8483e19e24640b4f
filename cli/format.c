/*
 * format.c - --format: gcloud's formats and projections (format.h), with
 * the bytes gcloud 528 prints: json as Python's json.dumps(indent=2,
 * sort_keys=True), yaml through cli_yaml() (ruamel's emitter), value/csv
 * cells as gcloud stringizes them (lists joined by ';', dicts as k=v;...,
 * nested dicts as Python reprs), tables as wide as their cells.
 */
#include "format.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "common.h"

enum fmt_kind { FK_DEFAULT, FK_JSON, FK_YAML, FK_NONE, FK_VALUE, FK_TABLE, FK_CSV };

struct key_seg {
	char *name;	/* NULL: a list index */
	long index;
	int all;	/* [] : every element */
};

struct key {
	struct key_seg *segs;
	size_t n;
};

#define MAX_TRANSFORM_ARGS 4

struct transform {
	char *name;
	char *args[MAX_TRANSFORM_ARGS];	/* positional */
	int nargs;
	char *tz, *format;	/* date()'s named arguments */
};

struct column {
	char *key_text;	/* as written, for the merge with the defaults */
	struct key key;
	struct transform *tr;
	size_t ntr;
	char *label;
};

struct fmt {
	enum fmt_kind kind;
	int no_heading, box;
	char *separator;
	struct column *cols;
	size_t ncols;
};

/* --- keys ----------------------------------------------------------------- */

static int key_char(int c)
{
	return isalnum(c) || c == '_' || c == '-' || c == '@';
}

static void key_release(struct key *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->segs[i].name);
	free(k->segs);
	k->segs = NULL;
	k->n = 0;
}

static void key_push(struct key *k, char *name, long index, int all)
{
	k->segs = xrealloc(k->segs, (k->n + 1) * sizeof *k->segs);
	k->segs[k->n].name = name;
	k->segs[k->n].index = index;
	k->segs[k->n].all = all;
	k->n++;
}

/*
 * Parses a key at *p: name ('.' name | '[' [N] ']')*; stops before a
 * '.name(' (a transform), and at any other character. 0, or -1 and *err.
 */
static int parse_key(const char **p, struct key *k, char **err)
{
	const char *s = *p;
	for (;;) {
		if (*s == '[') {
			char *end;
			s++;
			if (*s == ']') {
				key_push(k, NULL, 0, 1);
				s++;
			} else {
				long idx = strtol(s, &end, 10);
				if (end == s || *end != ']') {
					*err = xasprintf("Expected a list index in [] at [%s].", *p);
					return -1;
				}
				key_push(k, NULL, idx, 0);
				s = end + 1;
			}
		} else if (key_char((unsigned char)*s) && (!k->n || s == *p)) {
			const char *b = s;
			while (key_char((unsigned char)*s))
				s++;
			key_push(k, xstrndup(b, (size_t)(s - b)), 0, 0);
		} else if (*s == '.' && k->n) {
			const char *b = s + 1, *e = b;
			while (key_char((unsigned char)*e))
				e++;
			if (e == b) {
				*err = xasprintf("Expected a key name after '.' at [%s].", *p);
				return -1;
			}
			if (*e == '(')	/* a transform: the key ends here */
				break;
			key_push(k, xstrndup(b, (size_t)(e - b)), 0, 0);
			s = e;
		} else {
			break;
		}
	}
	if (!k->n) {
		*err = xasprintf("Key expected at [%s].", *p);
		return -1;
	}
	*p = s;
	return 0;
}

static json_t *get_at(const json_t *v, const struct key_seg *s, size_t n)
{
	if (!v)
		return NULL;
	if (!n)
		return json_incref((json_t *)v);
	if (json_is_array(v) && (s->name || s->all)) {
		/* through a list: the key of each element */
		json_t *out = json_array();
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e) {
			json_t *r = get_at(e, s->all ? s + 1 : s, s->all ? n - 1 : n);
			if (r)
				json_array_append_new(out, r);
		}
		return out;
	}
	if (s->name) {
		if (!json_is_object(v))
			return NULL;
		json_t *c = json_object_get(v, s->name);
		if (!c) {
			char *cc = cli_camel(s->name);
			c = json_object_get(v, cc);
			free(cc);
		}
		return get_at(c, s + 1, n - 1);
	}
	if (!json_is_array(v))
		return NULL;
	long size = (long)json_array_size(v), i = s->index < 0 ? size + s->index : s->index;
	if (i < 0 || i >= size)
		return NULL;
	return get_at(json_array_get(v, (size_t)i), s + 1, n - 1);
}

json_t *fmt_key_get(const json_t *resource, const char *key, char **err)
{
	struct key k = { NULL, 0 };
	char *e = NULL;
	const char *p = key;
	json_t *r = NULL;
	if (parse_key(&p, &k, &e) == 0 && *p)
		e = xasprintf("Unexpected [%s] in key [%s].", p, key);
	if (!e)
		r = get_at(resource, k.segs, k.n);
	key_release(&k);
	if (err)
		*err = e;
	else
		free(e);
	return r;
}

/* --- transforms ----------------------------------------------------------- */

static const char *const transform_names[] = { "basename", "date", "len", "lower", "upper" };

/* Parses "2026-11-26T19:19:53.116169Z" (RFC 3339); 0 on success. */
static int parse_rfc3339(const char *s, time_t *t, long *usec)
{
	struct tm tm = { 0 };
	int n = 0;
	if (sscanf(s, "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &n) != 3 || n != 10)
		return -1;
	s += n;
	*usec = 0;
	if (*s == 'T' || *s == 't' || *s == ' ') {
		if (sscanf(s + 1, "%2d:%2d:%2d%n", &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 3 || n != 8)
			return -1;
		s += 1 + n;
		if (*s == '.') {
			long mult = 100000;
			for (s++; isdigit((unsigned char)*s); s++, mult /= 10)
				*usec += (*s - '0') * mult;
		}
	}
	long off = 0;
	if (*s == 'Z' || *s == 'z') {
		s++;
	} else if (*s == '+' || *s == '-') {
		int hh, mm;
		if (sscanf(s + 1, "%2d:%2d%n", &hh, &mm, &n) != 2 || n != 5)
			return -1;
		off = (hh * 3600L + mm * 60L) * (*s == '-' ? -1 : 1);
		s += 1 + n;
	}
	if (*s)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*t = timegm(&tm) - off;
	return 0;
}

int fmt_parse_time(const char *s, double *t)
{
	time_t when;
	long usec;
	if (parse_rfc3339(s, &when, &usec)) {
		/* a date or a time without a zone: local time, as gcloud reads a filter operand */
		struct tm tm = { 0 };
		int n = 0, k = sscanf(s, "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &n);
		if (k != 3 || n != 10)
			return -1;
		if (s[n] && (sscanf(s + n + 1, "%2d:%2d:%2d", &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 3 ||
			     (s[n] != 'T' && s[n] != ' ') || strlen(s + n + 1) != 8))
			return -1;
		tm.tm_year -= 1900;
		tm.tm_mon -= 1;
		tm.tm_isdst = -1;
		*t = (double)mktime(&tm);
		return 0;
	}
	*t = (double)when + usec / 1e6;
	return 0;
}

static json_t *transform_date(const struct transform *t, const json_t *v)
{
	time_t when;
	long usec;
	if (!json_is_string(v) || parse_rfc3339(json_string_value(v), &when, &usec))
		return json_string("");
	const char *format = t->format ? t->format : t->nargs ? t->args[0] : "%Y-%m-%dT%H:%M:%S";
	struct tm tm;
	if (t->tz && !strcasecmp(t->tz, "LOCAL"))
		localtime_r(&when, &tm);
	else
		gmtime_r(&when, &tm);
	/* %f (microseconds) is Python's; strftime does not know it */
	struct strbuf f = STRBUF_INIT;
	for (const char *c = format; *c; c++) {
		if (c[0] == '%' && c[1] == 'f') {
			sb_addf(&f, "%06ld", usec);
			c++;
		} else if (c[0] == '%' && c[1] == '%') {
			sb_addstr(&f, "%%");
			c++;
		} else {
			sb_addch(&f, *c);
		}
	}
	char buf[512];
	size_t n = *sb_str(&f) ? strftime(buf, sizeof buf, sb_str(&f), &tm) : 0;
	sb_release(&f);
	buf[n] = '\0';
	return json_string(buf);
}

static size_t utf8_len(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

/* Applies t to v (borrowed; may be NULL); a new reference or NULL. */
static json_t *apply_transform(const struct transform *t, const json_t *v)
{
	if (!strcmp(t->name, "date"))
		return transform_date(t, v);
	if (!strcmp(t->name, "len")) {
		if (json_is_array(v))
			return json_integer((json_int_t)json_array_size(v));
		if (json_is_object(v))
			return json_integer((json_int_t)json_object_size(v));
		if (json_is_string(v))
			return json_integer((json_int_t)utf8_len(json_string_value(v)));
		return json_integer(0);
	}
	if (!json_is_string(v))
		return v ? json_incref((json_t *)v) : NULL;
	const char *s = json_string_value(v);
	if (!strcmp(t->name, "basename")) {
		const char *b = strrchr(s, '/');
		return json_string(b ? b + 1 : s);
	}
	char *c = xstrdup(s);
	for (char *p = c; *p; p++)
		*p = (char)(!strcmp(t->name, "upper") ? toupper((unsigned char)*p) : tolower((unsigned char)*p));
	json_t *r = json_string(c);
	free(c);
	return r;
}

static void transform_release(struct transform *t)
{
	free(t->name);
	for (int i = 0; i < t->nargs; i++)
		free(t->args[i]);
	free(t->tz);
	free(t->format);
}

/* A transform argument: 'quoted', "quoted" or a bare word; *p past it. */
static char *parse_arg(const char **p, char **err)
{
	const char *s = *p;
	struct strbuf sb = STRBUF_INIT;
	while (*s == ' ')
		s++;
	if (*s == '"' || *s == '\'') {
		char q = *s++;
		while (*s && *s != q) {
			if (*s == '\\' && s[1])
				s++;
			sb_addch(&sb, *s++);
		}
		if (!*s) {
			sb_release(&sb);
			*err = xasprintf("Unterminated string at [%s].", *p);
			return NULL;
		}
		s++;
	} else {
		while (*s && *s != ',' && *s != ')' && *s != '=')
			sb_addch(&sb, *s++);
		while (sb.len && sb.buf[sb.len - 1] == ' ')
			sb_setlen(&sb, sb.len - 1);
	}
	while (*s == ' ')
		s++;
	*p = s;
	return sb_detach(&sb);
}

/* ".name(args)" at *p. */
static int parse_transform(const char **p, struct transform *t, char **err)
{
	const char *s = *p + 1, *b = s;
	memset(t, 0, sizeof *t);
	while (key_char((unsigned char)*s))
		s++;
	t->name = xstrndup(b, (size_t)(s - b));
	int known = 0;
	for (size_t i = 0; i < ARRAY_SIZE(transform_names); i++)
		known |= !strcmp(t->name, transform_names[i]);
	if (!known) {
		*err = xasprintf("Unknown transform function %s [%s]: the transforms are basename(), date(), "
				 "len(), lower() and upper().", t->name, *p);
		return -1;
	}
	s++;	/* '(' */
	while (*s == ' ')
		s++;
	while (*s && *s != ')') {
		char *a = parse_arg(&s, err);
		if (!a)
			return -1;
		if (*s == '=') {
			s++;
			char *v = parse_arg(&s, err);
			if (!v) {
				free(a);
				return -1;
			}
			if (strcmp(t->name, "date") || (strcmp(a, "tz") && strcmp(a, "format"))) {
				*err = xasprintf("Unknown argument [%s] of %s(): date() takes format= and tz=.", a,
						 t->name);
				free(a);
				free(v);
				return -1;
			}
			char **dst = !strcmp(a, "tz") ? &t->tz : &t->format;
			free(*dst);
			*dst = v;
			free(a);
		} else if (t->nargs < MAX_TRANSFORM_ARGS) {
			t->args[t->nargs++] = a;
		} else {
			free(a);
			*err = xasprintf("Too many arguments to %s() at [%s].", t->name, *p);
			return -1;
		}
		if (*s == ',')
			s++;
		else if (*s != ')')
			break;
	}
	if (*s != ')') {
		*err = xasprintf("Closing ) expected after the arguments of %s() [%s].", t->name, *p);
		return -1;
	}
	if (t->tz && strcasecmp(t->tz, "LOCAL") && strcasecmp(t->tz, "UTC")) {
		*err = xasprintf("Unknown time zone [%s] in date(): use tz=LOCAL or tz=UTC.", t->tz);
		return -1;
	}
	if (strcmp(t->name, "date") && t->nargs) {
		*err = xasprintf("%s() takes no arguments [%s].", t->name, *p);
		return -1;
	}
	*p = s + 1;
	return 0;
}

/* --- parsing a --format --------------------------------------------------- */

static void column_release(struct column *c)
{
	free(c->key_text);
	key_release(&c->key);
	for (size_t i = 0; i < c->ntr; i++)
		transform_release(&c->tr[i]);
	free(c->tr);
	free(c->label);
}

void fmt_free(struct fmt *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->ncols; i++)
		column_release(&f->cols[i]);
	free(f->cols);
	free(f->separator);
	free(f);
}

static int parse_column(const char **p, struct column *c, char **err)
{
	const char *s = *p;
	memset(c, 0, sizeof *c);
	if (parse_key(&s, &c->key, err))
		return -1;
	c->key_text = xstrndup(*p, (size_t)(s - *p));
	while (*s == '.') {
		c->tr = xrealloc(c->tr, (c->ntr + 1) * sizeof *c->tr);
		if (parse_transform(&s, &c->tr[c->ntr], err)) {
			c->ntr++;
			return -1;
		}
		c->ntr++;
	}
	while (*s == ':') {
		s++;
		const char *b = s;
		while (key_char((unsigned char)*s))
			s++;
		char *attr = xstrndup(b, (size_t)(s - b));
		if (strcmp(attr, "label") || *s != '=') {
			*err = xasprintf("Unknown column attribute [%s]: the column attribute is label=LABEL.", attr);
			free(attr);
			return -1;
		}
		free(attr);
		s++;
		char *v = parse_arg(&s, err);
		if (!v)
			return -1;
		free(c->label);
		c->label = v;
	}
	while (*s == ' ')
		s++;
	*p = s;
	return 0;
}

static const struct {
	const char *name;
	enum fmt_kind kind;
} kinds[] = {
	{ "csv", FK_CSV }, { "default", FK_DEFAULT }, { "json", FK_JSON }, { "none", FK_NONE },
	{ "table", FK_TABLE }, { "value", FK_VALUE }, { "yaml", FK_YAML },
};

static int parse_attributes(const char **p, struct fmt *f, char **err)
{
	const char *s = *p + 1;
	while (*s && *s != ']') {
		const char *b = s;
		while (*s && *s != ',' && *s != ']' && *s != '=')
			s++;
		char *name = xstrndup(b, (size_t)(s - b));
		char *val = NULL;
		if (*s == '=') {
			s++;
			if (*s == '"' || *s == '\'') {
				val = parse_arg(&s, err);
				if (!val) {
					free(name);
					return -1;
				}
			} else {
				b = s;
				while (*s && *s != ',' && *s != ']')
					s++;
				val = xstrndup(b, (size_t)(s - b));
			}
		}
		int ok = 1;
		if (!strcmp(name, "no-heading") && !val)
			f->no_heading = 1;
		else if (!strcmp(name, "box") && !val)
			f->box = 1;
		else if (!strcmp(name, "separator") && val)
			free(f->separator), f->separator = xstrdup(val);
		else
			ok = 0;
		if (!ok)
			*err = xasprintf("Unknown format attribute [%s%s%s]: the attributes are no-heading, box "
					 "and separator=S.", name, val ? "=" : "", val ? val : "");
		free(name);
		free(val);
		if (!ok)
			return -1;
		if (*s == ',')
			s++;
	}
	if (*s != ']') {
		*err = xasprintf("Closing ] expected [%s].", *p);
		return -1;
	}
	*p = s + 1;
	return 0;
}

struct fmt *fmt_parse(const char *spec, char **err)
{
	struct fmt *f = xcalloc(1, sizeof *f);
	const char *s = spec, *b;
	*err = NULL;
	while (*s == ' ')
		s++;
	b = s;
	while (isalpha((unsigned char)*s) || *s == '-')
		s++;
	size_t nl = (size_t)(s - b);
	int found = !nl;	/* "[no-heading](...)" or "(...)": a table */
	f->kind = nl ? FK_DEFAULT : FK_TABLE;
	for (size_t i = 0; i < ARRAY_SIZE(kinds) && nl; i++)
		if (strlen(kinds[i].name) == nl && !strncmp(kinds[i].name, b, nl)) {
			f->kind = kinds[i].kind;
			found = 1;
		}
	if (!found) {
		*err = xasprintf("Format must be one of csv, default, json, none, table, value, yaml; "
				 "received [%.*s].", (int)nl, b);
		goto fail;
	}
	if (*s == '[' && parse_attributes(&s, f, err))
		goto fail;
	if (*s == '(') {
		if (f->kind != FK_VALUE && f->kind != FK_TABLE && f->kind != FK_CSV) {
			*err = xasprintf("Format [%.*s] takes no projection (...): value, table and csv do.",
					 (int)nl, b);
			goto fail;
		}
		s++;
		while (*s == ' ')
			s++;
		while (*s && *s != ')') {
			f->cols = xrealloc(f->cols, (f->ncols + 1) * sizeof *f->cols);
			if (parse_column(&s, &f->cols[f->ncols++], err))
				goto fail;
			if (*s == ',')
				s++;
			else if (*s != ')') {
				*err = *s ? xasprintf("Expected , or ) at [%s] in [%s].", s, spec)
					  : xasprintf("Closing ) expected at the end of [%s].", spec);
				goto fail;
			}
			while (*s == ' ')
				s++;
		}
		if (*s != ')') {
			*err = xasprintf("Closing ) expected at the end of [%s].", spec);
			goto fail;
		}
		s++;
	} else if (f->kind == FK_VALUE || f->kind == FK_TABLE || f->kind == FK_CSV) {
		*err = xasprintf("Format [%.*s] needs a projection: %.*s(KEY,...), e.g. %.*s(state).", (int)nl, b,
				 (int)nl, b, (int)nl, b);
		goto fail;
	}
	while (*s == ' ')
		s++;
	if (*s) {
		*err = xasprintf("Unexpected [%s] at the end of the format [%s].", s, spec);
		goto fail;
	}
	if (f->kind != FK_VALUE && f->kind != FK_TABLE && f->kind != FK_CSV && (f->no_heading || f->box))
		f->no_heading = f->box = 0;	/* gcloud ignores them there */
	return f;
fail:
	if (!*err)
		*err = xasprintf("Invalid format [%s].", spec);
	fmt_free(f);
	return NULL;
}

int fmt_is_projection(const struct fmt *f)
{
	return f->kind == FK_VALUE || f->kind == FK_TABLE || f->kind == FK_CSV;
}

int fmt_is_default(const struct fmt *f)
{
	return f->kind == FK_DEFAULT;
}

static void transforms_copy(struct column *to, const struct column *from)
{
	to->tr = xcalloc(from->ntr ? from->ntr : 1, sizeof *to->tr);
	for (size_t i = 0; i < from->ntr; i++) {
		const struct transform *t = &from->tr[i];
		struct transform *c = &to->tr[i];
		c->name = xstrdup(t->name);
		for (int a = 0; a < t->nargs; a++)
			c->args[a] = xstrdup(t->args[a]);
		c->nargs = t->nargs;
		c->tz = t->tz ? xstrdup(t->tz) : NULL;
		c->format = t->format ? xstrdup(t->format) : NULL;
	}
	to->ntr = from->ntr;
}

void fmt_merge_defaults(struct fmt *f, const struct fmt *defaults)
{
	for (size_t i = 0; f && defaults && i < f->ncols; i++)
		for (size_t j = 0; j < defaults->ncols; j++) {
			const struct column *d = &defaults->cols[j];
			struct column *c = &f->cols[i];
			if (strcmp(c->key_text, d->key_text))
				continue;
			if (!c->label && d->label)
				c->label = xstrdup(d->label);
			if (!c->ntr && d->ntr) {
				free(c->tr);
				transforms_copy(c, d);
			}
			break;
		}
}

/* --- printing ------------------------------------------------------------- */

/* Python's repr() of a float (the shortest string that reads back). */
static void py_float(struct strbuf *out, double d)
{
	char buf[64];
	if (isnan(d)) {
		sb_addstr(out, "NaN");
		return;
	}
	if (isinf(d)) {
		sb_addstr(out, d < 0 ? "-Infinity" : "Infinity");
		return;
	}
	int p;
	for (p = 1; p < 17; p++) {
		snprintf(buf, sizeof buf, "%.*e", p - 1, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	snprintf(buf, sizeof buf, "%.*e", p - 1, d);
	int e = atoi(strchr(buf, 'e') + 1);
	if (e < -4 || e >= 16) {
		/* d.ddde+XX: Python writes at least two exponent digits, as C does */
		sb_addstr(out, buf);
		return;
	}
	snprintf(buf, sizeof buf, "%.*f", p - 1 - e > 0 ? p - 1 - e : 0, d);
	sb_addstr(out, buf);
	if (!strchr(buf, '.'))
		sb_addstr(out, ".0");
}

static void json_str(struct strbuf *out, const char *s)
{
	sb_addch(out, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		switch (c) {
		case '"': sb_addstr(out, "\\\""); break;
		case '\\': sb_addstr(out, "\\\\"); break;
		case '\n': sb_addstr(out, "\\n"); break;
		case '\r': sb_addstr(out, "\\r"); break;
		case '\t': sb_addstr(out, "\\t"); break;
		case '\b': sb_addstr(out, "\\b"); break;
		case '\f': sb_addstr(out, "\\f"); break;
		default:
			if (c < 0x20)
				sb_addf(out, "\\u%04x", c);
			else
				sb_addch(out, (char)c);
		}
	}
	sb_addch(out, '"');
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of o, sorted; caller frees the array (not the keys). */
static const char **sorted_keys(const json_t *o, size_t *n)
{
	const char **keys = xcalloc(json_object_size(o) + 1, sizeof *keys);
	const char *k;
	json_t *v;
	*n = 0;
	json_object_foreach((json_t *)o, k, v)
		keys[(*n)++] = k;
	qsort(keys, *n, sizeof *keys, cmp_cstr);
	return keys;
}

static void json_node(struct strbuf *out, const json_t *v, int indent)
{
	if (json_is_object(v) && json_object_size(v)) {
		size_t n;
		const char **keys = sorted_keys(v, &n);
		sb_addstr(out, "{\n");
		for (size_t i = 0; i < n; i++) {
			sb_addf(out, "%*s", indent + 2, "");
			json_str(out, keys[i]);
			sb_addstr(out, ": ");
			json_node(out, json_object_get(v, keys[i]), indent + 2);
			sb_addstr(out, i + 1 < n ? ",\n" : "\n");
		}
		sb_addf(out, "%*s}", indent, "");
		free(keys);
	} else if (json_is_array(v) && json_array_size(v)) {
		size_t i;
		json_t *e;
		sb_addstr(out, "[\n");
		json_array_foreach(v, i, e) {
			sb_addf(out, "%*s", indent + 2, "");
			json_node(out, e, indent + 2);
			sb_addstr(out, i + 1 < json_array_size(v) ? ",\n" : "\n");
		}
		sb_addf(out, "%*s]", indent, "");
	} else if (json_is_object(v)) {
		sb_addstr(out, "{}");
	} else if (json_is_array(v)) {
		sb_addstr(out, "[]");
	} else if (json_is_string(v)) {
		json_str(out, json_string_value(v));
	} else if (json_is_integer(v)) {
		sb_addf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	} else if (json_is_real(v)) {
		py_float(out, json_real_value(v));
	} else {
		sb_addstr(out, json_is_true(v) ? "true" : json_is_false(v) ? "false" : "null");
	}
}

void fmt_json(struct strbuf *out, const json_t *v)
{
	json_node(out, v, 0);
	sb_addch(out, '\n');
}

/* Python's repr() of a string: '...' unless it holds ' and no ". */
static void py_str_repr(struct strbuf *out, const char *s)
{
	char q = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
	sb_addch(out, q);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == (unsigned char)q || c == '\\')
			sb_addf(out, "\\%c", c);
		else if (c == '\n')
			sb_addstr(out, "\\n");
		else if (c == '\r')
			sb_addstr(out, "\\r");
		else if (c == '\t')
			sb_addstr(out, "\\t");
		else if (c < 0x20 || c == 0x7f)
			sb_addf(out, "\\x%02x", c);
		else
			sb_addch(out, (char)c);
	}
	sb_addch(out, q);
}

static void py_repr(struct strbuf *out, const json_t *v)
{
	if (json_is_object(v)) {
		size_t n;
		const char **keys = sorted_keys(v, &n);
		sb_addch(out, '{');
		for (size_t i = 0; i < n; i++) {
			sb_addstr(out, i ? ", " : "");
			py_str_repr(out, keys[i]);
			sb_addstr(out, ": ");
			py_repr(out, json_object_get(v, keys[i]));
		}
		sb_addch(out, '}');
		free(keys);
	} else if (json_is_array(v)) {
		size_t i;
		json_t *e;
		sb_addch(out, '[');
		json_array_foreach(v, i, e) {
			sb_addstr(out, i ? ", " : "");
			py_repr(out, e);
		}
		sb_addch(out, ']');
	} else if (json_is_string(v)) {
		py_str_repr(out, json_string_value(v));
	} else if (json_is_integer(v)) {
		sb_addf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	} else if (json_is_real(v)) {
		py_float(out, json_real_value(v));
	} else {
		sb_addstr(out, json_is_true(v) ? "True" : json_is_false(v) ? "False" : "None");
	}
}

/* A scalar as Python's str() prints it ("" for null). */
static void py_str(struct strbuf *out, const json_t *v)
{
	if (json_is_string(v))
		sb_addstr(out, json_string_value(v));
	else if (json_is_null(v))
		return;
	else
		py_repr(out, v);
}

/* A cell of value, table and csv: lists joined by ';', dicts as k=v;... */
static void cell(struct strbuf *out, const json_t *v)
{
	if (!v || json_is_null(v))
		return;
	if (json_is_array(v)) {
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e) {
			sb_addstr(out, i ? ";" : "");
			py_str(out, e);
		}
	} else if (json_is_object(v)) {
		size_t n;
		const char **keys = sorted_keys(v, &n);
		for (size_t i = 0; i < n; i++) {
			sb_addf(out, "%s%s=", i ? ";" : "", keys[i]);
			py_str(out, json_object_get(v, keys[i]));
		}
		free(keys);
	} else {
		py_str(out, v);
	}
}

static char *column_cell(const struct column *c, const json_t *resource)
{
	json_t *v = get_at(resource, c->key.segs, c->key.n);
	for (size_t i = 0; i < c->ntr; i++) {
		json_t *t = apply_transform(&c->tr[i], v);
		json_decref(v);
		v = t;
	}
	struct strbuf sb = STRBUF_INIT;
	cell(&sb, v);
	json_decref(v);
	return sb_detach(&sb);
}

/* gcloud's heading of a column: its label, else the key's last name in SNAKE_CASE. */
static char *column_label(const struct column *c)
{
	if (c->label)
		return xstrdup(c->label);
	const char *name = "";
	for (size_t i = 0; i < c->key.n; i++)
		if (c->key.segs[i].name)
			name = c->key.segs[i].name;
	struct strbuf sb = STRBUF_INIT;
	for (const char *s = name; *s; s++) {
		if (isupper((unsigned char)*s) && s > name && (islower((unsigned char)s[-1]) ||
							 isdigit((unsigned char)s[-1])))
			sb_addch(&sb, '_');
		sb_addch(&sb, (char)toupper((unsigned char)*s));
	}
	return sb_detach(&sb);
}

static void csv_cell(struct strbuf *out, const char *s, const char *sep)
{
	if (!strpbrk(s, "\"\n\r") && !strstr(s, sep)) {
		sb_addstr(out, s);
		return;
	}
	sb_addch(out, '"');
	for (; *s; s++) {
		if (*s == '"')
			sb_addch(out, '"');
		sb_addch(out, *s);
	}
	sb_addch(out, '"');
}

static void pad(struct strbuf *out, const char *s, size_t width)
{
	sb_addstr(out, s);
	for (size_t n = utf8_len(s); n < width; n++)
		sb_addch(out, ' ');
}

static void repeat(struct strbuf *out, const char *s, size_t n)
{
	while (n--)
		sb_addstr(out, s);
}

/* Python's str.center(width). */
static void center(struct strbuf *out, const char *s, size_t width)
{
	size_t len = utf8_len(s);
	size_t marg = width > len ? width - len : 0;
	size_t left = marg / 2 + (marg & width & 1);
	repeat(out, " ", left);
	sb_addstr(out, s);
	repeat(out, " ", marg - left);
}

static void box_rule(struct strbuf *out, const size_t *w, size_t n, const char *l, const char *m, const char *r)
{
	sb_addstr(out, l);
	for (size_t i = 0; i < n; i++) {
		repeat(out, "─", w[i] + 2);
		sb_addstr(out, i + 1 < n ? m : r);
	}
	sb_addch(out, '\n');
}

static void print_table(struct strbuf *out, const struct fmt *f, char ***rows, size_t nrows, char **labels)
{
	size_t *w = xcalloc(f->ncols + 1, sizeof *w);
	int heading = !f->no_heading;
	for (size_t c = 0; c < f->ncols; c++) {
		w[c] = heading ? utf8_len(labels[c]) : 0;
		for (size_t r = 0; r < nrows; r++)
			if (utf8_len(rows[r][c]) > w[c])
				w[c] = utf8_len(rows[r][c]);
	}
	if (f->box) {
		box_rule(out, w, f->ncols, "┌", "┬", "┐");
		if (heading) {
			for (size_t c = 0; c < f->ncols; c++) {
				sb_addstr(out, "│ ");
				center(out, labels[c], w[c]);
				sb_addch(out, ' ');
			}
			sb_addstr(out, "│\n");
			box_rule(out, w, f->ncols, "├", "┼", "┤");
		}
		for (size_t r = 0; r < nrows; r++) {
			for (size_t c = 0; c < f->ncols; c++) {
				sb_addstr(out, "│ ");
				pad(out, rows[r][c], w[c]);
				sb_addch(out, ' ');
			}
			sb_addstr(out, "│\n");
		}
		box_rule(out, w, f->ncols, "└", "┴", "┘");
		free(w);
		return;
	}
	for (size_t r = heading ? 0 : 1; r <= nrows; r++) {
		char **cells = r ? rows[r - 1] : labels;
		size_t start = out->len;
		for (size_t c = 0; c < f->ncols; c++) {
			if (c)
				sb_addstr(out, "  ");
			pad(out, cells[c], c + 1 < f->ncols ? w[c] : 0);
		}
		while (out->len > start && out->buf[out->len - 1] == ' ')
			sb_setlen(out, out->len - 1);
		sb_addch(out, '\n');
	}
	free(w);
}

static void print_projection(struct strbuf *out, const struct fmt *f, const json_t *items, size_t n,
			     const json_t *one)
{
	char ***rows = xcalloc(n + 1, sizeof *rows);
	char **labels = xcalloc(f->ncols + 1, sizeof *labels);
	for (size_t c = 0; c < f->ncols; c++)
		labels[c] = column_label(&f->cols[c]);
	for (size_t r = 0; r < n; r++) {
		const json_t *res = one ? one : json_array_get(items, r);
		rows[r] = xcalloc(f->ncols + 1, sizeof **rows);
		for (size_t c = 0; c < f->ncols; c++)
			rows[r][c] = column_cell(&f->cols[c], res);
	}
	if (f->kind == FK_TABLE && n) {
		print_table(out, f, rows, n, labels);
	} else if (f->kind == FK_CSV && n) {
		const char *sep = f->separator ? f->separator : ",";
		for (size_t r = f->no_heading ? 1 : 0; r <= n; r++) {
			for (size_t c = 0; c < f->ncols; c++) {
				if (c)
					sb_addstr(out, sep);
				if (r) {
					csv_cell(out, rows[r - 1][c], sep);
				} else {
					char *l = xstrdup(labels[c]);
					for (char *p = l; *p; p++)
						*p = (char)tolower((unsigned char)*p);
					csv_cell(out, l, sep);
					free(l);
				}
			}
			sb_addch(out, '\n');
		}
	} else if (f->kind == FK_VALUE) {
		const char *sep = f->separator ? f->separator : "\t";
		for (size_t r = 0; r < n; r++) {
			for (size_t c = 0; c < f->ncols; c++) {
				if (c)
					sb_addstr(out, sep);
				sb_addstr(out, rows[r][c]);
			}
			sb_addch(out, '\n');
		}
	}
	for (size_t r = 0; r < n; r++) {
		for (size_t c = 0; c < f->ncols; c++)
			free(rows[r][c]);
		free(rows[r]);
	}
	for (size_t c = 0; c < f->ncols; c++)
		free(labels[c]);
	free(labels);
	free(rows);
}

void fmt_print(struct strbuf *out, const struct fmt *f, const json_t *items, int list)
{
	size_t i;
	json_t *e;
	switch (f->kind) {
	case FK_NONE:
		return;
	case FK_JSON:
		fmt_json(out, items);
		return;
	case FK_DEFAULT:
	case FK_YAML:
		if (!list) {
			cli_yaml(out, items);
			return;
		}
		json_array_foreach(items, i, e) {
			sb_addstr(out, "---\n");
			cli_yaml(out, e);
		}
		return;
	case FK_VALUE:
	case FK_TABLE:
	case FK_CSV:
		print_projection(out, f, list ? items : NULL, list ? json_array_size(items) : 1, list ? NULL : items);
		return;
	}
}
